#include "devshare/kube/api_client.hpp"

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <yaml-cpp/yaml.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>

#include <deque>
#include <optional>
#include <random>
#include <variant>

namespace devshare::kube {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
namespace bj = boost::json;
using tcp = asio::ip::tcp;

// ---------------------------------------------------------------------------
// Configuration

namespace {

Status ConfigError(std::string what) { return Status::InvalidConfig("kubeconfig: " + what); }

// Base64 (the *-data fields) through OpenSSL.
Result<std::string> Base64Decode(std::string_view text, std::string_view what) {
  std::string clean;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') clean.push_back(c);
  }
  if (clean.size() % 4 != 0) return ConfigError(fmt::format("{} is not base64", what));
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0) return ConfigError(fmt::format("{} is not base64", what));
  std::size_t size = static_cast<std::size_t>(n);
  for (std::size_t i = clean.size(); i > 0 && clean[i - 1] == '='; --i) --size;  // EVP counts the padding
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
    if (close == std::string_view::npos) return ConfigError(fmt::format("server '{}' has a bad host", server));
    access.host = std::string(rest.substr(1, close - 1));
    if (close + 1 < rest.size() && rest[close + 1] == ':') access.port = std::string(rest.substr(close + 2));
  } else {
    const std::size_t colon = rest.rfind(':');
    access.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) access.port = std::string(rest.substr(colon + 1));
  }
  if (access.host.empty() || access.port.empty()) return ConfigError(fmt::format("server '{}' has no host", server));
  return Status();
}

const YAML::Node* Named(const YAML::Node& list, const std::string& name, std::vector<YAML::Node>& keep) {
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
Status Material(const YAML::Node& map, const char* data_key, const char* file_key, const ReadFileFn& read,
                const std::string& base_dir, std::string& out) {
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

Result<ClusterAccess> ParseKubeconfig(std::string_view yaml, const ReadFileFn& read, const std::string& base_dir,
                                      const std::string& context) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) return ConfigError("not a mapping");
    const std::string name = context.empty() ? Scalar(root, "current-context") : context;
    if (name.empty()) return ConfigError("no current-context");
    std::vector<YAML::Node> keep;
    keep.reserve(3);
    const YAML::Node* ctx = Named(root["contexts"], name, keep);
    if (ctx == nullptr || !(*ctx)["context"].IsMap()) return ConfigError(fmt::format("no context named '{}'", name));
    const std::string cluster_name = Scalar((*ctx)["context"], "cluster");
    const std::string user_name = Scalar((*ctx)["context"], "user");
    const YAML::Node* cluster = Named(root["clusters"], cluster_name, keep);
    if (cluster == nullptr || !(*cluster)["cluster"].IsMap()) {
      return ConfigError(fmt::format("context '{}' names the unknown cluster '{}'", name, cluster_name));
    }
    const YAML::Node c = (*cluster)["cluster"];
    ClusterAccess access;
    Status s = ParseServer(Scalar(c, "server"), access);
    if (!s.ok()) return s;
    access.insecure = Scalar(c, "insecure-skip-tls-verify") == "true";
    access.tls_server_name = Scalar(c, "tls-server-name");
    if (!(s = Material(c, "certificate-authority-data", "certificate-authority", read, base_dir, access.ca_pem)).ok()) {
      return s;
    }
    if (!user_name.empty()) {
      const YAML::Node* user = Named(root["users"], user_name, keep);
      if (user == nullptr) return ConfigError(fmt::format("context '{}' names the unknown user '{}'", name, user_name));
      const YAML::Node u = (*user)["user"];
      if (u && u.IsMap()) {
        if (!(s = Material(u, "client-certificate-data", "client-certificate", read, base_dir, access.cert_pem)).ok() ||
            !(s = Material(u, "client-key-data", "client-key", read, base_dir, access.key_pem)).ok()) {
          return s;
        }
        access.token = Scalar(u, "token");
        if (access.token.empty() && !Scalar(u, "tokenFile").empty()) {
          Result<std::string> token = read(Resolved(base_dir, Scalar(u, "tokenFile")));
          if (!token.ok()) return ConfigError(fmt::format("tokenFile: {}", token.status().message()));
          access.token = *token;
        }
      }
    }
    if (access.cert_pem.empty() != access.key_pem.empty()) {
      return ConfigError("a client certificate needs its key, and a key its certificate");
    }
    while (!access.token.empty() && (access.token.back() == '\n' || access.token.back() == '\r')) access.token.pop_back();
    return access;
  } catch (const YAML::Exception& e) {
    return ConfigError(e.what());
  }
}

Result<ClusterAccess> InClusterAccess(const std::function<const char*(const char*)>& getenv, const ReadFileFn& read) {
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0') {
    return Status::NotFound("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  constexpr const char* kDir = "/var/run/secrets/kubernetes.io/serviceaccount/";
  Result<std::string> token = read(std::string(kDir) + "token");
  if (!token.ok()) return Status::NotFound(fmt::format("in-cluster token: {}", token.status().message()));
  Result<std::string> ca = read(std::string(kDir) + "ca.crt");
  if (!ca.ok()) return Status::NotFound(fmt::format("in-cluster CA: {}", ca.status().message()));
  ClusterAccess access;
  access.host = host;
  access.port = port;
  access.token = std::move(*token);
  while (!access.token.empty() && (access.token.back() == '\n' || access.token.back() == '\r')) access.token.pop_back();
  access.ca_pem = std::move(*ca);
  return access;
}

// ---------------------------------------------------------------------------
// Requests

namespace {

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One request on a connection of its own: connect, (TLS), write, read.
// `on_chunk` set: the body is streamed to it (a watch) instead of kept.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  using Done = std::function<void(ApiResponse)>;
  using Chunk = std::function<bool(std::string_view)>;  // false: stop reading

  Exchange(asio::io_context& io, const ClusterAccess& access, ssl::context* tls,
           http::request<http::string_body> request, std::chrono::milliseconds timeout, Chunk on_chunk, Done done)
      : access_(access),
        resolver_(io),
        request_(std::move(request)),
        timeout_(timeout),
        on_chunk_(std::move(on_chunk)),
        done_(std::move(done)) {
    if (tls != nullptr) {
      stream_.emplace<TlsStream>(io, *tls);
    } else {
      stream_.emplace<beast::tcp_stream>(io);
    }
  }

  void Run() {
    resolver_.async_resolve(access_.host, access_.port,
                            [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
                              if (ec) return self->Fail("resolve", ec);
                              self->Lowest().expires_after(self->timeout_);
                              self->Lowest().async_connect(r, [self](beast::error_code ec2, const tcp::endpoint&) {
                                if (ec2) return self->Fail("connect", ec2);
                                self->Handshake();
                              });
                            });
  }

  void Cancel() {
    beast::error_code ignored;
    Lowest().socket().close(ignored);
  }

 private:
  beast::tcp_stream& Lowest() {
    if (auto* tls = std::get_if<TlsStream>(&stream_)) return beast::get_lowest_layer(*tls);
    return std::get<beast::tcp_stream>(stream_);
  }

  void Handshake() {
    auto* tls = std::get_if<TlsStream>(&stream_);
    if (tls == nullptr) return Write();
    const std::string& name = access_.tls_server_name.empty() ? access_.host : access_.tls_server_name;
    SSL_set_tlsext_host_name(tls->native_handle(), name.c_str());
    if (!access_.insecure) {
      // Names are checked by OpenSSL against the certificate (IP or DNS).
      X509_VERIFY_PARAM* param = SSL_get0_param(tls->native_handle());
      boost::system::error_code not_an_address;
      asio::ip::make_address(name, not_an_address);
      if (!not_an_address) {
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      } else {
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
      }
    }
    tls->async_handshake(ssl::stream_base::client, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->Fail("TLS handshake", ec);
      self->Write();
    });
  }

  template <typename F>
  void WithStream(F&& f) {
    std::visit(
        [&](auto& s) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) f(s);
        },
        stream_);
  }

  void Write() {
    Lowest().expires_after(timeout_);
    WithStream([&](auto& s) {
      http::async_write(s, request_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->Fail("write", ec);
        self->ReadHeader();
      });
    });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(on_chunk_ ? boost::optional<std::uint64_t>() : boost::optional<std::uint64_t>(1ULL << 30));
    WithStream([&](auto& s) {
      http::async_read_header(s, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->Fail("read", ec);
        const int status = static_cast<int>(self->parser_->get().result_int());
        if (self->on_chunk_ && status == 200) {
          self->chunk_body_ = [raw = self.get()](std::uint64_t, std::string_view body, beast::error_code&) {
            if (!raw->stopped_ && !raw->on_chunk_(body)) raw->stopped_ = true;
            return body.size();
          };
          self->parser_->on_chunk_body(self->chunk_body_);
        }
        self->ReadBody();
      });
    });
  }

  void ReadBody() {
    if (parser_->is_done() || stopped_) return Finish();
    WithStream([&](auto& s) {
      http::async_read_some(s, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->Fail("read", ec);
        self->ReadBody();
      });
    });
  }

  void Finish() {
    auto& response = parser_->get();
    ApiResponse r{static_cast<int>(response.result_int()), std::move(response.body()), {},
                  std::string(response[http::field::retry_after])};
    Cancel();
    Done done = std::move(done_);
    if (done) done(std::move(r));
  }

  void Fail(const char* step, beast::error_code ec) {
    Done done = std::move(done_);
    if (done) done(ApiResponse{0, {}, fmt::format("{}: {}", step, ec.message()), {}});
  }

  const ClusterAccess& access_;
  tcp::resolver resolver_;
  std::variant<std::monostate, beast::tcp_stream, TlsStream> stream_;
  http::request<http::string_body> request_;
  std::chrono::milliseconds timeout_;
  Chunk on_chunk_;
  Done done_;
  beast::flat_buffer buffer_;
  std::function<std::size_t(std::uint64_t, std::string_view, beast::error_code&)> chunk_body_;
  std::optional<http::response_parser<http::string_body>> parser_;
  bool stopped_ = false;
};

}  // namespace

struct ApiClient::Impl : std::enable_shared_from_this<ApiClient::Impl> {
  struct Pending {
    std::string verb, method, target, content_type, body;
    ApiCallback done;
    int attempt = 0;
  };
  struct WatchState {
    std::string path, selector;
    std::function<void(const WatchEvent&)> on_event;
    std::function<void()> on_synced;
    std::map<std::string, bj::value> known;  // by namespace/name: the last object seen
    std::string version;                     // resourceVersion to watch from; empty: relist
    int failures = 0;
    std::shared_ptr<Exchange> exchange;
    bj::stream_parser parser;
  };

  Impl(asio::io_context& io_context, ClusterAccess a, ApiClientOptions o, Metrics* m)
      : io(io_context), access(std::move(a)), options(o), metrics(m), bucket_timer(io), tokens(o.burst) {}

  http::request<http::string_body> MakeRequest(const std::string& method, const std::string& target,
                                               const std::string& content_type, const std::string& body) {
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, access.host);
    req.set(http::field::user_agent, "devshare");
    req.set(http::field::accept, "application/json");
    if (!access.token.empty()) req.set(http::field::authorization, "Bearer " + access.token);
    if (!body.empty()) {
      req.set(http::field::content_type, content_type);
      req.body() = body;
    }
    req.keep_alive(false);
    req.prepare_payload();
    return req;
  }

  // client-go's token bucket: a request waits until a token is there.
  void Enqueue(Pending p) {
    queue.push_back(std::move(p));
    Pump();
  }

  void Pump() {
    if (stopped || waiting || queue.empty()) return;
    const auto now = std::chrono::steady_clock::now();
    tokens = std::min<double>(options.burst,
                              tokens + std::chrono::duration<double>(now - refilled).count() * options.qps);
    refilled = now;
    if (tokens >= 1) {
      tokens -= 1;
      Pending p = std::move(queue.front());
      queue.pop_front();
      Send(std::move(p));
      return Pump();
    }
    waiting = true;
    bucket_timer.expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>((1 - tokens) / options.qps)));
    bucket_timer.async_wait([self = shared_from_this()](beast::error_code ec) {
      self->waiting = false;
      if (!ec) self->Pump();
    });
  }

  void Send(Pending p) {
    auto shared = std::make_shared<Pending>(std::move(p));
    auto self = shared_from_this();
    auto exchange = std::make_shared<Exchange>(
        io, access, tls.get(), MakeRequest(shared->method, shared->target, shared->content_type, shared->body),
        options.timeout, nullptr, [self, shared](ApiResponse r) {
          if (self->metrics != nullptr) self->metrics->CountApiRequest(shared->verb, r.status);
          const std::string& retry_after = r.retry_after;
          const bool retriable = r.status == 429 || r.status >= 500;
          if (retriable && !retry_after.empty() && shared->attempt < self->options.max_retries && !self->stopped) {
            ++shared->attempt;
            auto timer = std::make_shared<asio::steady_timer>(self->io);
            int seconds = 1;
            try {
              seconds = std::clamp(std::stoi(retry_after), 0, 60);
            } catch (...) {
            }
            timer->expires_after(std::chrono::seconds(seconds));
            timer->async_wait([self, shared, timer](beast::error_code) { self->Enqueue(std::move(*shared)); });
            return;
          }
          if (shared->done) shared->done(std::move(r));
        });
    exchange->Run();
  }

  // ---- list + watch

  void List(const std::shared_ptr<WatchState>& w, std::string continue_token,
            std::shared_ptr<std::map<std::string, bj::value>> fresh) {
    std::string target = fmt::format("{}?limit=500", w->path);
    if (!w->selector.empty()) target += "&fieldSelector=" + UrlEncode(w->selector);
    if (!continue_token.empty()) target += "&continue=" + UrlEncode(continue_token);
    auto self = shared_from_this();
    Enqueue(Pending{"list", "GET", target, "", "", [self, w, fresh](ApiResponse r) {
                      if (self->stopped) return;
                      bj::value doc;
                      boost::system::error_code ec;
                      if (r.status == 200) doc = bj::parse(r.body, ec);
                      if (r.status != 200 || ec || !doc.is_object()) return self->Backoff(w);
                      if (const bj::value* items = doc.get_object().if_contains("items"); items && items->is_array()) {
                        for (bj::value& item : doc.get_object()["items"].get_array()) {
                          (*fresh)[Key(item)] = std::move(item);
                        }
                      }
                      const std::string cont = Meta(doc, "continue");
                      if (!cont.empty()) return self->List(w, cont, fresh);
                      // The list is whole: replace the cache.
                      for (auto& [key, object] : w->known) {
                        if (fresh->count(key) == 0) w->on_event(WatchEvent{"DELETED", object});
                      }
                      for (auto& [key, object] : *fresh) {
                        w->on_event(WatchEvent{w->known.count(key) != 0 ? "MODIFIED" : "ADDED", object});
                      }
                      w->known = std::move(*fresh);
                      w->version = Meta(doc, "resourceVersion");
                      w->failures = 0;
                      if (w->on_synced) w->on_synced();
                      self->StartWatch(w);
                    }});
  }

  void StartWatch(const std::shared_ptr<WatchState>& w) {
    if (stopped) return;
    std::uniform_int_distribution<int> timeout(300, 600);  // client-go's spread
    std::string target = fmt::format("{}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
                                     w->path, UrlEncode(w->version), timeout(rng));
    if (!w->selector.empty()) target += "&fieldSelector=" + UrlEncode(w->selector);
    w->parser.reset();
    auto self = shared_from_this();
    w->exchange = std::make_shared<Exchange>(
        io, access, tls.get(), MakeRequest("GET", target, "", ""), std::chrono::milliseconds(660000),
        [self, w](std::string_view chunk) { return self->OnWatchBytes(w, chunk); },
        [self, w](ApiResponse r) {
          if (self->stopped) return;
          if (self->metrics != nullptr) self->metrics->CountApiRequest("watch", r.status);
          if (r.status == 410) w->version.clear();
          if (r.status == 200 || r.status == 410) {
            w->failures = 0;
            return w->version.empty() ? self->Relist(w) : self->StartWatch(w);  // ended: resume
          }
          self->Backoff(w);
        });
    w->exchange->Run();
  }

  // Bytes of the watch stream: one JSON object per event.
  bool OnWatchBytes(const std::shared_ptr<WatchState>& w, std::string_view chunk) {
    while (!chunk.empty()) {
      boost::system::error_code ec;
      const std::size_t n = w->parser.write_some(chunk.data(), chunk.size(), ec);
      if (ec) {
        w->version.clear();  // a stream we cannot read: start over
        return false;
      }
      chunk.remove_prefix(n);
      if (!w->parser.done()) continue;
      bj::value event = w->parser.release();
      w->parser.reset();
      if (!OnWatchEvent(w, event)) return false;
    }
    return true;
  }

  bool OnWatchEvent(const std::shared_ptr<WatchState>& w, bj::value& event) {
    if (!event.is_object()) return true;
    bj::object& e = event.get_object();
    const bj::value* type = e.if_contains("type");
    bj::value* object = e.if_contains("object");
    if (type == nullptr || !type->is_string() || object == nullptr) return true;
    const std::string_view t = type->get_string();
    if (t == "ERROR") {
      w->version.clear();  // 410 Expired (or any error): relist
      return false;
    }
    const std::string version = Meta(*object, "resourceVersion");
    if (!version.empty()) w->version = version;
    if (t == "BOOKMARK") return true;
    const std::string key = Key(*object);
    if (t == "DELETED") {
      w->known.erase(key);
    } else {
      w->known[key] = *object;
    }
    w->on_event(WatchEvent{std::string(t), std::move(*object)});
    return true;
  }

  void Relist(const std::shared_ptr<WatchState>& w) {
    List(w, "", std::make_shared<std::map<std::string, bj::value>>());
  }

  void Backoff(const std::shared_ptr<WatchState>& w) {
    if (stopped) return;
    const int doublings = std::min(w->failures++, 6);
    const auto delay = std::min<std::int64_t>(30000, 800LL << doublings);
    auto timer = std::make_shared<asio::steady_timer>(io);
    timer->expires_after(std::chrono::milliseconds(delay));
    auto self = shared_from_this();
    timer->async_wait([self, w, timer](beast::error_code) {
      if (w->version.empty()) return self->Relist(w);
      self->StartWatch(w);
    });
  }

  static std::string Meta(const bj::value& object, std::string_view key) {
    const bj::value* meta = object.is_object() ? object.get_object().if_contains("metadata") : nullptr;
    const bj::value* v = meta != nullptr && meta->is_object() ? meta->get_object().if_contains(key) : nullptr;
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
  }

  static std::string Key(const bj::value& object) { return Meta(object, "namespace") + "/" + Meta(object, "name"); }

  static std::string UrlEncode(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
      if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
        out.push_back(static_cast<char>(c));
      } else {
        out += fmt::format("%{:02X}", c);
      }
    }
    return out;
  }

  asio::io_context& io;
  ClusterAccess access;
  ApiClientOptions options;
  Metrics* metrics;
  std::unique_ptr<ssl::context> tls;
  asio::steady_timer bucket_timer;
  double tokens;
  std::chrono::steady_clock::time_point refilled = std::chrono::steady_clock::now();
  std::deque<Pending> queue;
  bool waiting = false;
  bool stopped = false;
  std::vector<std::shared_ptr<WatchState>> watches;
  std::mt19937 rng{std::random_device{}()};
};

ApiClient::ApiClient(asio::io_context& io, ClusterAccess access, ApiClientOptions options, Metrics* metrics)
    : impl_(std::make_shared<Impl>(io, std::move(access), options, metrics)) {}

ApiClient::~ApiClient() { Stop(); }

Status ApiClient::Start() {
  const ClusterAccess& a = impl_->access;
  if (!a.https) return Status();
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  if (a.insecure) {
    context->set_verify_mode(ssl::verify_none, ec);
  } else {
    context->set_verify_mode(ssl::verify_peer, ec);
    if (!a.ca_pem.empty()) {
      context->add_certificate_authority(asio::buffer(a.ca_pem), ec);
      if (ec) return Status::InvalidConfig(fmt::format("certificate authority: {}", ec.message()));
    } else {
      context->set_default_verify_paths(ec);
    }
  }
  if (!a.cert_pem.empty()) {
    context->use_certificate_chain(asio::buffer(a.cert_pem), ec);
    if (ec) return Status::InvalidConfig(fmt::format("client certificate: {}", ec.message()));
    context->use_private_key(asio::buffer(a.key_pem), ssl::context::pem, ec);
    if (ec) return Status::InvalidConfig(fmt::format("client key: {}", ec.message()));
  }
  impl_->tls = std::move(context);
  return Status();
}

void ApiClient::Call(std::string verb, std::string method, std::string target, std::string content_type,
                     std::string body, ApiCallback done) {
  impl_->Enqueue(Impl::Pending{std::move(verb), std::move(method), std::move(target), std::move(content_type),
                               std::move(body), std::move(done), 0});
}

void ApiClient::Watch(std::string path, std::string field_selector, std::function<void(const WatchEvent&)> on_event,
                      std::function<void()> on_synced) {
  auto w = std::make_shared<Impl::WatchState>();
  w->path = std::move(path);
  w->selector = std::move(field_selector);
  w->on_event = std::move(on_event);
  w->on_synced = std::move(on_synced);
  impl_->watches.push_back(w);
  impl_->Relist(w);
}

void ApiClient::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->bucket_timer.cancel();
  for (const auto& w : impl_->watches) {
    if (w->exchange) w->exchange->Cancel();
  }
}

}  // namespace devshare::kube
