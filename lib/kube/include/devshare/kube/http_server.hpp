// devshare/kube/http_server.hpp — the HTTP/1.1 server behind `devshare
// serve` (Boost.Beast; HTTPS with OpenSSL when given a certificate).
//
// Contract:
//   - Requests are read with a body limit (default 1 MiB; beyond it: 413)
//     and a read timeout (a slow client is disconnected); connections are
//     kept alive.
//   - The handler answers through the Responder it is given, now or later
//     (a Filter answers after its API write); the connection waits.
//   - With TLS, ALPN offers only http/1.1 (kube-scheduler's Go client would
//     otherwise try h2), and the certificate and key files are reloaded for
//     new connections when they change on disk.
//   - Stop() stops accepting and closes idle connections; requests being
//     handled are answered first.
//
// Thread-safety: everything runs on the io_context's thread.
#ifndef DEVSHARE_KUBE_HTTP_SERVER_HPP_
#define DEVSHARE_KUBE_HTTP_SERVER_HPP_

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devshare/status.hpp"

namespace devshare::kube {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query
  std::string content_type;
  std::string body;
  std::string authorization;  // the Authorization header, if any
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using Responder = std::function<void(HttpResponse)>;
using HttpHandler = std::function<void(HttpRequest, Responder)>;

struct HttpServerOptions {
  std::string address = "0.0.0.0";
  std::uint16_t port = 8443;  // 0: any free port (see HttpServer::port)
  std::string cert_file;      // PEM; with key_file: HTTPS
  std::string key_file;
  std::size_t body_limit = 1 << 20;               // Default: 1 MiB
  std::chrono::milliseconds read_timeout{30000};  // Default: 30 s
  std::chrono::milliseconds cert_check_period{10000};
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Loads the certificate (if any), binds and starts accepting. Errors:
  // kInvalidConfig for certificate files that do not load, kInvalidArgument
  // for an address that cannot be bound.
  Status Start();
  std::uint16_t port() const;
  void Stop();

  struct Impl;  // opaque; public so that the connections can hold it

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_HTTP_SERVER_HPP_
