// devshare/kube/cluster_access.hpp — where the Kubernetes API server is and
// how to authenticate: from a kubeconfig, or from inside a pod.
//
// Thread-safety: value types and pure functions (file reads and the
// environment go through the caller's functions), but RunExecPlugin, which
// runs a command.
#ifndef DEVSHARE_KUBE_CLUSTER_ACCESS_HPP_
#define DEVSHARE_KUBE_CLUSTER_ACCESS_HPP_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devshare/status.hpp"

namespace devshare::kube {

// A kubeconfig user's `exec`: a command that prints an ExecCredential
// (client-go's credential plugins, as EKS, GKE and AKS kubeconfigs use).
struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;      // a relative path with a '/' is resolved like the file paths
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // added to the environment
  std::string install_hint;                              // said when the command fails
  bool provide_cluster_info = false;
};

// Where the API server is and how to authenticate.
struct ClusterAccess {
  std::string server;  // the kubeconfig's URL (ExecConfig::provide_cluster_info)
  std::string host;
  std::string port = "443";
  bool https = true;
  std::string ca_pem;    // empty: the system's trust store
  std::string cert_pem;  // client certificate (with key_pem)
  std::string key_pem;
  std::string token;      // bearer token
  bool insecure = false;  // insecure-skip-tls-verify
  std::string tls_server_name;
  std::optional<ExecConfig> exec;  // credentials come from this command (RunExecPlugin)
};

// Reads a file the configuration names.
using ReadFileFn = std::function<Result<std::string>(const std::string& path)>;
// Reads an environment variable (nullptr: unset).
using GetenvFn = std::function<const char*(const char*)>;

// One kubeconfig file: where it is (its relative paths resolve against its
// directory) and its YAML.
struct KubeconfigFile {
  std::string path;
  std::string text;
};

// Kubeconfig files merged as kubectl merges $KUBECONFIG's: the first file
// to set current-context sets it, the first to name a cluster, context or
// user defines it. The current context (or `context` when given), its
// cluster (server, certificate-authority[-data], insecure-skip-tls-verify,
// tls-server-name) and user (client-certificate[-data], client-key[-data],
// token, tokenFile, exec). A relative path resolves against the directory
// of the file that defines the entry. Errors: kInvalidConfig naming what is
// missing or wrong, and in which file.
Result<ClusterAccess> ParseKubeconfig(std::span<const KubeconfigFile> files, const ReadFileFn& read,
                                      const std::string& context = {});

// Where to connect, as kubectl finds it: the file `kubeconfig` when given;
// else the files $KUBECONFIG lists (':'-separated; missing files skipped,
// as kubectl does); else in-cluster when in a pod; else ~/.kube/config.
// `context` overrides the current context. Errors: those of
// ParseKubeconfig; kNotFound when no configuration is found, naming where
// it looked.
Result<ClusterAccess> FindClusterAccess(const std::string& kubeconfig, const std::string& context,
                                        const GetenvFn& getenv, const ReadFileFn& read);

// What a credential plugin printed.
struct ExecCredential {
  std::string token;
  std::string cert_pem, key_pem;        // clientCertificateData, clientKeyData
  std::optional<std::int64_t> expires;  // Unix seconds; nullopt: until the server refuses it
};

// An ExecCredential (JSON) of `api_version`: status.token, or
// status.clientCertificateData and clientKeyData, and
// status.expirationTimestamp (RFC 3339). Errors: kInvalidConfig naming the
// field.
Result<ExecCredential> ParseExecCredential(std::string_view json, std::string_view api_version);

// Runs `access.exec` and reads its ExecCredential: the command with its
// args, this process's environment plus its env and KUBERNETES_EXEC_INFO
// (an ExecCredential whose spec says non-interactive, with the cluster when
// provide_cluster_info), its stdin closed and its stderr passed through.
// Blocks until it exits. Errors: kUnavailable naming the command, its exit
// status and the install hint; ParseExecCredential's.
Result<ExecCredential> RunExecPlugin(const ClusterAccess& access);

// The in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT from `getenv`,
// the service account's token and CA. Errors: kNotFound when not in a pod.
Result<ClusterAccess> InClusterAccess(const GetenvFn& getenv, const ReadFileFn& read);

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_CLUSTER_ACCESS_HPP_
