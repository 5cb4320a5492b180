#include "devshare/kube/http_server.hpp"

#include <fmt/format.h>
#include <openssl/ssl.h>

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

Result<std::shared_ptr<ssl::context>> LoadTls(const std::string& cert_file,
                                              const std::string& key_file) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (!ec) context->use_certificate_chain_file(cert_file, ec);
  if (ec) return Status::InvalidConfig(fmt::format("certificate {}: {}", cert_file, ec.message()));
  context->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) return Status::InvalidConfig(fmt::format("private key {}: {}", key_file, ec.message()));
  SSL_CTX_set_alpn_select_cb(context->native_handle(), SelectHttp11, nullptr);
  return context;
}

std::optional<std::filesystem::file_time_type> Modified(const std::string& path) {
  std::error_code ec;
  auto t = std::filesystem::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return t;
}

class Session {
 public:
  virtual ~Session() = default;
  virtual void CloseIfIdle() = 0;
};

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(asio::io_context& io_context, HttpServerOptions o, HttpHandler h)
      : io(io_context),
        options(std::move(o)),
        handler(std::move(h)),
        acceptor(io),
        cert_timer(io) {}

  void Accept();
  void WatchCertificate();

  asio::io_context& io;
  HttpServerOptions options;
  HttpHandler handler;
  tcp::acceptor acceptor;
  asio::steady_timer cert_timer;
  std::shared_ptr<ssl::context> tls;  // null: plain HTTP
  std::optional<std::filesystem::file_time_type> cert_time, key_time;
  std::list<std::weak_ptr<Session>> sessions;
  bool stopping = false;
};

namespace {

constexpr std::size_t kReadBuffer = 64 * 1024;

template <typename Stream>
class Connection : public Session, public std::enable_shared_from_this<Connection<Stream>> {
 public:
  Connection(std::shared_ptr<HttpServer::Impl> server, Stream stream)
      : server_(std::move(server)), stream_(std::move(stream)) {
    // Reads go as large as the buffer's free room: without room, 512 bytes
    // each (about 140 reads for a 5,000-node ExtenderArgs).
    buffer_.reserve(kReadBuffer);
  }

  void Start() {
    if constexpr (std::is_same_v<Stream, beast::ssl_stream<beast::tcp_stream>>) {
      beast::get_lowest_layer(stream_).expires_after(server_->options.read_timeout);
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->Close();
                                self->Read();
                              });
    } else {
      Read();
    }
  }

  void CloseIfIdle() override {
    if (!busy_) beast::get_lowest_layer(stream_).socket().close();
  }

 private:
  void Read() {
    if (server_->stopping) return Close();
    parser_.emplace();
    parser_->body_limit(server_->options.body_limit);
    beast::get_lowest_layer(stream_).expires_after(server_->options.read_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      HttpResponse too_large{
          413,
          "application/json",
          fmt::format(R"({{"error":"request body over {} bytes"}})", server_->options.body_limit),
          {}};
      return Write(std::move(too_large), false, 11);
    }
    if (ec) return Close();  // end of stream, timeout, reset
    http::request<http::string_body> request = parser_->release();
    busy_ = true;
    beast::get_lowest_layer(stream_).expires_never();
    HttpRequest r{std::string(request.method_string()), std::string(request.target()),
                  std::string(request[http::field::content_type]), std::move(request.body()),
                  std::string(request[http::field::authorization])};
    const bool keep_alive = request.keep_alive();
    const unsigned version = request.version();
    server_->handler(std::move(r),
                     [self = this->shared_from_this(), keep_alive, version](HttpResponse response) {
                       self->Write(std::move(response), keep_alive, version);
                     });
  }

  void Write(HttpResponse r, bool keep_alive, unsigned version) {
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version);
    response->set(http::field::server, "devshare");
    response->set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) response->set(name, value);
    response->body() = std::move(r.body);
    response->keep_alive(keep_alive && !server_->stopping);
    response->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(server_->options.read_timeout);
    http::async_write(
        stream_, *response,
        [self = this->shared_from_this(), response](beast::error_code ec, std::size_t) {
          self->busy_ = false;
          if (ec || !response->keep_alive()) return self->Close();
          self->Read();
        });
  }

  void Close() {
    busy_ = false;
    if constexpr (std::is_same_v<Stream, beast::ssl_stream<beast::tcp_stream>>) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        beast::error_code ignored;
        beast::get_lowest_layer(self->stream_).socket().close(ignored);
      });
    } else {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      stream_.socket().close(ignored);
    }
  }

  std::shared_ptr<HttpServer::Impl> server_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool busy_ = false;
};

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor.async_accept(io, [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopping) return;
    if (!ec) {
      // A reply is written as header and body: without NODELAY the body's
      // last segment can wait for the client's delayed ACK (40 ms on Linux).
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::shared_ptr<Session> session;
      if (self->tls) {
        auto c = std::make_shared<Connection<beast::ssl_stream<beast::tcp_stream>>>(
            self,
            beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *self->tls));
        c->Start();
        session = c;
      } else {
        auto c = std::make_shared<Connection<beast::tcp_stream>>(
            self, beast::tcp_stream(std::move(socket)));
        c->Start();
        session = c;
      }
      self->sessions.remove_if([](const std::weak_ptr<Session>& s) { return s.expired(); });
      self->sessions.push_back(session);
    }
    self->Accept();
  });
}

void HttpServer::Impl::WatchCertificate() {
  cert_timer.expires_after(options.cert_check_period);
  cert_timer.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->stopping) return;
    const auto cert = Modified(self->options.cert_file);
    const auto key = Modified(self->options.key_file);
    if (cert && key && (cert != self->cert_time || key != self->key_time)) {
      Result<std::shared_ptr<ssl::context>> reloaded =
          LoadTls(self->options.cert_file, self->options.key_file);
      if (reloaded.ok()) {  // a half-written pair is retried at the next check
        self->tls = std::move(*reloaded);
        self->cert_time = cert;
        self->key_time = key;
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
  if (!o.cert_file.empty() || !o.key_file.empty()) {
    Result<std::shared_ptr<ssl::context>> tls = LoadTls(o.cert_file, o.key_file);
    if (!tls.ok()) return tls.status();
    impl_->tls = std::move(*tls);
    impl_->cert_time = Modified(o.cert_file);
    impl_->key_time = Modified(o.key_file);
  }
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
  impl_->cert_timer.cancel();
  for (const std::weak_ptr<Session>& weak : impl_->sessions) {
    if (std::shared_ptr<Session> s = weak.lock()) s->CloseIfIdle();
  }
}

}  // namespace devshare::kube
