// http_exchange.hpp — one HTTP(S) request of the API client: on an idle
// keep-alive connection of the pool, or on a new one (connect, TLS resuming
// the pool's last session), then write and read with a timeout; a watch
// streams its body chunk by chunk on a connection of its own. Private to
// lib/kube (api_client.cpp).
#ifndef DEVSHARE_KUBE_SRC_HTTP_EXCHANGE_HPP_
#define DEVSHARE_KUBE_SRC_HTTP_EXCHANGE_HPP_

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "devshare/kube/api_client.hpp"

namespace devshare::kube::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection to the API server: its stream and read buffer.
struct Connection {
  std::variant<std::monostate, beast::tcp_stream, TlsStream> stream;
  beast::flat_buffer buffer;
  std::chrono::steady_clock::time_point idle_since;
};

// The API server's connections for requests: at most `max_open` at a time,
// each kept alive while idle for up to `idle_timeout`; a request that finds
// none free and the limit reached waits for one, first come first served.
// Also the TLS session a new connection resumes. Counts what it did, for the
// metrics and tests.
class ConnectionPool {
 public:
  // Called with an idle connection, or with null: open a new one (the slot
  // is counted already).
  using Start = std::function<void(std::unique_ptr<Connection>)>;

  ConnectionPool(std::size_t max_open, std::chrono::seconds idle_timeout)
      : max_open_(std::max<std::size_t>(max_open, 1)), idle_timeout_(idle_timeout) {}
  ~ConnectionPool() {
    if (session_ != nullptr) SSL_SESSION_free(session_);
  }
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Starts a request now (on the most recently idle connection, or a new
  // one within the limit) or when a connection frees up.
  void Acquire(Start start) {
    const auto now = std::chrono::steady_clock::now();
    while (!idle_.empty()) {
      std::unique_ptr<Connection> c = std::move(idle_.back());
      idle_.pop_back();
      if (now - c->idle_since < idle_timeout_) {
        ++reused_;
        return start(std::move(c));
      }
      --open_;
    }
    if (open_ < max_open_) {
      ++open_;
      return start(nullptr);
    }
    waiting_.push_back(std::move(start));
  }
  // A connection whose exchange ended with both sides keeping it alive: to
  // the first waiting request, else idle (unless the pool is closed).
  void Release(std::unique_ptr<Connection> c) {
    if (!waiting_.empty()) {
      Start next = std::move(waiting_.front());
      waiting_.pop_front();
      ++reused_;
      return next(std::move(c));
    }
    if (closed_) {
      --open_;
      return;
    }
    c->idle_since = std::chrono::steady_clock::now();
    idle_.push_back(std::move(c));
  }
  // A connection that ended (closed, or never opened): its slot goes to the
  // first waiting request, which opens a new one.
  void Closed() {
    if (!waiting_.empty()) {
      Start next = std::move(waiting_.front());
      waiting_.pop_front();
      return next(nullptr);
    }
    --open_;
  }
  // Closes every idle connection and keeps none from now on; requests
  // waiting or in flight still run.
  void Close() {
    closed_ = true;
    open_ -= idle_.size();
    idle_.clear();
  }

  // TLS: a new connection offers the last session, and counts its
  // handshake if it resumed it; an exchange that ends remembers its
  // connection's session.
  void Resume(SSL* ssl) {
    if (session_ != nullptr) SSL_set_session(ssl, session_);
  }
  void Handshaken(SSL* ssl) {
    if (SSL_session_reused(ssl) != 0) ++resumed_;
  }
  void Remember(SSL* ssl) {
    const SSL_SESSION* current = SSL_get0_session(ssl);
    if (current == nullptr || SSL_SESSION_is_resumable(current) == 0) return;
    // A copy: OpenSSL marks a connection's own session not resumable when the
    // connection is freed without a TLS shutdown, as idle ones are.
    SSL_SESSION* s = SSL_SESSION_dup(current);
    if (s == nullptr) return;
    if (session_ != nullptr) SSL_SESSION_free(session_);
    session_ = s;
  }

  void CountOpened() { ++opened_; }
  std::uint64_t opened() const { return opened_; }
  std::uint64_t reused() const { return reused_; }
  std::uint64_t resumed() const { return resumed_; }

 private:
  std::size_t max_open_;
  std::chrono::seconds idle_timeout_;
  std::size_t open_ = 0;  // idle or in use
  std::vector<std::unique_ptr<Connection>> idle_;
  std::deque<Start> waiting_;
  SSL_SESSION* session_ = nullptr;
  bool closed_ = false;
  std::uint64_t opened_ = 0, reused_ = 0, resumed_ = 0;
};

// One request. With a pool: on an idle connection when there is one (and,
// if that connection turns out closed before any byte of the answer, once
// more on a new one), kept alive for the next request afterwards. Without
// (`pool` null): on a connection of its own, closed at the end.
// `on_chunk` set: the body is streamed to it (a watch) instead of kept.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  using Done = std::function<void(ApiResponse)>;
  using Chunk = std::function<bool(std::string_view)>;  // false: stop reading

  Exchange(asio::io_context& io, const ClusterAccess& access, ssl::context* tls,
           std::shared_ptr<ConnectionPool> pool, http::request<http::string_body> request,
           std::chrono::milliseconds timeout, Chunk on_chunk, Done done)
      : io_(io),
        access_(access),
        tls_(tls),
        pool_(std::move(pool)),
        resolver_(io),
        request_(std::move(request)),
        timeout_(timeout),
        on_chunk_(std::move(on_chunk)),
        done_(std::move(done)) {
    request_.keep_alive(pool_ != nullptr);
  }

  void Run() {
    if (pool_ == nullptr) return Connect();
    pool_->Acquire([self = shared_from_this()](std::unique_ptr<Connection> c) {
      self->counted_ = true;
      if (c == nullptr) return self->Connect();
      self->conn_ = std::move(c);
      self->reused_ = true;
      self->Write();
    });
  }

  void Cancel() {
    if (conn_ == nullptr) return;
    beast::error_code ignored;
    Lowest().socket().close(ignored);
  }

 private:
  void Connect() {
    reused_ = false;
    conn_ = std::make_unique<Connection>();
    if (tls_ != nullptr) {
      conn_->stream.emplace<TlsStream>(io_, *tls_);
    } else {
      conn_->stream.emplace<beast::tcp_stream>(io_);
    }
    if (pool_ != nullptr) pool_->CountOpened();
    resolver_.async_resolve(
        access_.host, access_.port,
        [self = shared_from_this()](beast::error_code ec, const tcp::resolver::results_type& r) {
          if (ec) return self->Fail("resolve", ec);
          self->Lowest().expires_after(self->timeout_);
          self->Lowest().async_connect(r, [self](beast::error_code ec2, const tcp::endpoint&) {
            if (ec2) return self->Fail("connect", ec2);
            // Requests are written as header and body: without NODELAY the
            // body's last segment can wait for the server's delayed ACK.
            beast::error_code ignored;
            self->Lowest().socket().set_option(tcp::no_delay(true), ignored);
            self->Handshake();
          });
        });
  }

  beast::tcp_stream& Lowest() {
    if (auto* tls = std::get_if<TlsStream>(&conn_->stream)) return beast::get_lowest_layer(*tls);
    return std::get<beast::tcp_stream>(conn_->stream);
  }

  void Handshake() {
    auto* tls = std::get_if<TlsStream>(&conn_->stream);
    if (tls == nullptr) return Write();
    if (pool_ != nullptr) pool_->Resume(tls->native_handle());
    const std::string& name =
        access_.tls_server_name.empty() ? access_.host : access_.tls_server_name;
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
    tls->async_handshake(
        ssl::stream_base::client, [self = shared_from_this()](beast::error_code ec) {
          if (ec) return self->Fail("TLS handshake", ec);
          if (self->pool_ != nullptr) {
            self->pool_->Handshaken(std::get<TlsStream>(self->conn_->stream).native_handle());
          }
          self->Write();
        });
  }

  template <typename F>
  void WithStream(F&& f) {
    std::visit(
        [&](auto& s) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(s)>, std::monostate>) f(s);
        },
        conn_->stream);
  }

  void Write() {
    Lowest().expires_after(timeout_);
    WithStream([&](auto& s) {
      http::async_write(s, request_,
                        [self = shared_from_this()](beast::error_code ec, std::size_t) {
                          if (ec) return self->Retry("write", ec);
                          self->ReadHeader();
                        });
    });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(on_chunk_ ? boost::optional<std::uint64_t>()
                                  : boost::optional<std::uint64_t>(1ULL << 30));
    WithStream([&](auto& s) {
      http::async_read_header(
          s, conn_->buffer, *parser_,
          [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return self->Retry("read", ec);
            const int status = static_cast<int>(self->parser_->get().result_int());
            if (self->on_chunk_ && status == 200) {
              self->chunk_body_ = [raw = self.get()](std::uint64_t, std::string_view body,
                                                     beast::error_code&) {
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
      http::async_read_some(s, conn_->buffer, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->Fail("read", ec);
                              self->ReadBody();
                            });
    });
  }

  void Finish() {
    auto& response = parser_->get();
    ApiResponse r{static_cast<int>(response.result_int()),
                  std::move(response.body()),
                  {},
                  std::string(response[http::field::retry_after])};
    const bool keep = pool_ != nullptr && parser_->is_done() && parser_->keep_alive();
    if (pool_ != nullptr) {
      if (auto* tls = std::get_if<TlsStream>(&conn_->stream)) pool_->Remember(tls->native_handle());
    }
    if (keep) {
      Lowest().expires_never();
      counted_ = false;
      pool_->Release(std::move(conn_));
    } else {
      EndConnection();
    }
    Done done = std::move(done_);
    if (done) done(std::move(r));
  }

  // A reused connection the server had closed fails before any byte of an
  // answer: the request goes once more, on a new connection.
  void Retry(const char* step, beast::error_code ec) {
    const bool nothing_read = !parser_ || !parser_->got_some();
    if (reused_ && nothing_read && ec != beast::error::timeout) {
      Cancel();
      parser_.reset();
      return Connect();
    }
    Fail(step, ec);
  }

  // Closes the connection and gives its slot back.
  void EndConnection() {
    Cancel();
    if (counted_) {
      counted_ = false;
      pool_->Closed();
    }
  }

  void Fail(const char* step, beast::error_code ec) {
    EndConnection();
    Done done = std::move(done_);
    if (done) done(ApiResponse{0, {}, fmt::format("{}: {}", step, ec.message()), {}});
  }

  asio::io_context& io_;
  const ClusterAccess& access_;
  ssl::context* tls_;
  std::shared_ptr<ConnectionPool> pool_;  // null: a connection of its own
  tcp::resolver resolver_;
  std::unique_ptr<Connection> conn_;
  bool reused_ = false;   // conn_ came from the pool
  bool counted_ = false;  // this exchange holds one of the pool's slots
  http::request<http::string_body> request_;
  std::chrono::milliseconds timeout_;
  Chunk on_chunk_;
  Done done_;
  std::function<std::size_t(std::uint64_t, std::string_view, beast::error_code&)> chunk_body_;
  std::optional<http::response_parser<http::string_body>> parser_;
  bool stopped_ = false;
};

}  // namespace devshare::kube::detail

#endif  // DEVSHARE_KUBE_SRC_HTTP_EXCHANGE_HPP_
