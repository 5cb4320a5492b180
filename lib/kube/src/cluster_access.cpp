#include "devshare/kube/cluster_access.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>
#include <map>
#include <vector>

#include "devshare/time_range.hpp"
#include "json_member.hpp"

namespace devshare::kube {

namespace {

Status ConfigError(const std::string& what) { return Status::InvalidConfig("kubeconfig: " + what); }

// Base64 (the *-data fields) through OpenSSL.
Result<std::string> Base64Decode(std::string_view text, std::string_view what) {
  std::string clean;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') clean.push_back(c);
  }
  if (clean.size() % 4 != 0) return ConfigError(fmt::format("{} is not base64", what));
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) return ConfigError(fmt::format("{} is not base64", what));
  std::size_t size = static_cast<std::size_t>(n);
  for (std::size_t i = clean.size(); i > 0 && clean[i - 1] == '='; --i)
    --size;  // EVP counts the padding
  out.resize(size);
  return out;
}

// https://host[:port][/...] or http://...
Status ParseServer(const std::string& server, ClusterAccess& access) {
  std::string_view rest = server;
  if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
    access.https = false;
    access.port = "80";
  } else {
    return ConfigError(fmt::format("server '{}' is not an http(s) URL", server));
  }
  rest = rest.substr(0, rest.find('/'));
  if (rest.starts_with('[')) {  // [ipv6]:port
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos)
      return ConfigError(fmt::format("server '{}' has a bad host", server));
    access.host = std::string(rest.substr(1, close - 1));
    if (close + 1 < rest.size() && rest[close + 1] == ':')
      access.port = std::string(rest.substr(close + 2));
  } else {
    const std::size_t colon = rest.rfind(':');
    access.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) access.port = std::string(rest.substr(colon + 1));
  }
  if (access.host.empty() || access.port.empty())
    return ConfigError(fmt::format("server '{}' has no host", server));
  return Status();
}

std::string Scalar(const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  return v && v.IsScalar() ? v.Scalar() : std::string();
}

std::string Resolved(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

std::string DirectoryOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// `data` (base64) or the file `file`, whichever is given; data wins.
Status Material(const YAML::Node& map, const char* data_key, const char* file_key,
                const ReadFileFn& read, const std::string& base_dir, std::string& out) {
  if (const std::string data = Scalar(map, data_key); !data.empty()) {
    Result<std::string> decoded = Base64Decode(data, data_key);
    if (!decoded.ok()) return decoded.status();
    out = std::move(*decoded);
    return Status();
  }
  if (const std::string file = Scalar(map, file_key); !file.empty()) {
    Result<std::string> text = read(Resolved(base_dir, file));
    if (!text.ok()) return ConfigError(fmt::format("{}: {}", file_key, text.status().message()));
    out = std::move(*text);
  }
  return Status();
}

// The named entries of every file, the first definition of a name winning,
// each with the directory its relative paths resolve against.
struct Entry {
  YAML::Node value;  // the entry's `cluster`, `context` or `user` map
  std::string base_dir;
};
using Entries = std::map<std::string, Entry, std::less<>>;

Status Collect(const YAML::Node& list, const char* field, const std::string& path, Entries& out) {
  if (!list) return Status();
  if (!list.IsSequence()) return ConfigError(fmt::format("{}: {}s is not a list", path, field));
  for (const YAML::Node& item : list) {
    const std::string name = item.IsMap() ? Scalar(item, "name") : std::string();
    if (name.empty()) return ConfigError(fmt::format("{}: a {} without a name", path, field));
    const YAML::Node value = item[field];  // a missing one is undefined: kept as null
    out.try_emplace(name, Entry{value.IsDefined() ? value : YAML::Node(), DirectoryOf(path)});
  }
  return Status();
}

Result<ExecConfig> ParseExec(const YAML::Node& exec, const std::string& base_dir,
                             const std::string& user) {
  const auto bad = [&](std::string_view what) {
    return ConfigError(fmt::format("user '{}': exec: {}", user, what));
  };
  if (!exec.IsMap()) return bad("not a mapping");
  ExecConfig e;
  e.api_version = Scalar(exec, "apiVersion");
  if (e.api_version != "client.authentication.k8s.io/v1" &&
      e.api_version != "client.authentication.k8s.io/v1beta1") {
    return bad(fmt::format("apiVersion '{}' is not client.authentication.k8s.io/v1 or /v1beta1",
                           e.api_version));
  }
  e.command = Scalar(exec, "command");
  if (e.command.empty()) return bad("no command");
  if (e.command.find('/') != std::string::npos) e.command = Resolved(base_dir, e.command);
  if (const YAML::Node args = exec["args"]) {
    if (!args.IsSequence()) return bad("args is not a list");
    for (const YAML::Node& a : args) {
      if (!a.IsScalar()) return bad("an argument is not a string");
      e.args.push_back(a.Scalar());
    }
  }
  if (const YAML::Node env = exec["env"]) {
    if (!env.IsSequence()) return bad("env is not a list");
    for (const YAML::Node& v : env) {
      if (!v.IsMap() || Scalar(v, "name").empty()) return bad("an env entry without a name");
      e.env.emplace_back(Scalar(v, "name"), Scalar(v, "value"));
    }
  }
  e.install_hint = Scalar(exec, "installHint");
  e.provide_cluster_info = Scalar(exec, "provideClusterInfo") == "true";
  if (Scalar(exec, "interactiveMode") == "Always")
    return bad("interactiveMode Always needs a terminal, and devshare asks for none");
  return e;
}

}  // namespace

Result<ClusterAccess> ParseKubeconfig(std::span<const KubeconfigFile> files, const ReadFileFn& read,
                                      const std::string& context) {
  try {
    std::string current;
    Entries clusters, contexts, users;
    for (const KubeconfigFile& file : files) {
      const YAML::Node root = YAML::Load(file.text);
      if (root.IsNull()) continue;  // an empty file, as kubectl allows
      if (!root.IsMap()) return ConfigError(fmt::format("{}: not a mapping", file.path));
      if (current.empty()) current = Scalar(root, "current-context");
      Status s = Collect(root["clusters"], "cluster", file.path, clusters);
      if (s.ok()) s = Collect(root["contexts"], "context", file.path, contexts);
      if (s.ok()) s = Collect(root["users"], "user", file.path, users);
      if (!s.ok()) return s;
    }
    const std::string name = context.empty() ? current : context;
    if (name.empty()) return ConfigError("no current-context");
    auto ctx = contexts.find(name);
    if (ctx == contexts.end()) return ConfigError(fmt::format("no context named '{}'", name));
    if (!ctx->second.value.IsMap())
      return ConfigError(fmt::format("context '{}' is not a mapping of cluster and user", name));
    const std::string cluster_name = Scalar(ctx->second.value, "cluster");
    const std::string user_name = Scalar(ctx->second.value, "user");
    auto cluster = clusters.find(cluster_name);
    if (cluster == clusters.end() || !cluster->second.value.IsMap()) {
      return ConfigError(
          fmt::format("context '{}' names the unknown cluster '{}'", name, cluster_name));
    }
    const YAML::Node c = cluster->second.value;
    ClusterAccess access;
    access.server = Scalar(c, "server");
    Status s = ParseServer(access.server, access);
    if (!s.ok()) return s;
    access.insecure = Scalar(c, "insecure-skip-tls-verify") == "true";
    access.tls_server_name = Scalar(c, "tls-server-name");
    if (!(s = Material(c, "certificate-authority-data", "certificate-authority", read,
                       cluster->second.base_dir, access.ca_pem))
             .ok()) {
      return s;
    }
    if (!user_name.empty()) {
      auto user = users.find(user_name);
      if (user == users.end())
        return ConfigError(
            fmt::format("context '{}' names the unknown user '{}'", name, user_name));
      const YAML::Node u = user->second.value;
      const std::string& dir = user->second.base_dir;
      if (u && u.IsMap()) {
        if (!(s = Material(u, "client-certificate-data", "client-certificate", read, dir,
                           access.cert_pem))
                 .ok() ||
            !(s = Material(u, "client-key-data", "client-key", read, dir, access.key_pem)).ok()) {
          return s;
        }
        access.token = Scalar(u, "token");
        if (access.token.empty() && !Scalar(u, "tokenFile").empty()) {
          Result<std::string> token = read(Resolved(dir, Scalar(u, "tokenFile")));
          if (!token.ok())
            return ConfigError(fmt::format("tokenFile: {}", token.status().message()));
          access.token = *token;
        }
        if (const YAML::Node exec = u["exec"]) {
          Result<ExecConfig> parsed = ParseExec(exec, dir, user_name);
          if (!parsed.ok()) return parsed.status();
          access.exec = std::move(*parsed);
        }
      }
    }
    if (access.cert_pem.empty() != access.key_pem.empty()) {
      return ConfigError("a client certificate needs its key, and a key its certificate");
    }
    while (!access.token.empty() && (access.token.back() == '\n' || access.token.back() == '\r'))
      access.token.pop_back();
    return access;
  } catch (const YAML::Exception& e) {
    return ConfigError(e.what());
  }
}

Result<ClusterAccess> FindClusterAccess(const std::string& kubeconfig, const std::string& context,
                                        const GetenvFn& getenv, const ReadFileFn& read) {
  std::vector<KubeconfigFile> files;
  if (!kubeconfig.empty()) {
    Result<std::string> text = read(kubeconfig);
    if (!text.ok()) return text.status();
    files.push_back(KubeconfigFile{kubeconfig, std::move(*text)});
    return ParseKubeconfig(files, read, context);
  }
  if (const char* list = getenv("KUBECONFIG"); list != nullptr && *list != '\0') {
    std::string_view rest = list;
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string path(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (path.empty()) continue;
      Result<std::string> text = read(path);
      if (text.ok()) files.push_back(KubeconfigFile{path, std::move(*text)});
    }
    if (files.empty())
      return Status::NotFound(fmt::format("no file $KUBECONFIG ({}) names can be read", list));
    return ParseKubeconfig(files, read, context);
  }
  Result<ClusterAccess> in_cluster = InClusterAccess(getenv, read);
  if (in_cluster.ok() || in_cluster.status().code() != StatusCode::kNotFound) return in_cluster;
  const char* home = getenv("HOME");
  const std::string path = fmt::format("{}/.kube/config", home != nullptr ? home : "");
  Result<std::string> text = read(path);
  if (!text.ok()) {
    return Status::NotFound(fmt::format(
        "no cluster configuration: no --kubeconfig, $KUBECONFIG unset, not in a pod, and {}",
        text.status().message()));
  }
  files.push_back(KubeconfigFile{path, std::move(*text)});
  return ParseKubeconfig(files, read, context);
}

Result<ExecCredential> ParseExecCredential(std::string_view json, std::string_view api_version) {
  const auto bad = [](std::string_view what) {
    return Status::InvalidConfig(fmt::format("exec credential: {}", what));
  };
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(json, ec);
  if (ec) return bad(fmt::format("not JSON: {}", ec.message()));
  const boost::json::object* root = v.if_object();
  if (root == nullptr) return bad("not a JSON object");
  if (StringOrEmpty(*root, "kind") != "ExecCredential") return bad("kind is not ExecCredential");
  if (StringOrEmpty(*root, "apiVersion") != api_version) {
    return bad(fmt::format("apiVersion '{}', but the kubeconfig asks for '{}'",
                           StringOrEmpty(*root, "apiVersion"), api_version));
  }
  const boost::json::object* status = ObjectMember(*root, "status");
  if (status == nullptr) return bad("no status");
  const boost::json::object& st = *status;
  ExecCredential c;
  c.token = StringOrEmpty(st, "token");
  c.cert_pem = StringOrEmpty(st, "clientCertificateData");
  c.key_pem = StringOrEmpty(st, "clientKeyData");
  if (c.cert_pem.empty() != c.key_pem.empty())
    return bad("status.clientCertificateData and clientKeyData go together");
  if (c.token.empty() && c.cert_pem.empty())
    return bad("status has neither a token nor a client certificate");
  if (const std::string expiry = StringOrEmpty(st, "expirationTimestamp"); !expiry.empty()) {
    Result<std::int64_t> expires = DecodeRfc3339(expiry);
    if (!expires.ok())
      return bad(fmt::format("status.expirationTimestamp: {}", expires.status().message()));
    c.expires = *expires;
  }
  return c;
}

Result<ClusterAccess> InClusterAccess(const GetenvFn& getenv, const ReadFileFn& read) {
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0') {
    return Status::NotFound(
        "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  constexpr const char* kDir = "/var/run/secrets/kubernetes.io/serviceaccount/";
  Result<std::string> token = read(std::string(kDir) + "token");
  if (!token.ok())
    return Status::NotFound(fmt::format("in-cluster token: {}", token.status().message()));
  Result<std::string> ca = read(std::string(kDir) + "ca.crt");
  if (!ca.ok()) return Status::NotFound(fmt::format("in-cluster CA: {}", ca.status().message()));
  ClusterAccess access;
  access.host = host;
  access.port = port;
  access.server = std::string_view(host).find(':') == std::string_view::npos
                      ? fmt::format("https://{}:{}", host, port)
                      : fmt::format("https://[{}]:{}", host, port);
  access.token = std::move(*token);
  while (!access.token.empty() && (access.token.back() == '\n' || access.token.back() == '\r'))
    access.token.pop_back();
  access.ca_pem = std::move(*ca);
  return access;
}

}  // namespace devshare::kube
