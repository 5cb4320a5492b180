#include "devshare/kube/cluster_access.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <vector>

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

const YAML::Node* Named(const YAML::Node& list, const std::string& name,
                        std::vector<YAML::Node>& keep) {
  if (!list || !list.IsSequence()) return nullptr;
  for (const YAML::Node& item : list) {
    if (item.IsMap() && item["name"] && item["name"].IsScalar() && item["name"].Scalar() == name) {
      keep.push_back(item);
      return &keep.back();
    }
  }
  return nullptr;
}

std::string Scalar(const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  return v && v.IsScalar() ? v.Scalar() : std::string();
}

std::string Resolved(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
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

}  // namespace

Result<ClusterAccess> ParseKubeconfig(std::string_view yaml, const ReadFileFn& read,
                                      const std::string& base_dir, const std::string& context) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) return ConfigError("not a mapping");
    const std::string name = context.empty() ? Scalar(root, "current-context") : context;
    if (name.empty()) return ConfigError("no current-context");
    std::vector<YAML::Node> keep;
    keep.reserve(3);
    const YAML::Node* ctx = Named(root["contexts"], name, keep);
    if (ctx == nullptr || !(*ctx)["context"].IsMap())
      return ConfigError(fmt::format("no context named '{}'", name));
    const std::string cluster_name = Scalar((*ctx)["context"], "cluster");
    const std::string user_name = Scalar((*ctx)["context"], "user");
    const YAML::Node* cluster = Named(root["clusters"], cluster_name, keep);
    if (cluster == nullptr || !(*cluster)["cluster"].IsMap()) {
      return ConfigError(
          fmt::format("context '{}' names the unknown cluster '{}'", name, cluster_name));
    }
    const YAML::Node c = (*cluster)["cluster"];
    ClusterAccess access;
    Status s = ParseServer(Scalar(c, "server"), access);
    if (!s.ok()) return s;
    access.insecure = Scalar(c, "insecure-skip-tls-verify") == "true";
    access.tls_server_name = Scalar(c, "tls-server-name");
    if (!(s = Material(c, "certificate-authority-data", "certificate-authority", read, base_dir,
                       access.ca_pem))
             .ok()) {
      return s;
    }
    if (!user_name.empty()) {
      const YAML::Node* user = Named(root["users"], user_name, keep);
      if (user == nullptr)
        return ConfigError(
            fmt::format("context '{}' names the unknown user '{}'", name, user_name));
      const YAML::Node u = (*user)["user"];
      if (u && u.IsMap()) {
        if (!(s = Material(u, "client-certificate-data", "client-certificate", read, base_dir,
                           access.cert_pem))
                 .ok() ||
            !(s = Material(u, "client-key-data", "client-key", read, base_dir, access.key_pem))
                 .ok()) {
          return s;
        }
        access.token = Scalar(u, "token");
        if (access.token.empty() && !Scalar(u, "tokenFile").empty()) {
          Result<std::string> token = read(Resolved(base_dir, Scalar(u, "tokenFile")));
          if (!token.ok())
            return ConfigError(fmt::format("tokenFile: {}", token.status().message()));
          access.token = *token;
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

Result<ClusterAccess> InClusterAccess(const std::function<const char*(const char*)>& getenv,
                                      const ReadFileFn& read) {
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
  access.token = std::move(*token);
  while (!access.token.empty() && (access.token.back() == '\n' || access.token.back() == '\r'))
    access.token.pop_back();
  access.ca_pem = std::move(*ca);
  return access;
}

}  // namespace devshare::kube
