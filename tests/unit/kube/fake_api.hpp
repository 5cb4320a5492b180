// A fake Kubernetes API server for the adapter's unit tests: a loopback
// HttpServer answering each request from a script, and recording it.
#ifndef DEVSHARE_TESTS_KUBE_FAKE_API_HPP_
#define DEVSHARE_TESTS_KUBE_FAKE_API_HPP_

#include <doctest/doctest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "devshare/kube/api_client.hpp"
#include "devshare/kube/http_server.hpp"

namespace devshare::kube::fakes {

// A plain-HTTP listener on 127.0.0.1, on any free port.
inline HttpServerOptions Loopback() {
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  return options;
}

// An API server on loopback whose answers come from `answer` (nullopt: the
// request is held, as a watch is, until Stop answers it 200 with no body);
// `requests` holds every request in the order it came. Started by the
// constructor.
class FakeApi {
 public:
  using Answer = std::function<std::optional<HttpResponse>(const HttpRequest&)>;
  FakeApi(boost::asio::io_context& io, Answer answer)
      : server_(io, Loopback(),
                [this, answer = std::move(answer)](HttpRequest r, Responder respond) {
                  requests.push_back(r);
                  if (std::optional<HttpResponse> a = answer(r)) return respond(std::move(*a));
                  held_.push_back(std::move(respond));
                }) {
    REQUIRE(server_.Start().ok());
  }
  // The cluster access of a client of this server (plain HTTP).
  ClusterAccess Access() const {
    ClusterAccess access;
    access.host = "127.0.0.1";
    access.port = std::to_string(server_.port());
    access.server = "http://127.0.0.1:" + access.port;
    access.https = false;
    return access;
  }
  void Stop() {
    for (Responder& respond : held_) respond(HttpResponse{200, "application/json", "", {}, true});
    held_.clear();
    server_.Stop();
  }

  std::vector<HttpRequest> requests;

 private:
  std::vector<Responder> held_;
  HttpServer server_;
};

// A client without throttling that would matter to a test.
inline ApiClientOptions Unthrottled() {
  ApiClientOptions o;
  o.qps = 1e6;
  o.burst = 1000;
  return o;
}

}  // namespace devshare::kube::fakes

#endif  // DEVSHARE_TESTS_KUBE_FAKE_API_HPP_
