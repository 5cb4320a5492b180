// devshare/kube/http_server.hpp — the HTTP/1.1 server behind `devshare
// serve` (Boost.Beast; HTTPS with OpenSSL when given a certificate).
//
// Contract:
//   - Requests are read with a body limit (default 1 MiB; beyond it: 413)
//     and a header limit (default 16 KiB; beyond it: 431; both answers
//     close the connection); connections are kept alive.
//   - A slow or silent client is disconnected: a new connection has
//     header_timeout (10 s) from its accept for its TLS handshake and its
//     first request header; a kept-alive connection waits read_timeout
//     (30 s) for its next request, whose header must then arrive within
//     header_timeout of its first byte; a request's body must be in within
//     read_timeout of that first byte, and an answer written within
//     read_timeout. No wait is longer than read_timeout.
//   - A connection holds only its socket until its first bytes arrive (no
//     buffer, no TLS state), and its read buffer only while a request is
//     being read: an idle connection costs about 1 KiB, a TLS connection
//     past its handshake about 76 KiB (Asio's and OpenSSL's fixed buffers).
//   - At most max_connections (default 16,384) are open; a connection
//     beyond them is accepted and closed at once. When accept fails for
//     want of file descriptors, accepting resumes 100 ms later (the
//     connection waits in the listen backlog). Start() raises the soft
//     RLIMIT_NOFILE to max_connections plus 256 when it is lower, up to
//     the hard limit (Go's runtime raises it for Go servers likewise).
//   - The handler answers through the Responder it is given, now or later
//     (a Filter answers after its API write); the connection waits, with no
//     deadline, so a handler must call it once on every path. The first
//     call (of the Responder or any copy of it) answers; later calls are
//     ignored. The Responder owns the connection while the request is
//     handled: it may be called after Stop() (which leaves the connection
//     open for it, and closes it after the answer), a client gone meanwhile
//     makes the answer a no-op, and a Responder destroyed uncalled closes
//     the connection without an answer.
//   - With TLS, ALPN offers only http/1.1 (kube-scheduler's Go client would
//     otherwise try h2), and the certificate and key files are reloaded for
//     new connections when they change on disk.
//   - With client_ca_file (TLS only), a client must present a certificate
//     signed by one of that file's CAs: a connection without one, or with
//     one the CAs did not sign, is refused at the handshake. The file is
//     reloaded with the certificate.
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
  // Close the connection after this answer (`Connection: close`): the
  // client's next request opens a new one.
  bool close = false;
};

using Responder = std::function<void(HttpResponse)>;
using HttpHandler = std::function<void(HttpRequest, Responder)>;

struct HttpServerOptions {
  std::string address = "0.0.0.0";
  std::uint16_t port = 8443;  // 0: any free port (see HttpServer::port)
  std::string cert_file;      // PEM; with key_file: HTTPS
  std::string key_file;
  std::string client_ca_file;                       // PEM CAs; set: client certificates required
  std::size_t body_limit = 1 << 20;                 // Default: 1 MiB
  std::uint32_t header_limit = 16 << 10;            // Default: 16 KiB
  std::chrono::milliseconds read_timeout{30000};    // Default: 30 s
  std::chrono::milliseconds header_timeout{10000};  // Default: 10 s
  std::size_t max_connections = 16384;
  std::chrono::milliseconds cert_check_period{10000};
};

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Loads the certificate (if any), binds and starts accepting. Errors:
  // kInvalidConfig for certificate or CA files that do not load, or a
  // client_ca_file without a certificate and key; kInvalidArgument for an
  // address that cannot be bound.
  Status Start();
  std::uint16_t port() const;
  void Stop();

  struct Impl;  // opaque; public so that the connections can hold it

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_HTTP_SERVER_HPP_
