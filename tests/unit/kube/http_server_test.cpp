// The HTTP server's Responder contract (devshare/kube/http_server.hpp).
#include "devshare/kube/http_server.hpp"

#include <doctest/doctest.h>

#include "devshare/kube/api_client.hpp"
#include "kube/fake_api.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::Loopback;
using devshare::kube::fakes::Unthrottled;

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
