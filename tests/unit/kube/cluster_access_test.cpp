// Where to connect and how to authenticate: kubeconfig files, kubectl's
// search, ExecCredentials and in-cluster configuration
// (devshare/kube/cluster_access.hpp).
#include "devshare/kube/cluster_access.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

using namespace devshare;
using namespace devshare::kube;

TEST_CASE("kube: kubeconfig — current context, data fields, files and tokens") {
  constexpr std::string_view kConfig = R"(
apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: local, user: admin}
- name: other
  context: {cluster: remote, user: robot}
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Q0EtUEVN}
- name: remote
  cluster: {server: "https://[::1]", insecure-skip-tls-verify: true, certificate-authority: ca.crt}
users:
- name: admin
  user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}
- name: robot
  user: {tokenFile: token}
)";
  std::vector<std::string> read;
  ReadFileFn files = [&](const std::string& path) -> Result<std::string> {
    read.push_back(path);
    if (path == "/etc/kube/token") return std::string("secret\n");
    if (path == "/etc/kube/ca.crt") return std::string("CA-FILE");
    return Status::NotFound("cannot read " + path);
  };
  const KubeconfigFile one[] = {{"/etc/kube/config", std::string(kConfig)}};
  Result<ClusterAccess> dev = ParseKubeconfig(one, files);
  REQUIRE(dev.ok());
  CHECK(dev->host == "127.0.0.1");
  CHECK(dev->port == "6443");
  CHECK(dev->ca_pem == "CA-PEM");
  CHECK(dev->cert_pem == "CERT");
  CHECK(dev->key_pem == "KEY");
  Result<ClusterAccess> other = ParseKubeconfig(one, files, "other");
  REQUIRE(other.ok());
  CHECK(other->host == "::1");
  CHECK(other->port == "443");
  CHECK(other->insecure);
  CHECK(other->token == "secret");
  CHECK(other->ca_pem == "CA-FILE");
  CHECK(ParseKubeconfig(one, files, "missing").status().message() ==
        "kubeconfig: no context named 'missing'");
  const KubeconfigFile dangling[] = {
      {"k", "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"}};
  CHECK(ParseKubeconfig(dangling, files).status().message() ==
        "kubeconfig: context 'x' names the unknown cluster 'c'");
  const KubeconfigFile no_body[] = {{"k", "current-context: x\ncontexts: [{name: x}]\n"}};
  CHECK(ParseKubeconfig(no_body, files).status().message() ==
        "kubeconfig: context 'x' is not a mapping of cluster and user");
  const KubeconfigFile broken[] = {{"k", "clusters: ["}};
  CHECK(ParseKubeconfig(broken, files).status().code() == StatusCode::kInvalidConfig);
}

TEST_CASE("kube: kubeconfig files merge as kubectl merges them; exec users") {
  // The first file to set current-context, or to name an entry, wins; paths
  // resolve against the file that defines the entry.
  const KubeconfigFile files[] = {{"/home/u/.kube/a", R"(
current-context: team
contexts:
- {name: team, context: {cluster: shared, user: cloud}}
users:
- name: cloud
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--cluster, shared]
      env: [{name: REGION, value: eu-1}]
      provideClusterInfo: true
      installHint: install get-token
)"},
                                  {"/etc/kube/b", R"(
current-context: ignored
contexts:
- {name: team, context: {cluster: elsewhere, user: nobody}}
- {name: ops, context: {cluster: shared, user: admin}}
clusters:
- name: shared
  cluster: {server: "https://10.0.0.1:6443", certificate-authority: ca.crt}
users:
- {name: cloud, user: {token: not-this-one}}
- {name: admin, user: {token: admin-token}}
)"}};
  ReadFileFn read = [](const std::string& path) -> Result<std::string> {
    if (path == "/etc/kube/ca.crt") return std::string("CA");
    return Status::NotFound("cannot read " + path);
  };
  Result<ClusterAccess> team = ParseKubeconfig(files, read);
  REQUIRE(team.ok());
  CHECK(team->server == "https://10.0.0.1:6443");
  CHECK(team->ca_pem == "CA");  // b's relative path, resolved against /etc/kube
  CHECK(team->token.empty());
  REQUIRE(team->exec.has_value());
  CHECK(team->exec->command == "/home/u/.kube/./bin/get-token");  // a's directory
  CHECK(team->exec->args == std::vector<std::string>{"--cluster", "shared"});
  CHECK(team->exec->env == std::vector<std::pair<std::string, std::string>>{{"REGION", "eu-1"}});
  CHECK(team->exec->provide_cluster_info);
  CHECK(team->exec->install_hint == "install get-token");
  Result<ClusterAccess> ops = ParseKubeconfig(files, read, "ops");
  REQUIRE(ops.ok());
  CHECK(ops->token == "admin-token");
  CHECK_FALSE(ops->exec.has_value());

  const KubeconfigFile bad_exec[] = {{"k", R"(
current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://h"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}}]
)"}};
  CHECK(ParseKubeconfig(bad_exec, read).status().message() ==
        "kubeconfig: user 'u': exec: apiVersion 'client.authentication.k8s.io/v1alpha1' is not "
        "client.authentication.k8s.io/v1 or /v1beta1");
}

TEST_CASE("kube: FindClusterAccess looks where kubectl looks") {
  std::map<std::string, std::string> env;
  GetenvFn getenv = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  const std::string config =
      "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
      "clusters: [{name: k, cluster: {server: 'https://SERVER'}}]\n";
  std::map<std::string, std::string> disk{{"/a", ""},
                                          {"/b", "current-context: c\n"},
                                          {"/explicit", config},
                                          {"/home/me/.kube/config", config}};
  disk["/c"] = config;
  ReadFileFn read = [&](const std::string& path) -> Result<std::string> {
    auto it = disk.find(path);
    if (it == disk.end()) return Status::NotFound("cannot read " + path);
    return it->second;
  };
  auto host = [](const Result<ClusterAccess>& a) {
    return a.ok() ? a->host : std::string(a.status().message());
  };
  env["HOME"] = "/home/me";
  CHECK(host(FindClusterAccess("/explicit", "", getenv, read)) == "SERVER");
  CHECK(host(FindClusterAccess("/missing", "", getenv, read)) == "cannot read /missing");
  // $KUBECONFIG: missing files skipped, an empty one allowed, the rest merged.
  env["KUBECONFIG"] = "/missing:/a::/b:/c";
  CHECK(host(FindClusterAccess("", "", getenv, read)) == "SERVER");
  env["KUBECONFIG"] = "/missing";
  CHECK(FindClusterAccess("", "", getenv, read).status().code() == StatusCode::kNotFound);
  env.erase("KUBECONFIG");
  CHECK(host(FindClusterAccess("", "", getenv, read)) == "SERVER");  // ~/.kube/config
  env["HOME"] = "/nowhere";
  Result<ClusterAccess> none = FindClusterAccess("", "", getenv, read);
  CHECK(none.status().code() == StatusCode::kNotFound);
  CHECK(std::string(none.status().message()).find("not in a pod") != std::string::npos);
}

TEST_CASE("kube: an ExecCredential gives a token or a certificate, and its expiry") {
  constexpr std::string_view kV1 = "client.authentication.k8s.io/v1";
  Result<ExecCredential> token = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
      R"("status":{"token":"t0k3n","expirationTimestamp":"2026-11-25T10:00:00Z"}})",
      kV1);
  REQUIRE(token.ok());
  CHECK(token->token == "t0k3n");
  CHECK(token->expires == 1795600800);
  Result<ExecCredential> offset = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
      R"("status":{"token":"t","expirationTimestamp":"2026-11-25T11:00:00.5+01:00"}})",
      kV1);
  REQUIRE(offset.ok());
  CHECK(offset->expires == 1795600800);
  Result<ExecCredential> cert = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",)"
      R"("status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}})",
      "client.authentication.k8s.io/v1beta1");
  REQUIRE(cert.ok());
  CHECK((cert->cert_pem == "CERT" && cert->key_pem == "KEY" && !cert->expires));
  auto error = [&](std::string_view json) {
    return std::string(ParseExecCredential(json, kV1).status().message());
  };
  CHECK(error("nope").starts_with("exec credential: not JSON"));
  CHECK(error(R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential"})") ==
        "exec credential: apiVersion 'client.authentication.k8s.io/v1beta1', but the kubeconfig "
        "asks for 'client.authentication.k8s.io/v1'");
  CHECK(
      error(
          R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}})") ==
      "exec credential: status has neither a token nor a client certificate");
  CHECK(error(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",)"
              R"("status":{"token":"t","expirationTimestamp":"tomorrow"}})") ==
        "exec credential: status.expirationTimestamp: time \"tomorrow\" is not RFC 3339 "
        "(2006-01-02T15:04:05Z07:00)");
}

TEST_CASE("kube: in-cluster configuration comes from the environment and the service account") {
  auto env = [](const char* name) -> const char* {
    if (std::string_view(name) == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
    if (std::string_view(name) == "KUBERNETES_SERVICE_PORT") return "443";
    return nullptr;
  };
  ReadFileFn files = [](const std::string& path) -> Result<std::string> {
    return path.ends_with("token") ? std::string("tok\n") : std::string("CA");
  };
  Result<ClusterAccess> a = InClusterAccess(env, files);
  REQUIRE(a.ok());
  CHECK(a->host == "10.0.0.1");
  CHECK(a->token == "tok");
  CHECK(
      InClusterAccess([](const char*) -> const char* { return nullptr; }, files).status().code() ==
      StatusCode::kNotFound);
}
