// The HTTP server (devshare/kube/http_server.hpp): its Responder contract,
// bodies, TLS and certificate reloads, client certificates, deadlines and
// limits.
#include "devshare/kube/http_server.hpp"

#include <doctest/doctest.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "devshare/kube/api_client.hpp"
#include "kube/fake_api.hpp"
#include "kube/kube_fixtures.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::Loopback;
using devshare::kube::fakes::Unthrottled;
using devshare::kube::fixtures::kCertA;
using devshare::kube::fixtures::kCertB;
using devshare::kube::fixtures::kKeyB;
using devshare::kube::fixtures::LoopbackTls;
using devshare::kube::fixtures::WriteFile;

TEST_CASE(
    "kube http server: a Responder answers once; later calls of it or its copies are ignored") {
  boost::asio::io_context io;
  int n = 0;
  HttpServer server(io, Loopback(), [&](HttpRequest, Responder respond) {
    const std::string body = std::to_string(++n);
    Responder copy = respond;
    respond(HttpResponse{200, "text/plain", body, {}});
    respond(HttpResponse{500, "text/plain", "again", {}});
    copy(HttpResponse{501, "text/plain", "copy", {}});
  });
  REQUIRE(server.Start().ok());
  ClusterAccess access;
  access.host = "127.0.0.1";
  access.port = std::to_string(server.port());
  access.https = false;
  ApiClientOptions one = Unthrottled();
  one.max_connections = 1;  // both requests on one kept-alive connection
  ApiClient client(io, access, one, nullptr);
  REQUIRE(client.Start().ok());
  std::vector<std::string> answers;
  client.Call("a", "GET", "/a", "", "", [&](const ApiResponse& first) {
    answers.push_back(std::to_string(first.status) + " " + first.body);
    client.Call("b", "GET", "/b", "", "", [&](const ApiResponse& second) {
      answers.push_back(std::to_string(second.status) + " " + second.body);
      client.Stop();
      server.Stop();
    });
  });
  io.run();
  CHECK(answers == std::vector<std::string>{"200 1", "200 2"});
  CHECK(client.connection_stats().opened == 1);
}

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

// One request over a fresh connection, from another thread.
std::pair<int, std::string> Send(std::uint16_t port, http::verb method, const std::string& target,
                                 std::string body) {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  http::request<http::string_body> req(method, target, 11);
  req.set(http::field::host, "localhost");
  req.body() = std::move(body);
  req.prepare_payload();
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code ec;
  http::read(socket, buffer, res, ec);
  return {ec ? 0 : static_cast<int>(res.result_int()), res.body()};
}

}  // namespace

TEST_CASE("kube: the HTTP server answers later, limits bodies, and stops") {
  boost::asio::io_context io;
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.body_limit = 64;
  std::vector<Responder> later;
  HttpServer server(io, options, [&](HttpRequest r, Responder respond) {
    if (r.target == "/later") {
      later.push_back(std::move(respond));
      boost::asio::post(io, [&] { later.back()(HttpResponse{200, "text/plain", "late", {}}); });
      return;
    }
    respond(HttpResponse{201, "text/plain", r.method + " " + r.body, {}});
  });
  REQUIRE(server.Start().ok());
  const std::uint16_t port = server.port();
  std::vector<std::pair<int, std::string>> got;
  std::thread client([&] {
    got.push_back(Send(port, http::verb::post, "/echo", "hello"));
    got.push_back(Send(port, http::verb::post, "/later", ""));
    got.push_back(Send(port, http::verb::post, "/echo", std::string(100, 'x')));
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  REQUIRE(got.size() == 3);
  CHECK(got[0] == std::pair<int, std::string>{201, "POST hello"});
  CHECK(got[1] == std::pair<int, std::string>{200, "late"});
  CHECK(got[2].first == 413);
  CHECK(got[2].second.find("over 64 bytes") != std::string::npos);
}

namespace {

// The common name of the certificate a TLS server on `port` presents, and
// the protocol ALPN settled on when the client offered h2 and http/1.1.
std::pair<std::string, std::string> Presented(std::uint16_t port) {
  boost::asio::io_context io;
  boost::asio::ssl::context context(boost::asio::ssl::context::tls_client);
  context.set_verify_mode(boost::asio::ssl::verify_none);
  boost::asio::ssl::stream<tcp::socket> stream(io, context);
  static constexpr unsigned char kProtocols[] = {2,   'h', '2', 8,   'h', 't',
                                                 't', 'p', '/', '1', '.', '1'};
  SSL_set_alpn_protos(stream.native_handle(), kProtocols, sizeof(kProtocols));
  stream.next_layer().connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  stream.handshake(boost::asio::ssl::stream_base::client);
  X509* peer = SSL_get1_peer_certificate(stream.native_handle());
  char name[64] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, name, sizeof(name));
  X509_free(peer);
  const unsigned char* alpn = nullptr;
  unsigned int alpn_length = 0;
  SSL_get0_alpn_selected(stream.native_handle(), &alpn, &alpn_length);
  boost::system::error_code ignored;
  stream.shutdown(ignored);
  return {name, std::string(reinterpret_cast<const char*>(alpn), alpn_length)};
}

}  // namespace

TEST_CASE("kube: HTTPS offers http/1.1 only and reloads a changed certificate") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-tls-" + std::to_string(getpid()));
  boost::asio::io_context io;
  HttpServerOptions options = LoopbackTls(dir);
  options.cert_check_period = std::chrono::milliseconds(20);
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  std::pair<std::string, std::string> before, after;
  std::thread client([&] {
    before = Presented(server.port());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    WriteFile(dir + "/tls.key", kKeyB);  // a new pair, written as a secret update would
    WriteFile(dir + "/tls.crt", kCertB);
    std::filesystem::last_write_time(
        dir + "/tls.crt",
        std::filesystem::last_write_time(dir + "/tls.crt") + std::chrono::seconds(1));
    for (int i = 0; i < 200 && after.first != "cert-b"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      after = Presented(server.port());
    }
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  std::filesystem::remove_all(dir);
  CHECK(before == std::pair<std::string, std::string>{"cert-a", "http/1.1"});
  CHECK(after == std::pair<std::string, std::string>{"cert-b", "http/1.1"});
  HttpServerOptions missing;
  missing.address = "127.0.0.1";
  missing.port = 0;
  missing.cert_file = "/nonexistent.crt";
  missing.key_file = "/nonexistent.key";
  CHECK(HttpServer(io, missing, {}).Start().code() == StatusCode::kInvalidConfig);
}

TEST_CASE("kube: a client that sends nothing is disconnected after the read timeout") {
  boost::asio::io_context io;
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.read_timeout = std::chrono::milliseconds(100);
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  bool closed = false;
  std::thread client([&] {
    boost::asio::io_context client_io;
    tcp::socket socket(client_io);
    socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), server.port()));
    socket.write_some(
        boost::asio::buffer(std::string_view("POST /filter HTTP/1.1\r\n")));  // and then nothing
    char byte = 0;
    boost::system::error_code ec;
    socket.read_some(boost::asio::buffer(&byte, 1),
                     ec);  // returns when the server closes (else hangs)
    closed = ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  CHECK(closed);
}

// --- The HTTP server: client certificates, timeouts, limits ---

namespace {

// Client certificates (CN client-ok, client-other), valid for 100 years:
// client-ok signed by cert-b's key, client-other by cert-a's.
constexpr std::string_view kClientOkCert = R"pem(-----BEGIN CERTIFICATE-----
MIIBizCCATGgAwIBAgIUCjXUcb2FmiqOXWtMLWIIbhj9uaIwCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGY2VydC1iMCAXDTI2MTEyNjE3NDAyM1oYDzIxMjYxMTAyMTc0
MDIzWjAUMRIwEAYDVQQDDAljbGllbnQtb2swWTATBgcqhkjOPQIBBggqhkjOPQMB
BwNCAASCbk4fB7HZfixPpm9jp7U9RmejRQaJamSXa8nXRRX9cMUfp7Jf71T7xVpz
wMZ+gQJEDCqjzQWw2r5OX+eHsz3vo2IwYDAJBgNVHRMEAjAAMBMGA1UdJQQMMAoG
CCsGAQUFBwMCMB0GA1UdDgQWBBTrXkZcW1r3kMngbg7lesbpFLenPTAfBgNVHSME
GDAWgBTqLXOxMgDShRGXVcr87ScONdPGbTAKBggqhkjOPQQDAgNIADBFAiBK+DBj
Scm5DzCmHCdKGYmI8Ot3NrqHEBeV39wH/SzaFgIhAKuzZ2tNolQM06FasDiXq1oz
Oc0Ok6UdnczlJMP6rf2N
-----END CERTIFICATE-----
)pem";
constexpr std::string_view kClientOkKey = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgUOk7Trtn2ewBF5CZ
r5nVKluVX6IcWN34Dpc8VvkcYeGhRANCAASCbk4fB7HZfixPpm9jp7U9RmejRQaJ
amSXa8nXRRX9cMUfp7Jf71T7xVpzwMZ+gQJEDCqjzQWw2r5OX+eHsz3v
-----END PRIVATE KEY-----
)pem";
constexpr std::string_view kClientOtherCert = R"pem(-----BEGIN CERTIFICATE-----
MIIBjzCCATSgAwIBAgIUGjOsdmmFyKcTXsXVlKPyZ4V8ISowCgYIKoZIzj0EAwIw
ETEPMA0GA1UEAwwGY2VydC1hMCAXDTI2MTEyNjE3NDAyNFoYDzIxMjYxMTAyMTc0
MDI0WjAXMRUwEwYDVQQDDAxjbGllbnQtb3RoZXIwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAQhck630TAvTX/DnhUl0N6DoHUqbNTeVC8NCA14MCHOdKhlW/Y71ZGy
ipJKWXfWpuR5T4VCeH8apsMt1pNQoAqAo2IwYDAJBgNVHRMEAjAAMBMGA1UdJQQM
MAoGCCsGAQUFBwMCMB0GA1UdDgQWBBR9LOVnKRDB76wv0Pal5/MAjEfwpjAfBgNV
HSMEGDAWgBQK0+HhiZyNgxjyFx+snMX/jvoWwzAKBggqhkjOPQQDAgNJADBGAiEA
tCncmP4VAXIH7FDMXjABadGbRSBqy3RZyYNPXdHu1aECIQChya4XzRqRXjkVjDb+
8WL4vISet34o/XRlqhYnv5Cwyg==
-----END CERTIFICATE-----
)pem";
constexpr std::string_view kClientOtherKey = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgxj3diTxa6Wba7oNl
rIUkLpxoiFmJ/PfbkotdfpQnbO6hRANCAAQhck630TAvTX/DnhUl0N6DoHUqbNTe
VC8NCA14MCHOdKhlW/Y71ZGyipJKWXfWpuR5T4VCeH8apsMt1pNQoAqA
-----END PRIVATE KEY-----
)pem";

// The status a loopback HTTPS server on `port` answers GET / with, the client
// presenting `cert` and `key` (none when empty); 0: no answer. (With TLS 1.3
// the client's handshake ends before the server checks its certificate, so
// a refusal can show only at the read.)
int StatusWithClientCert(std::uint16_t port, std::string_view cert, std::string_view key) {
  boost::asio::io_context io;
  boost::asio::ssl::context context(boost::asio::ssl::context::tls_client);
  context.set_verify_mode(boost::asio::ssl::verify_none);
  if (!cert.empty()) {
    context.use_certificate(boost::asio::buffer(cert), boost::asio::ssl::context::pem);
    context.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
  }
  boost::asio::ssl::stream<tcp::socket> stream(io, context);
  stream.next_layer().connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  boost::system::error_code ec;
  stream.handshake(boost::asio::ssl::stream_base::client, ec);
  if (ec) return 0;
  http::request<http::empty_body> req(http::verb::get, "/", 11);
  req.set(http::field::host, "localhost");
  http::write(stream, req, ec);
  if (ec) return 0;
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res, ec);
  return ec ? 0 : static_cast<int>(res.result_int());
}

// A connection to a loopback server on `port`, from another thread.
tcp::socket Connect(boost::asio::io_context& io, std::uint16_t port) {
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  return socket;
}

// Reads until the server closes `socket`; what it sent, and how long that took.
std::pair<std::string, std::chrono::milliseconds> UntilClosed(tcp::socket& socket) {
  const auto start = std::chrono::steady_clock::now();
  std::string got;
  char chunk[4096];
  boost::system::error_code ec;
  while (!ec) {
    const std::size_t n = socket.read_some(boost::asio::buffer(chunk), ec);
    got.append(chunk, n);
  }
  return {got, std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - start)};
}

}  // namespace

TEST_CASE("kube: with client_ca_file, HTTPS serves only clients with a certificate its CA signed") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-mtls-" + std::to_string(getpid()));
  boost::asio::io_context io;
  HttpServerOptions options = LoopbackTls(dir);
  WriteFile(dir + "/ca.crt", kCertB);
  options.client_ca_file = dir + "/ca.crt";
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  int signed_by_ca = -1, without = -1, other_ca = -1;
  std::thread client([&] {
    signed_by_ca = StatusWithClientCert(server.port(), kClientOkCert, kClientOkKey);
    without = StatusWithClientCert(server.port(), "", "");
    other_ca = StatusWithClientCert(server.port(), kClientOtherCert, kClientOtherKey);
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  CHECK(signed_by_ca == 200);
  CHECK(without == 0);
  CHECK(other_ca == 0);

  // A CA file without a certificate and key, missing or holding no
  // certificate is a configuration error.
  HttpServerOptions plain = Loopback();
  plain.client_ca_file = dir + "/ca.crt";
  CHECK(HttpServer(io, plain, {}).Start().code() == StatusCode::kInvalidConfig);
  HttpServerOptions missing = LoopbackTls(dir);
  missing.client_ca_file = dir + "/nonexistent.crt";
  CHECK(HttpServer(io, missing, {}).Start().code() == StatusCode::kInvalidConfig);
  WriteFile(dir + "/empty.crt", "not a certificate\n");
  HttpServerOptions empty = LoopbackTls(dir);
  empty.client_ca_file = dir + "/empty.crt";
  CHECK(HttpServer(io, empty, {}).Start().code() == StatusCode::kInvalidConfig);
  std::filesystem::remove_all(dir);
}

TEST_CASE("kube: HTTPS reloads a changed client CA file for new connections") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-mtls2-" + std::to_string(getpid()));
  boost::asio::io_context io;
  HttpServerOptions options = LoopbackTls(dir);
  WriteFile(dir + "/ca.crt", kCertB);
  options.client_ca_file = dir + "/ca.crt";
  options.cert_check_period = std::chrono::milliseconds(20);
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  int before = -1, after = -1;
  std::thread client([&] {
    before = StatusWithClientCert(server.port(), kClientOtherCert, kClientOtherKey);
    WriteFile(dir + "/ca.crt", kCertA);  // now the CA that signed client-other
    std::filesystem::last_write_time(
        dir + "/ca.crt",
        std::filesystem::last_write_time(dir + "/ca.crt") + std::chrono::seconds(1));
    for (int i = 0; i < 200 && after != 200; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      after = StatusWithClientCert(server.port(), kClientOtherCert, kClientOtherKey);
    }
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  std::filesystem::remove_all(dir);
  CHECK(before == 0);
  CHECK(after == 200);
}

TEST_CASE("kube: the HTTP server closes silent, slow and idle connections by their deadlines") {
  boost::asio::io_context io;
  HttpServerOptions options = Loopback();
  options.header_timeout = std::chrono::milliseconds(200);
  options.read_timeout = std::chrono::milliseconds(1000);
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  std::chrono::milliseconds silent{}, slow_header{}, slow_body{}, kept_alive{};
  std::string kept_alive_got;
  std::thread client([&] {
    boost::asio::io_context client_io;
    // Sends nothing: closed at the header timeout.
    tcp::socket a = Connect(client_io, server.port());
    silent = UntilClosed(a).second;
    // A header byte every 50 ms: still closed at the header timeout.
    tcp::socket b = Connect(client_io, server.port());
    std::thread trickle([&] {
      boost::system::error_code ec;
      const std::string header = "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaa";
      for (std::size_t i = 0; i < header.size() && !ec; ++i) {
        boost::asio::write(b, boost::asio::buffer(header.data() + i, 1), ec);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    slow_header = UntilClosed(b).second;
    trickle.join();
    // The header at once, the body never: closed at the read timeout.
    tcp::socket c = Connect(client_io, server.port());
    boost::asio::write(
        c, boost::asio::buffer(std::string_view("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n{")));
    slow_body = UntilClosed(c).second;
    // One request answered, then nothing: closed at the read timeout.
    tcp::socket d = Connect(client_io, server.port());
    boost::asio::write(d, boost::asio::buffer(std::string_view("GET / HTTP/1.1\r\n\r\n")));
    std::tie(kept_alive_got, kept_alive) = UntilClosed(d);
    boost::asio::post(io, [&] { server.Stop(); });
  });
  io.run();
  client.join();
  CHECK(silent.count() >= 150);
  CHECK(silent.count() < 800);
  CHECK(slow_header.count() >= 150);
  CHECK(slow_header.count() < 800);
  CHECK(slow_body.count() >= 900);
  CHECK(slow_body.count() < 2000);
  CHECK(kept_alive_got.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(kept_alive.count() >= 900);
  CHECK(kept_alive.count() < 2000);
}

TEST_CASE("kube: the HTTP server answers 431 over header_limit and closes beyond max_connections") {
  boost::asio::io_context io;
  HttpServerOptions options = Loopback();
  options.header_limit = 1024;
  options.max_connections = 2;
  HttpServer server(io, options, [](HttpRequest, Responder respond) { respond(HttpResponse{}); });
  REQUIRE(server.Start().ok());
  std::string too_large, beyond, after;
  bool stopped_with_idle_open = false;
  std::thread client([&] {
    boost::asio::io_context client_io;
    tcp::socket a = Connect(client_io, server.port());
    boost::asio::write(
        a, boost::asio::buffer("GET / HTTP/1.1\r\nX-Big: " + std::string(2048, 'a') + "\r\n\r\n"));
    too_large = UntilClosed(a).first;
    // Two idle connections fill the server; a third is closed unanswered.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    tcp::socket b = Connect(client_io, server.port());
    tcp::socket c = Connect(client_io, server.port());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    tcp::socket d = Connect(client_io, server.port());
    boost::system::error_code ignored;
    boost::asio::write(d, boost::asio::buffer(std::string_view("GET / HTTP/1.1\r\n\r\n")), ignored);
    beyond = UntilClosed(d).first;
    // Once one goes, a new connection is served.
    b.close();
    for (int i = 0; i < 50 && after.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      tcp::socket e = Connect(client_io, server.port());
      boost::asio::write(
          e, boost::asio::buffer(std::string_view("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")),
          ignored);
      after = UntilClosed(e).first.substr(0, 12);
      if (after != "HTTP/1.1 200") after.clear();
    }
    // Stop closes the idle connection c, which never sent a byte.
    boost::asio::post(io, [&] { server.Stop(); });
    stopped_with_idle_open = UntilClosed(c).second.count() < 1000;
  });
  io.run();
  client.join();
  CHECK(too_large.rfind("HTTP/1.1 431", 0) == 0);
  CHECK(too_large.find("request header over 1024 bytes") != std::string::npos);
  CHECK(beyond.empty());
  CHECK(after == "HTTP/1.1 200");
  CHECK(stopped_with_idle_open);
}
