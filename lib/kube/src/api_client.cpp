#include "devshare/kube/api_client.hpp"

#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <deque>
#include <optional>
#include <random>
#include <variant>

#include "http_exchange.hpp"
#include "json_member.hpp"

namespace devshare::kube {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
namespace bj = boost::json;
using tcp = asio::ip::tcp;

using detail::Exchange;
using detail::TlsStream;

namespace {

std::string UrlEncode(std::string_view s) {
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

}  // namespace

std::string ListTarget(std::string_view path, std::string_view field_selector,
                       std::string_view continue_token) {
  std::string target = fmt::format("{}?limit=500", path);
  if (!field_selector.empty()) target += "&fieldSelector=" + UrlEncode(field_selector);
  if (!continue_token.empty()) target += "&continue=" + UrlEncode(continue_token);
  return target;
}

struct ApiClient::Impl : std::enable_shared_from_this<ApiClient::Impl> {
  struct Pending {
    std::string verb, method, target, content_type, body;
    ApiCallback done;
    int attempt = 0;
    bool reauthenticated = false;
    std::string accept = "application/json";
  };
  struct WatchState {
    std::string path, selector;
    std::function<void(const WatchEvent&)> on_event;
    std::function<void()> on_synced;
    std::map<std::string, bj::value> known;  // by namespace/name: the last object seen
    std::string version;                     // resourceVersion to watch from; empty: relist
    int failures = 0;
    std::shared_ptr<Exchange> exchange;
    std::shared_ptr<asio::steady_timer> retry;  // the backoff before the next try
    bj::stream_parser parser;
  };

  Impl(asio::io_context& io_context, ClusterAccess a, ApiClientOptions o, Metrics* m)
      : io(io_context),
        access(std::move(a)),
        options(o),
        metrics(m),
        bucket_timer(io),
        tokens(o.burst),
        pool(std::make_shared<detail::ConnectionPool>(o.max_connections, o.idle_timeout)) {}

  http::request<http::string_body> MakeRequest(const std::string& method, const std::string& target,
                                               const std::string& content_type,
                                               const std::string& body, const std::string& accept) {
    static_cast<void>(RefreshCredential(false));  // a failure shows as the server's 401
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, access.host);
    req.set(http::field::user_agent, "devshare");
    req.set(http::field::accept, accept);
    if (!access.token.empty()) req.set(http::field::authorization, "Bearer " + access.token);
    if (!body.empty()) {
      req.set(http::field::content_type, content_type);
      req.body() = body;
    }
    req.prepare_payload();
    return req;
  }

  // client-go's token bucket: a request waits until a token is there.
  void Enqueue(Pending p) {
    if (stopped) return;  // dropped, uncalled, as Stop() drops the queue
    queue.push_back(std::move(p));
    Pump();
  }

  void Pump() {
    if (stopped || waiting || queue.empty()) return;
    const auto now = std::chrono::steady_clock::now();
    tokens = std::min<double>(
        options.burst,
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

  // The exec plugin's credential (ClusterAccess::exec), fetched when there
  // is none, when it has expired, or (`force`) when the server refused it.
  Status RefreshCredential(bool force) {
    if (!access.exec) return Status();
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    if (!force && credential_fetched && (!credential_expires || now < *credential_expires))
      return Status();
    Result<ExecCredential> c = RunExecPlugin(access);
    if (!c.ok()) return c.status();
    credential_fetched = true;
    credential_expires = c->expires;
    access.token = c->token;
    if (c->cert_pem == access.cert_pem && c->key_pem == access.key_pem) return Status();
    access.cert_pem = c->cert_pem;
    access.key_pem = c->key_pem;
    return BuildTls();  // new connections present the new certificate
  }

  Status BuildTls() {
    if (!access.https) return Status();
    auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
    boost::system::error_code ec;
    if (access.insecure) {
      context->set_verify_mode(ssl::verify_none, ec);
    } else {
      context->set_verify_mode(ssl::verify_peer, ec);
      if (!access.ca_pem.empty()) {
        context->add_certificate_authority(asio::buffer(access.ca_pem), ec);
        if (ec)
          return Status::InvalidConfig(fmt::format("certificate authority: {}", ec.message()));
      } else {
        context->set_default_verify_paths(ec);
      }
    }
    if (!access.cert_pem.empty()) {
      context->use_certificate_chain(asio::buffer(access.cert_pem), ec);
      if (ec) return Status::InvalidConfig(fmt::format("client certificate: {}", ec.message()));
      context->use_private_key(asio::buffer(access.key_pem), ssl::context::pem, ec);
      if (ec) return Status::InvalidConfig(fmt::format("client key: {}", ec.message()));
    }
    tls = std::move(context);
    return Status();
  }

  void Send(Pending p) {
    auto shared = std::make_shared<Pending>(std::move(p));
    auto self = shared_from_this();
    if (Status s = RefreshCredential(false); !s.ok()) {
      // Never from within Call: the caller may hold state `done` changes.
      asio::post(io, [shared, error = std::string(s.message())] {
        if (shared->done) shared->done(ApiResponse{0, "", error, ""});
      });
      return;
    }
    auto exchange = std::make_shared<Exchange>(
        io, access, tls.get(), pool,
        MakeRequest(shared->method, shared->target, shared->content_type, shared->body,
                    shared->accept),
        options.timeout, nullptr, [self, shared](ApiResponse r) {
          if (self->metrics != nullptr) self->metrics->CountApiRequest(shared->verb, r.status);
          // A plugin's credential the server refused: once more with a fresh one.
          if (r.status == 401 && self->access.exec && !shared->reauthenticated && !self->stopped) {
            shared->reauthenticated = true;
            if (Status s = self->RefreshCredential(true); s.ok()) {
              self->Enqueue(std::move(*shared));
              return;
            }
          }
          const std::string& retry_after = r.retry_after;
          const bool retriable = r.status == 429 || r.status >= 500;
          if (retriable && !retry_after.empty() && shared->attempt < self->options.max_retries &&
              !self->stopped) {
            ++shared->attempt;
            auto timer = std::make_shared<asio::steady_timer>(self->io);
            int seconds = 1;
            try {
              seconds = std::clamp(std::stoi(retry_after), 0, 60);
            } catch (...) {
            }
            timer->expires_after(std::chrono::seconds(seconds));
            timer->async_wait(
                [self, shared, timer](beast::error_code) { self->Enqueue(std::move(*shared)); });
            return;
          }
          if (shared->done) shared->done(std::move(r));
        });
    exchange->Run();
  }

  // ---- list + watch

  void List(const std::shared_ptr<WatchState>& w, const std::string& continue_token,
            const std::shared_ptr<std::map<std::string, bj::value>>& fresh) {
    const std::string target = ListTarget(w->path, w->selector, continue_token);
    auto self = shared_from_this();
    Enqueue(
        Pending{"list", "GET", target, "", "", [self, w, fresh](const ApiResponse& r) {
                  if (self->stopped) return;
                  bj::value doc;
                  boost::system::error_code ec;
                  if (r.status == 200) doc = bj::parse(r.body, ec);
                  if (r.status != 200 || ec || !doc.is_object()) return self->Backoff(w);
                  if (const bj::value* items = doc.get_object().if_contains("items");
                      items && items->is_array()) {
                    for (bj::value& item : doc.get_object()["items"].get_array()) {
                      (*fresh)[Key(item)] = std::move(item);
                    }
                  }
                  const std::string cont = MetadataString(doc, "continue");
                  if (!cont.empty()) return self->List(w, cont, fresh);
                  // The list is whole: replace the cache.
                  for (auto& [key, object] : w->known) {
                    if (!fresh->contains(key)) w->on_event(WatchEvent{"DELETED", object});
                  }
                  for (auto& [key, object] : *fresh) {
                    w->on_event(WatchEvent{w->known.contains(key) ? "MODIFIED" : "ADDED", object});
                  }
                  w->known = std::move(*fresh);
                  w->version = MetadataString(doc, "resourceVersion");
                  w->failures = 0;
                  if (w->on_synced) w->on_synced();
                  self->StartWatch(w);
                }});
  }

  void StartWatch(const std::shared_ptr<WatchState>& w) {
    if (stopped) return;
    std::uniform_int_distribution<int> timeout(300, 600);  // client-go's spread
    std::string target =
        fmt::format("{}?watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={}",
                    w->path, UrlEncode(w->version), timeout(rng));
    if (!w->selector.empty()) target += "&fieldSelector=" + UrlEncode(w->selector);
    w->parser.reset();
    auto self = shared_from_this();
    w->exchange = std::make_shared<Exchange>(
        io, access, tls.get(), nullptr, MakeRequest("GET", target, "", "", "application/json"),
        std::chrono::milliseconds(660000),
        [self, w](std::string_view chunk) { return self->OnWatchBytes(w, chunk); },
        [self, w](const ApiResponse& r) {
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
    if (stopped) return false;  // bytes read before Stop closed the socket
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
    const std::string version = MetadataString(*object, "resourceVersion");
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
    w->retry = std::make_shared<asio::steady_timer>(io);
    w->retry->expires_after(std::chrono::milliseconds(delay));
    auto self = shared_from_this();
    w->retry->async_wait([self, w, timer = w->retry](beast::error_code ec) {
      if (w->retry == timer) w->retry.reset();
      if (ec || self->stopped) return;  // cancelled by Stop
      if (w->version.empty()) return self->Relist(w);
      self->StartWatch(w);
    });
  }

  static std::string Key(const bj::value& object) {
    return MetadataString(object, "namespace") + "/" + MetadataString(object, "name");
  }

  asio::io_context& io;
  ClusterAccess access;
  ApiClientOptions options;
  Metrics* metrics;
  std::unique_ptr<ssl::context> tls;
  bool credential_fetched = false;                 // RefreshCredential
  std::optional<std::int64_t> credential_expires;  // Unix seconds
  asio::steady_timer bucket_timer;
  double tokens;
  std::chrono::steady_clock::time_point refilled = std::chrono::steady_clock::now();
  std::deque<Pending> queue;
  bool waiting = false;
  bool stopped = false;
  std::vector<std::shared_ptr<WatchState>> watches;
  std::mt19937 rng{std::random_device{}()};
  std::shared_ptr<detail::ConnectionPool> pool;
};

ApiClient::ApiClient(asio::io_context& io, ClusterAccess access, ApiClientOptions options,
                     Metrics* metrics)
    : impl_(std::make_shared<Impl>(io, std::move(access), options, metrics)) {}

ApiClient::~ApiClient() {
  Stop();
  impl_->metrics = nullptr;  // requests still on the wire complete uncounted
}

Status ApiClient::Start() {
  if (Status s = impl_->RefreshCredential(true); !s.ok()) return s;
  return impl_->tls ? Status() : impl_->BuildTls();
}

void ApiClient::Call(std::string verb, std::string method, std::string target,
                     std::string content_type, std::string body, ApiCallback done) {
  impl_->Enqueue(Impl::Pending{std::move(verb), std::move(method), std::move(target),
                               std::move(content_type), std::move(body), std::move(done), 0});
}

void ApiClient::GetMetadata(std::string verb, std::string target, ApiCallback done) {
  Impl::Pending p{std::move(verb), "GET", std::move(target), "", "", std::move(done), 0};
  p.accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
  impl_->Enqueue(std::move(p));
}

ApiConnectionStats ApiClient::connection_stats() const {
  return ApiConnectionStats{impl_->pool->opened(), impl_->pool->reused(), impl_->pool->resumed()};
}

void ApiClient::Watch(std::string path, std::string field_selector,
                      std::function<void(const WatchEvent&)> on_event,
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
  impl_->pool->Close();
  // Dropped, callbacks uncalled: their handlers hold the client (a watch's
  // exchange, a queued request), which would otherwise hold them for ever.
  for (const auto& w : impl_->watches) {
    if (w->exchange) w->exchange->Cancel();
    w->exchange.reset();
    if (w->retry) w->retry->cancel();  // else the loop would wait out the backoff
  }
  impl_->queue.clear();
  impl_->watches.clear();
}

}  // namespace devshare::kube
