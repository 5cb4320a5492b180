// `devshare serve`'s routes: which route a request asks for
// (lib/kube/src/service_routes.hpp), and a Service answering them over a
// fake API server.
#include "src/service_routes.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "devshare/kube/service.hpp"
#include "kube/fake_api.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::FakeApi;
using devshare::kube::fakes::Unthrottled;

namespace {

// The route matched, or "<status> <body>" of the refusal.
std::string Match(std::string method, std::string target, bool trusted = true) {
  std::variant<ServiceRoute, HttpResponse> m =
      MatchRoute(HttpRequest{std::move(method), std::move(target), "", "", ""}, trusted, "[::1]:9");
  if (const HttpResponse* r = std::get_if<HttpResponse>(&m))
    return fmt::format("{} {}", r->status, r->body);
  switch (std::get<ServiceRoute>(m)) {
    case ServiceRoute::kFilter:
      return "filter";
    case ServiceRoute::kPrioritize:
      return "prioritize";
    case ServiceRoute::kBind:
      return "bind";
    case ServiceRoute::kPreempt:
      return "preempt";
    case ServiceRoute::kWebhook:
      return "webhook";
    case ServiceRoute::kAudit:
      return "audit";
    case ServiceRoute::kHealthz:
      return "healthz";
    case ServiceRoute::kReadyz:
      return "readyz";
    case ServiceRoute::kAdmissionReadyz:
      return "admission-readyz";
    case ServiceRoute::kMetrics:
      return "metrics";
  }
  return "?";
}

}  // namespace

TEST_CASE("kube routes: the path's last segment names the route, under any prefix") {
  CHECK(Match("POST", "/filter") == "filter");
  CHECK(Match("POST", "/scheduler/filter") == "filter");
  CHECK(Match("POST", "/scheduler/filter/") == "filter");
  CHECK(Match("POST", "/x/prioritize?debug=1") == "prioritize");
  CHECK(Match("POST", "/bind") == "bind");
  CHECK(Match("POST", "/scheduler/preempt") == "preempt");
  CHECK(Match("POST", "/webhook") == "webhook");
  CHECK(Match("GET", "/debug/audit") == "audit");
  CHECK(Match("GET", "/healthz") == "healthz");
  CHECK(Match("GET", "/readyz") == "readyz");
  CHECK(Match("GET", "/readyz/admission") == "admission-readyz");
  CHECK(Match("GET", "/readyz/admission?verbose") == "admission-readyz");
  CHECK(Match("GET", "/metrics") == "metrics");
  // /readyz/admission is matched whole; "admission" alone is no route.
  CHECK(Match("GET", "/x/readyz/admission") == R"(404 {"error":"no route /x/readyz/admission"})");
  CHECK(Match("GET", "/") == R"(404 {"error":"no route /"})");
  CHECK(Match("POST", "/filters") == R"(404 {"error":"no route /filters"})");
}

TEST_CASE(
    "kube routes: wrong methods are 405, the extender's routes 403 where callers are unknown") {
  CHECK(Match("GET", "/filter") == R"(405 {"error":"use POST"})");
  CHECK(Match("PUT", "/webhook") == R"(405 {"error":"use POST"})");
  CHECK(Match("POST", "/healthz") == R"(405 {"error":"use GET"})");
  CHECK(Match("POST", "/debug/audit") == R"(405 {"error":"use GET"})");
  CHECK(Match("DELETE", "/readyz/admission") == R"(405 {"error":"use GET"})");
  for (const char* route : {"/filter", "/prioritize", "/bind", "/preempt"}) {
    CHECK(Match("POST", route, false) ==
          fmt::format(R"(403 {{"error":"{} is served only on the extender listener ([::1]:9), not )"
                      R"(on one the network reaches"}})",
                      route));
  }
  // Before the method: an untrusted caller learns nothing more.
  CHECK(Match("GET", "/debug/audit", false).starts_with("403 "));
  CHECK(Match("GET", "/filter", false).starts_with("403 "));
  CHECK(Match("POST", "/webhook", false) == "webhook");
  CHECK(Match("GET", "/healthz", false) == "healthz");
  CHECK(Match("GET", "/metrics", false) == "metrics");
}

TEST_CASE("kube routes: a Service answers its routes once the cluster cache is synced") {
  boost::asio::io_context io;
  // An empty cluster: every list is empty, every watch waits.
  FakeApi api(io, [](const HttpRequest& r) -> std::optional<HttpResponse> {
    if (r.target.find("watch=1") != std::string::npos) return std::nullopt;
    return HttpResponse{
        200, "application/json", R"({"metadata":{"resourceVersion":"1"},"items":[]})", {}};
  });
  ServiceOptions options;
  options.http.address = "0.0.0.0";  // a listener the network reaches: not the extender's
  options.http.port = 0;
  options.audit_period = std::chrono::milliseconds(0);
  options.api = Unthrottled();
  options.hostname = "test";
  Service service(io, api.Access(), options);
  REQUIRE(service.Start().ok());

  ClusterAccess to_service;
  to_service.host = "127.0.0.1";
  to_service.port = std::to_string(service.port());
  to_service.https = false;
  ApiClient client(io, to_service, Unthrottled(), nullptr);
  REQUIRE(client.Start().ok());

  struct Ask {
    std::string method, target, body;
  };
  const std::vector<Ask> asks = {
      {"GET", "/healthz", ""},          {"POST", "/healthz", ""},
      {"GET", "/nowhere", ""},          {"POST", "/scheduler/filter", "{}"},
      {"POST", "/webhook", "not json"}, {"GET", "/metrics", ""},
  };
  std::map<std::string, std::string> answers;
  std::function<void(std::size_t)> ask = [&](std::size_t i) {
    if (i == asks.size()) {
      client.Stop();
      service.Stop();
      api.Stop();
      return;
    }
    client.Call("probe", asks[i].method, asks[i].target, "application/json", asks[i].body,
                [&, i](const ApiResponse& r) {
                  answers[asks[i].method + " " + asks[i].target] =
                      fmt::format("{} {}", r.status, r.body);
                  ask(i + 1);
                });
  };
  // /readyz/admission: 503 until the nodes and pods are listed.
  int polls = 0;
  std::function<void()> poll = [&] {
    client.Call("probe", "GET", "/readyz/admission", "", "", [&](const ApiResponse& r) {
      if (r.status == 200 || ++polls == 3000) return ask(0);  // 30 s
      auto timer = std::make_shared<boost::asio::steady_timer>(io, std::chrono::milliseconds(10));
      timer->async_wait([&, timer](boost::system::error_code) { poll(); });
    });
  };
  poll();
  io.run();

  CHECK(polls < 3000);
  CHECK(answers["GET /healthz"] == "200 ok");
  CHECK(answers["POST /healthz"] == R"(405 {"error":"use GET"})");
  CHECK(answers["GET /nowhere"] == R"(404 {"error":"no route /nowhere"})");
  CHECK(answers["POST /scheduler/filter"].starts_with(
      R"(403 {"error":"/scheduler/filter is served only on the extender listener)"));
  CHECK(answers["POST /webhook"].starts_with("400 "));
  CHECK(answers["GET /metrics"].starts_with("200 "));
}
