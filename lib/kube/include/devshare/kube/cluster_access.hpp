// devshare/kube/cluster_access.hpp — where the Kubernetes API server is and
// how to authenticate: from a kubeconfig, or from inside a pod.
//
// Thread-safety: value types and pure functions (file reads go through the
// caller's ReadFileFn).
#ifndef DEVSHARE_KUBE_CLUSTER_ACCESS_HPP_
#define DEVSHARE_KUBE_CLUSTER_ACCESS_HPP_

#include <functional>
#include <string>
#include <string_view>

#include "devshare/status.hpp"

namespace devshare::kube {

// Where the API server is and how to authenticate.
struct ClusterAccess {
  std::string host;
  std::string port = "443";
  bool https = true;
  std::string ca_pem;    // empty: the system's trust store
  std::string cert_pem;  // client certificate (with key_pem)
  std::string key_pem;
  std::string token;      // bearer token
  bool insecure = false;  // insecure-skip-tls-verify
  std::string tls_server_name;
};

// Reads a file the configuration names.
using ReadFileFn = std::function<Result<std::string>(const std::string& path)>;

// A kubeconfig (YAML): the current context (or `context` when given), its
// cluster (server, certificate-authority[-data], insecure-skip-tls-verify,
// tls-server-name) and user (client-certificate[-data], client-key[-data],
// token, tokenFile). Relative file paths are resolved against `base_dir`.
// Errors: kInvalidConfig naming what is missing or wrong.
Result<ClusterAccess> ParseKubeconfig(std::string_view yaml, const ReadFileFn& read,
                                      const std::string& base_dir, const std::string& context = {});

// The in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT from `getenv`,
// the service account's token and CA. Errors: kNotFound when not in a pod.
Result<ClusterAccess> InClusterAccess(const std::function<const char*(const char*)>& getenv,
                                      const ReadFileFn& read);

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_CLUSTER_ACCESS_HPP_
