// The API client's connections (lib/kube/src/http_exchange.hpp): kept-alive
// connections reused, the connection limit, TLS sessions resumed.
#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devshare/kube/api_client.hpp"
#include "devshare/kube/http_server.hpp"
#include "kube/fake_api.hpp"
#include "kube/kube_fixtures.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::Loopback;
using devshare::kube::fixtures::LoopbackTls;

namespace {

// `count` requests of an API client to a loopback server made with
// `options` (HTTPS when it has a certificate, not verified), in `at_once`
// chains, each request `pause` after the previous answer of its chain.
// Returns the statuses and what the client did with connections.
std::pair<std::vector<int>, ApiConnectionStats> RequestsInTurn(
    const HttpServerOptions& options, int count, std::chrono::milliseconds pause, int at_once = 1,
    std::size_t max_connections = 32, int pause_every = 1) {
  boost::asio::io_context io;
  HttpServer server(io, options, [](HttpRequest, Responder respond) {
    respond(HttpResponse{200, "application/json", "{}", {}});
  });
  REQUIRE(server.Start().ok());
  ClusterAccess access;
  access.host = "127.0.0.1";
  access.port = std::to_string(server.port());
  access.https = !options.cert_file.empty();
  access.insecure = true;
  ApiClientOptions client_options;
  client_options.qps = 1e6;
  client_options.burst = 1000;
  client_options.timeout = std::chrono::milliseconds(5000);
  client_options.max_connections = max_connections;
  ApiClient client(io, access, client_options, nullptr);
  REQUIRE(client.Start().ok());
  std::vector<int> statuses;
  int sent = 0;
  std::function<void()> next = [&] {
    if (sent == count) return;
    ++sent;
    client.Call("get", "GET", "/api/v1/nodes", "", "", [&](ApiResponse r) {
      statuses.push_back(r.status);
      if (static_cast<int>(statuses.size()) == count) {
        client.Stop();
        server.Stop();
        return;
      }
      const bool pausing = statuses.size() % static_cast<std::size_t>(pause_every) == 0;
      auto timer = std::make_shared<boost::asio::steady_timer>(
          io, pausing ? pause : std::chrono::milliseconds(0));
      timer->async_wait([&, timer](boost::system::error_code) { next(); });
    });
  };
  for (int i = 0; i < at_once; ++i) next();
  io.run();
  return {statuses, client.connection_stats()};
}

}  // namespace

TEST_CASE("kube: API requests reuse a kept-alive connection, and a closed one is replaced") {
  HttpServerOptions options = Loopback();
  options.read_timeout = std::chrono::milliseconds(5000);
  auto [statuses, stats] = RequestsInTurn(options, 4, std::chrono::milliseconds(0));
  CHECK(statuses == std::vector<int>{200, 200, 200, 200});
  CHECK(stats.opened == 1);
  CHECK(stats.reused == 3);

  // The server closes idle connections after 50 ms: every request after a
  // 200 ms pause finds its kept connection closed, and goes again on a new one.
  options.read_timeout = std::chrono::milliseconds(50);
  std::tie(statuses, stats) = RequestsInTurn(options, 4, std::chrono::milliseconds(200));
  CHECK(statuses == std::vector<int>{200, 200, 200, 200});
  CHECK(stats.opened == 4);
  CHECK(stats.reused == 3);
}

TEST_CASE("kube: API requests beyond the connection limit wait for a free connection") {
  auto [statuses, stats] =
      RequestsInTurn(Loopback(), 24, std::chrono::milliseconds(0), /*at_once=*/8,
                     /*max_connections=*/3);
  CHECK(statuses == std::vector<int>(24, 200));
  CHECK(stats.opened == 3);
  CHECK(stats.reused == 21);
}

TEST_CASE("kube: a new TLS connection to the API server resumes the last session") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-resume-" + std::to_string(getpid()));
  HttpServerOptions options = LoopbackTls(dir);
  options.read_timeout = std::chrono::milliseconds(50);  // idle connections closed
  const auto [statuses, stats] = RequestsInTurn(options, 3, std::chrono::milliseconds(200));
  std::filesystem::remove_all(dir);
  CHECK(statuses == std::vector<int>{200, 200, 200});
  CHECK(stats.opened == 3);
  CHECK(stats.resumed == 2);  // the second and third handshakes resumed
}

TEST_CASE(
    "kube: a resumed TLS connection counts one resumption, however many requests it carries") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("devshare-resume2-" + std::to_string(getpid()));
  HttpServerOptions options = LoopbackTls(dir);
  options.read_timeout = std::chrono::milliseconds(50);  // idle connections closed
  // Two requests in turn on each connection, a pause after every second.
  const auto [statuses, stats] = RequestsInTurn(options, 6, std::chrono::milliseconds(200),
                                                /*at_once=*/1, /*max_connections=*/32,
                                                /*pause_every=*/2);
  std::filesystem::remove_all(dir);
  CHECK(statuses == std::vector<int>(6, 200));
  CHECK(stats.opened == 3);
  CHECK(stats.reused == 5);  // the first request after a pause tries the closed connection first
  CHECK(stats.resumed == 2);
}
