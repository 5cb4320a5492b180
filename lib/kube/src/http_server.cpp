#include "devshare/kube/http_server.hpp"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <filesystem>
#include <list>
#include <optional>

namespace devshare::kube {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

// ALPN: http/1.1 only. A client offering only h2 gets no ALPN answer and
// falls back to HTTP/1.1.
int SelectHttp11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                 unsigned int inlen, void*) {
  static constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof(kHttp11), in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

Result<std::shared_ptr<ssl::context>> LoadTls(const HttpServerOptions& o) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (!ec) context->use_certificate_chain_file(o.cert_file, ec);
  if (ec)
    return Status::InvalidConfig(fmt::format("certificate {}: {}", o.cert_file, ec.message()));
  context->use_private_key_file(o.key_file, ssl::context::pem, ec);
  if (ec) return Status::InvalidConfig(fmt::format("private key {}: {}", o.key_file, ec.message()));
  SSL_CTX_set_alpn_select_cb(context->native_handle(), SelectHttp11, nullptr);
  // A session is resumed only in the context it was made in (OpenSSL refuses
  // a resumption without one when client certificates are verified).
  static constexpr unsigned char kSessionContext[] = {'d', 'e', 'v', 's', 'h', 'a', 'r', 'e'};
  SSL_CTX_set_session_id_context(context->native_handle(), kSessionContext,
                                 sizeof(kSessionContext));
  if (!o.client_ca_file.empty()) {
    context->load_verify_file(o.client_ca_file, ec);
    // The CertificateRequest names the CAs, so that a client picks a
    // certificate one of them signed.
    STACK_OF(X509_NAME)* names = ec ? nullptr : SSL_load_client_CA_file(o.client_ca_file.c_str());
    if (names == nullptr) {
      return Status::InvalidConfig(fmt::format("client CA {}: {}", o.client_ca_file,
                                               ec ? ec.message() : "no certificate in the file"));
    }
    SSL_CTX_set_client_CA_list(context->native_handle(), names);
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    if (ec)
      return Status::InvalidConfig(fmt::format("client CA {}: {}", o.client_ca_file, ec.message()));
  }
  return context;
}

std::optional<std::filesystem::file_time_type> Modified(const std::string& path) {
  std::error_code ec;
  auto t = std::filesystem::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return t;
}

// Raises the soft limit on open files, up to the hard one, to `wanted`.
void RaiseFileLimit(rlim_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      limit.rlim_cur >= wanted) {
    return;
  }
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &limit);
}

class Session {
 public:
  virtual ~Session() = default;
  virtual void CloseIfIdle() = 0;

  std::list<Session*>::iterator place;  // in HttpServer::Impl::sessions
};

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(asio::io_context& io_context, HttpServerOptions o, HttpHandler h)
      : io(io_context),
        options(std::move(o)),
        handler(std::move(h)),
        acceptor(io),
        accept_timer(io),
        cert_timer(io) {}

  void Accept();
  void WatchCertificate();

  asio::io_context& io;
  HttpServerOptions options;
  HttpHandler handler;
  tcp::acceptor acceptor;
  asio::steady_timer accept_timer;  // the pause after accept ran out of descriptors
  asio::steady_timer cert_timer;
  std::shared_ptr<ssl::context> tls;  // null: plain HTTP
  std::optional<std::filesystem::file_time_type> cert_time, key_time, ca_time;
  std::list<Session*> sessions;  // the open connections; each removes itself
  bool stopping = false;
};

namespace {

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadBuffer = 64 * 1024;
constexpr std::size_t kFirstRead = 1024;

template <typename Stream>
class Connection : public Session, public std::enable_shared_from_this<Connection<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  Connection(std::shared_ptr<HttpServer::Impl> server, tcp::socket socket)
      : server_(std::move(server)),
        socket_(std::move(socket)),
        wait_timer_(socket_.get_executor()) {
    place = server_->sessions.insert(server_->sessions.end(), this);
  }
  ~Connection() override { server_->sessions.erase(place); }

  // Waits for the first bytes on the bare socket: until they come, the
  // connection holds no buffer and no TLS state.
  void Start() {
    start_ = Clock::now();
    waiting_ = true;
    wait_timer_.expires_at(start_ + HeaderTimeout());
    wait_timer_.async_wait([self = this->shared_from_this()](beast::error_code ec) {
      beast::error_code ignored;
      if (!ec && self->waiting_) self->socket_.close(ignored);
    });
    socket_.async_wait(tcp::socket::wait_read,
                       [self = this->shared_from_this()](beast::error_code ec) {
                         self->waiting_ = false;
                         self->wait_timer_.cancel();
                         if (ec || self->server_->stopping) return self->Close();
                         self->Begin();
                       });
  }

  void CloseIfIdle() override {
    if (busy_) return;
    beast::error_code ignored;
    if (stream_) {
      Lowest().socket().close(ignored);
    } else {
      socket_.close(ignored);
    }
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(*stream_); }

  std::chrono::milliseconds HeaderTimeout() const {
    return std::min(server_->options.header_timeout, server_->options.read_timeout);
  }

  void Begin() {
    if constexpr (kTls) {
      stream_.emplace(beast::tcp_stream(std::move(socket_)), *server_->tls);
      Lowest().expires_at(start_ + HeaderTimeout());
      stream_->async_handshake(ssl::stream_base::server,
                               [self = this->shared_from_this()](beast::error_code ec) {
                                 if (ec) return self->Close();
                                 self->handshaken_ = true;
                                 self->ReadRequest();
                               });
    } else {
      stream_.emplace(std::move(socket_));
      ReadRequest();
    }
  }

  // Reads a request whose first bytes are here or on their way: the header
  // within header_timeout of start_, the body within read_timeout.
  void ReadRequest() {
    if (server_->stopping) return Close();
    parser_.emplace();
    parser_->header_limit(server_->options.header_limit);
    parser_->body_limit(server_->options.body_limit);
    Lowest().expires_at(start_ + HeaderTimeout());
    http::async_read_header(*stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              self->OnHeader(ec);
                            });
  }

  void OnHeader(beast::error_code ec) {
    if (ec || parser_->is_done()) return OnRead(ec);
    // Body reads go as large as the buffer's free room: without room, 512
    // bytes each (about 140 reads for a 5,000-node ExtenderArgs).
    buffer_.reserve(kReadBuffer);
    Lowest().expires_at(start_ + server_->options.read_timeout);
    http::async_read(
        *stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return Refuse(413, fmt::format("request body over {} bytes", server_->options.body_limit));
    }
    if (ec == http::error::header_limit) {
      return Refuse(431,
                    fmt::format("request header over {} bytes", server_->options.header_limit));
    }
    if (ec) return Close();  // end of stream, timeout, reset, malformed
    http::request<http::string_body> request = parser_->release();
    busy_ = true;
    Lowest().expires_never();
    HttpRequest r{std::string(request.method_string()), std::string(request.target()),
                  std::string(request[http::field::content_type]), std::move(request.body()),
                  std::string(request[http::field::authorization])};
    const bool keep_alive = request.keep_alive();
    const unsigned version = request.version();
    const std::uint64_t n = ++requests_;
    // The first call of any copy of the Responder answers; later ones are
    // ignored (two writes at once on one stream are undefined).
    server_->handler(std::move(r), [self = this->shared_from_this(), keep_alive, version,
                                    n](HttpResponse response) {
      if (n <= self->answered_) return;
      self->answered_ = n;
      self->Write(std::move(response), keep_alive, version);
    });
  }

  // Answers `status` with the reason and closes the connection.
  void Refuse(int status, const std::string& reason) {
    Write(HttpResponse{status, "application/json", fmt::format(R"({{"error":"{}"}})", reason), {}},
          false, 11);
  }

  void Write(HttpResponse r, bool keep_alive, unsigned version) {
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version);
    response->set(http::field::server, "devshare");
    response->set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) response->set(name, value);
    response->body() = std::move(r.body);
    response->keep_alive(keep_alive && !r.close && !server_->stopping);
    response->prepare_payload();
    Lowest().expires_after(server_->options.read_timeout);
    http::async_write(
        *stream_, *response,
        [self = this->shared_from_this(), response](beast::error_code ec, std::size_t) {
          self->busy_ = false;
          if (ec || !response->keep_alive()) return self->Close();
          self->NextRequest();
        });
  }

  // Kept alive: the next request, at once when its first bytes came with the
  // last one's; else the buffer goes and the connection waits read_timeout.
  void NextRequest() {
    if (server_->stopping) return Close();
    start_ = Clock::now();
    if (buffer_.size() > 0) return ReadRequest();
    buffer_.shrink_to_fit();
    Lowest().expires_after(server_->options.read_timeout);
    stream_->async_read_some(buffer_.prepare(kFirstRead), [self = this->shared_from_this()](
                                                              beast::error_code ec, std::size_t n) {
      self->buffer_.commit(n);
      if (ec) return self->Close();
      self->start_ = Clock::now();
      self->ReadRequest();
    });
  }

  void Close() {
    busy_ = false;
    beast::error_code ignored;
    if (!stream_) {
      socket_.close(ignored);
      return;
    }
    if constexpr (kTls) {
      if (handshaken_) {
        Lowest().expires_after(std::min<std::chrono::milliseconds>(std::chrono::seconds(5),
                                                                   server_->options.read_timeout));
        stream_->async_shutdown([self = this->shared_from_this()](beast::error_code) {
          beast::error_code ignored;
          self->Lowest().socket().close(ignored);
        });
        return;
      }
      Lowest().socket().close(ignored);  // no handshake, nothing to shut down
    } else {
      stream_->socket().shutdown(tcp::socket::shutdown_send, ignored);
      stream_->socket().close(ignored);
    }
  }

  std::shared_ptr<HttpServer::Impl> server_;
  tcp::socket socket_;  // until the first bytes come; then in stream_
  asio::steady_timer wait_timer_;
  std::optional<Stream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Clock::time_point start_;  // of the request being read (or of the connection)
  bool waiting_ = false;
  bool handshaken_ = false;
  bool busy_ = false;
  std::uint64_t requests_ = 0;  // requests read on this connection
  std::uint64_t answered_ = 0;  // the last of them answered
};

// Accept failed for want of descriptors or memory: the connection stays in
// the backlog, and accepting again at once would spin.
bool OutOfResources(const beast::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
         ec == asio::error::no_memory || ec == boost::system::errc::too_many_files_open_in_system;
}

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor.async_accept(io, [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopping || ec == asio::error::operation_aborted) return;
    if (OutOfResources(ec)) {
      self->accept_timer.expires_after(std::chrono::milliseconds(100));
      self->accept_timer.async_wait([self](beast::error_code wait_ec) {
        if (!wait_ec && !self->stopping) self->Accept();
      });
      return;
    }
    if (!ec && self->sessions.size() >= self->options.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);
    } else if (!ec) {
      // A reply is written as header and body: without NODELAY the body's
      // last segment can wait for the client's delayed ACK (40 ms on Linux).
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      if (self->tls) {
        std::make_shared<Connection<TlsStream>>(self, std::move(socket))->Start();
      } else {
        std::make_shared<Connection<PlainStream>>(self, std::move(socket))->Start();
      }
    }
    self->Accept();
  });
}

void HttpServer::Impl::WatchCertificate() {
  cert_timer.expires_after(options.cert_check_period);
  cert_timer.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->stopping) return;
    const HttpServerOptions& o = self->options;
    const auto cert = Modified(o.cert_file);
    const auto key = Modified(o.key_file);
    const auto ca = o.client_ca_file.empty() ? std::nullopt : Modified(o.client_ca_file);
    const bool ca_present = o.client_ca_file.empty() || ca;
    if (cert && key && ca_present &&
        (cert != self->cert_time || key != self->key_time || ca != self->ca_time)) {
      Result<std::shared_ptr<ssl::context>> reloaded = LoadTls(o);
      if (reloaded.ok()) {  // a half-written set is retried at the next check
        self->tls = std::move(*reloaded);
        self->cert_time = cert;
        self->key_time = key;
        self->ca_time = ca;
      }
    }
    self->WatchCertificate();
  });
}

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, HttpHandler handler)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  const HttpServerOptions& o = impl_->options;
  if (!o.client_ca_file.empty() && (o.cert_file.empty() || o.key_file.empty())) {
    return Status::InvalidConfig(
        fmt::format("client CA {}: client certificates need the server's certificate and key",
                    o.client_ca_file));
  }
  if (!o.cert_file.empty() || !o.key_file.empty()) {
    Result<std::shared_ptr<ssl::context>> tls = LoadTls(o);
    if (!tls.ok()) return tls.status();
    impl_->tls = std::move(*tls);
    impl_->cert_time = Modified(o.cert_file);
    impl_->key_time = Modified(o.key_file);
    if (!o.client_ca_file.empty()) impl_->ca_time = Modified(o.client_ca_file);
  }
  RaiseFileLimit(static_cast<rlim_t>(o.max_connections) + 256);
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(o.address, ec);
  if (ec)
    return Status::InvalidArgument(fmt::format("listen address {}: {}", o.address, ec.message()));
  const tcp::endpoint endpoint(address, o.port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::InvalidArgument(
        fmt::format("listen on {}:{}: {}", o.address, o.port, ec.message()));
  impl_->Accept();
  if (impl_->tls) impl_->WatchCertificate();
  return Status();
}

std::uint16_t HttpServer::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void HttpServer::Stop() {
  if (impl_->stopping) return;
  impl_->stopping = true;
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->accept_timer.cancel();
  impl_->cert_timer.cancel();
  for (Session* s : impl_->sessions) s->CloseIfIdle();
}

}  // namespace devshare::kube
