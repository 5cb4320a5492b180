// The engine's API commands as `devshare serve` executes them
// (lib/kube/src/service_commands.hpp), against a fake API server.
#include "src/service_commands.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kube/fake_api.hpp"

using namespace devshare;
using namespace devshare::kube;
using devshare::kube::fakes::FakeApi;
using devshare::kube::fakes::Unthrottled;

namespace {

constexpr const char* kClaim = "/apis/resource.k8s.io/v1/namespaces/d/resourceclaims/c";

// Claim d/c (UID cu) at `version`, with another's allocation when
// `allocated`.
std::string ClaimJson(const std::string& version, bool allocated = false) {
  const std::string status =
      allocated
          ? R"(,"status":{"allocation":{"devices":{"results":[{"request":"r","driver":"gpu.example.com","pool":"n1","device":"gpu-1"}]}}})"
          : "";
  return fmt::format(
      R"({{"metadata":{{"name":"c","namespace":"d","uid":"cu","resourceVersion":"{}"}},"spec":{{}}{}}})",
      version, status);
}

// Claim d/c at `version` as Allocating's command writes it.
std::string WrittenJson(const std::string& version) {
  return fmt::format(
      R"({{"metadata":{{"name":"c","namespace":"d","uid":"cu","resourceVersion":"{}"}},"spec":{{}},)"
      R"("status":{{"allocation":{{"devices":{{"results":[{{"request":"r","driver":"gpu.example.com","pool":"n1","device":"gpu-0"}}]}}}},)"
      R"("reservedFor":[{{"resource":"pods","name":"p","uid":"pu"}}]}}}})",
      version);
}

HttpResponse Answer(int status, std::string body) {
  return HttpResponse{status, "application/json", std::move(body), {}};
}

// The resourceVersion a PATCH body carries ("" when none).
std::string VersionIn(const HttpRequest& r) {
  boost::system::error_code ec;
  const boost::json::value body = boost::json::parse(r.body, ec);
  if (ec) return "?";
  const boost::json::value* v = body.find_pointer("/metadata/resourceVersion", ec);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

// Records what the commands report, in order: "outcome <id> <ok>" and
// "claim <resourceVersion>".
struct Sink : CommandSink {
  Sink(boost::asio::io_context& io_context, const FakeApi& api)
      : io(io_context), client(io_context, api.Access(), Unthrottled(), nullptr) {
    REQUIRE(client.Start().ok());
  }
  ApiClient& api() override { return client; }
  void Outcome(std::uint64_t id, bool ok) override {
    reports.push_back(fmt::format("outcome {} {}", id, ok));
    if (on_outcome) on_outcome();
  }
  void ClaimSeen(dra::ResourceClaim claim) override {
    reports.push_back("claim " + claim.resource_version);
  }
  void After(std::chrono::milliseconds delay, std::function<void()> then) override {
    auto timer = std::make_shared<boost::asio::steady_timer>(io, delay);
    timer->async_wait([timer, then = std::move(then)](boost::system::error_code) { then(); });
  }
  bool MayWrite() override { return may_write; }
  boost::asio::io_context& io;
  ApiClient client;
  std::vector<std::string> reports;
  std::function<void()> on_outcome;
  bool may_write = true;
};

engine::WriteClaimStatus Allocating(std::string version) {
  engine::WriteClaimStatus c;
  c.id = 7;
  c.claim_namespace = "d";
  c.name = "c";
  c.uid = "cu";
  c.resource_version = std::move(version);
  c.add_finalizer = true;
  dra::AllocatedDevice device;
  device.request = "r";
  device.driver = "gpu.example.com";
  device.pool = "n1";
  device.device = "gpu-0";
  c.allocation = dra::Allocation{{device}, std::nullopt, std::nullopt};
  c.reserved_for = {dra::ClaimConsumer{"", "pods", "p", "pu"}};
  return c;
}

// Runs `command` against a server answering with `answer`; returns the
// requests as "<method> <target> @<resourceVersion>" and the reports.
template <typename Command>
std::pair<std::vector<std::string>, std::vector<std::string>> Run(const Command& command,
                                                                  const FakeApi::Answer& answer,
                                                                  bool may_write = true) {
  boost::asio::io_context io;
  FakeApi api(io, answer);
  auto sink = std::make_shared<Sink>(io, api);
  sink->may_write = may_write;
  sink->on_outcome = [&] {
    // Whatever comes with the outcome is in the same callback; then stop.
    boost::asio::post(io, [&] {
      sink->client.Stop();
      api.Stop();
    });
  };
  RunCommand(sink, command);
  io.run();
  std::vector<std::string> requests;
  for (const HttpRequest& r : api.requests) {
    requests.push_back(r.method == "GET"
                           ? "GET " + r.target
                           : fmt::format("{} {} @{}", r.method, r.target, VersionIn(r)));
  }
  return {requests, sink->reports};
}

}  // namespace

TEST_CASE(
    "kube commands: a 409 on the claim's finalizer PATCH reads the claim and writes at its "
    "version") {
  int finalizer_patches = 0;
  auto [requests, reports] = Run(Allocating("5"), [&](const HttpRequest& r) {
    if (r.method == "GET") return Answer(200, ClaimJson("7"));
    if (r.target.ends_with("/status")) return Answer(200, ClaimJson("9", true));
    // The finalizer: the cache's version is stale once, then accepted.
    if (finalizer_patches++ == 0) return Answer(409, R"({"kind":"Status","code":409})");
    return Answer(200, ClaimJson("8"));
  });
  CHECK(requests == std::vector<std::string>{
                        fmt::format("PATCH {} @5", kClaim),
                        fmt::format("GET {}", kClaim),
                        fmt::format("PATCH {} @7", kClaim),
                        fmt::format("PATCH {}/status @8", kClaim),
                    });
  // Every claim answered reaches the cache; the status write's after the
  // outcome, so the cache ends at the version the write made.
  CHECK(reports == std::vector<std::string>{"claim 7", "claim 8", "outcome 7 true", "claim 9"});
}

TEST_CASE(
    "kube commands: a 409 on the claim's status reads it; allocated meanwhile, the write fails") {
  auto [requests, reports] = Run(Allocating("5"), [&](const HttpRequest& r) {
    if (r.method == "GET") return Answer(200, ClaimJson("9", true));  // another's allocation
    if (r.target.ends_with("/status")) return Answer(409, "{}");
    return Answer(200, ClaimJson("6"));
  });
  CHECK(requests == std::vector<std::string>{
                        fmt::format("PATCH {} @5", kClaim),
                        fmt::format("PATCH {}/status @6", kClaim),
                        fmt::format("GET {}", kClaim),
                    });
  CHECK(reports == std::vector<std::string>{"claim 6", "claim 9", "outcome 7 false"});
}

TEST_CASE("kube commands: a fourth 409 fails the claim write; a claim gone or replaced fails it") {
  // Conflicts every time: three reads, each followed by the write again,
  // then the failure.
  auto [requests, reports] = Run(Allocating("5"), [&](const HttpRequest& r) {
    if (r.method == "GET") return Answer(200, ClaimJson("7"));
    return Answer(409, "{}");
  });
  CHECK(requests.size() == 7);
  CHECK(reports == std::vector<std::string>{"claim 7", "claim 7", "claim 7", "outcome 7 false"});

  // A claim of the same name but another UID: not the claim judged.
  std::tie(requests, reports) = Run(Allocating("5"), [&](const HttpRequest& r) {
    if (r.method == "GET") {
      std::string other = ClaimJson("7");
      other.replace(other.find("\"cu\""), 4, "\"cx\"");
      return Answer(200, other);
    }
    return Answer(409, "{}");
  });
  CHECK(requests.size() == 2);
  CHECK(reports == std::vector<std::string>{"claim 7", "outcome 7 false"});

  std::tie(requests, reports) = Run(Allocating("5"), [&](const HttpRequest& r) {
    return r.method == "GET" ? Answer(404, "{}") : Answer(409, "{}");
  });
  CHECK(reports == std::vector<std::string>{"outcome 7 false"});
}

TEST_CASE(
    "kube commands: a claim status write without a known outcome is read: applied, it "
    "succeeded") {
  // The status write applied, its answer lost (a 504): the claim read
  // carries the allocation, so the room it took stays taken.
  for (int status : {500, 503, 504}) {
    CAPTURE(status);
    auto [requests, reports] = Run(Allocating("5"), [&](const HttpRequest& r) {
      if (r.method == "GET") return Answer(200, WrittenJson("9"));
      if (r.target.ends_with("/status")) return Answer(status, "{}");
      return Answer(200, ClaimJson("6"));
    });
    CHECK(requests == std::vector<std::string>{
                          fmt::format("PATCH {} @5", kClaim),
                          fmt::format("PATCH {}/status @6", kClaim),
                          fmt::format("GET {}", kClaim),
                      });
    CHECK(reports == std::vector<std::string>{"claim 6", "outcome 7 true", "claim 9"});
  }
}

TEST_CASE(
    "kube commands: a claim write without a known outcome not applied is made again; the read "
    "is tried again without an answer") {
  // The finalizer's answer is a 500 and the first read a 503: read again
  // (after 0.5 s), the claim is found still free and written at its version.
  int reads = 0;
  auto [requests, reports] = Run(Allocating("5"), [&](const HttpRequest& r) {
    if (r.method == "GET") return reads++ == 0 ? Answer(503, "{}") : Answer(200, ClaimJson("6"));
    if (r.target.ends_with("/status")) return Answer(200, WrittenJson("8"));
    return VersionIn(r) == "5" ? Answer(500, "{}") : Answer(200, ClaimJson("7"));
  });
  CHECK(requests == std::vector<std::string>{
                        fmt::format("PATCH {} @5", kClaim),
                        fmt::format("GET {}", kClaim),
                        fmt::format("GET {}", kClaim),
                        fmt::format("PATCH {} @6", kClaim),
                        fmt::format("PATCH {}/status @7", kClaim),
                    });
  CHECK(reports == std::vector<std::string>{"claim 6", "claim 7", "outcome 7 true", "claim 8"});

  // A replica that no longer leads does not write again: the claim as read,
  // then the failure.
  std::tie(requests, reports) = Run(
      Allocating("5"),
      [&](const HttpRequest& r) {
        if (r.method == "GET") return Answer(200, ClaimJson("6"));
        if (r.target.ends_with("/status")) return Answer(504, "{}");
        return Answer(200, ClaimJson("6"));
      },
      /*may_write=*/false);
  CHECK(requests.size() == 3);
  CHECK(reports == std::vector<std::string>{"claim 6", "claim 6", "outcome 7 false"});

  // Allocated by another meanwhile: the claim as read, then the failure.
  std::tie(requests, reports) = Run(Allocating("5"), [&](const HttpRequest& r) {
    if (r.method == "GET") return Answer(200, ClaimJson("9", true));
    if (r.target.ends_with("/status")) return Answer(504, "{}");
    return Answer(200, ClaimJson("6"));
  });
  CHECK(requests.size() == 3);
  CHECK(reports == std::vector<std::string>{"claim 6", "claim 9", "outcome 7 false"});
}

TEST_CASE(
    "kube commands: a release writes the status at the claim's version, its answer after the "
    "outcome") {
  engine::WriteClaimStatus release = Allocating("5");
  release.add_finalizer = false;
  release.allocation.reset();
  release.reserved_for.clear();
  auto [requests, reports] =
      Run(release, [&](const HttpRequest&) { return Answer(200, ClaimJson("6")); });
  CHECK(requests == std::vector<std::string>{fmt::format("PATCH {}/status @5", kClaim)});
  CHECK(reports == std::vector<std::string>{"outcome 7 true", "claim 6"});

  // A release is not retried on a 409 (the claim read goes to the cache):
  // the engine judges the pod again from it.
  std::tie(requests, reports) = Run(release, [&](const HttpRequest& r) {
    return r.method == "GET" ? Answer(200, ClaimJson("8", true)) : Answer(409, "{}");
  });
  CHECK(requests.size() == 2);
  CHECK(reports == std::vector<std::string>{"claim 8", "outcome 7 false"});
}

TEST_CASE("kube commands: a node lock at a stale version is read, checked and written again") {
  engine::PatchNode lock;
  lock.id = 3;
  lock.node = "n1";
  lock.resource_version = "4";
  lock.writes = {AnnotationWrite{"lock", std::string("me")}};
  lock.preconditions = {AnnotationWrite{"lock", std::nullopt}};
  auto [requests, reports] = Run(lock, [&](const HttpRequest& r) {
    if (r.method == "GET")
      return Answer(200, R"({"metadata":{"name":"n1","resourceVersion":"6","annotations":{}}})");
    return Answer(VersionIn(r) == "4" ? 409 : 200, "{}");
  });
  CHECK(requests == std::vector<std::string>{"PATCH /api/v1/nodes/n1 @4", "GET /api/v1/nodes/n1",
                                             "PATCH /api/v1/nodes/n1 @6"});
  CHECK(reports == std::vector<std::string>{"outcome 3 true"});

  // Taken meanwhile: the precondition fails, nothing is written.
  std::tie(requests, reports) = Run(lock, [&](const HttpRequest& r) {
    if (r.method == "GET")
      return Answer(
          200, R"({"metadata":{"name":"n1","resourceVersion":"6","annotations":{"lock":"x"}}})");
    return Answer(409, "{}");
  });
  CHECK(requests.size() == 2);
  CHECK(reports == std::vector<std::string>{"outcome 3 false"});
}

TEST_CASE("kube commands: the gate's removal is a strategic merge with the pod's UID") {
  engine::RemoveSchedulingGate gate{4, "d", "p", "pu"};
  std::string body, content_type;
  auto [requests, reports] = Run(gate, [&](const HttpRequest& r) {
    body = r.body;
    content_type = r.content_type;
    return Answer(200, "{}");
  });
  CHECK(requests == std::vector<std::string>{"PATCH /api/v1/namespaces/d/pods/p @"});
  CHECK(content_type == "application/strategic-merge-patch+json");
  CHECK(boost::json::parse(body) ==
        boost::json::parse(R"({"metadata":{"uid":"pu"},"spec":{"schedulingGates":[)"
                           R"({"$patch":"delete","name":"devshare.dev/dra-allocation"}]}})"));
  CHECK(reports == std::vector<std::string>{"outcome 4 true"});
}

namespace {

constexpr const char* kPod = "/api/v1/namespaces/d/pods/p";

engine::PostBinding Binding() {
  engine::PostBinding c;
  c.id = 4;
  c.pod_namespace = "d";
  c.name = "p";
  c.uid = "pu";
  c.node = "n1";
  return c;
}

// Pod d/p with `uid`, bound to `node` ("" unbound).
std::string PodJson(const std::string& uid, const std::string& node) {
  return fmt::format(R"({{"metadata":{{"name":"p","namespace":"d","uid":"{}"}},"spec":{{{}}}}})",
                     uid, node.empty() ? "" : fmt::format(R"("nodeName":"{}")", node));
}

}  // namespace

TEST_CASE("kube commands: a Binding without a known outcome reads the pod: bound there succeeds") {
  // 504, and the API server bound the pod anyway: the read says so.
  auto [requests, reports] = Run(Binding(), [&](const HttpRequest& r) {
    return r.method == "GET" ? Answer(200, PodJson("pu", "n1")) : Answer(504, "{}");
  });
  CHECK(requests == std::vector<std::string>{fmt::format("POST {}/binding @", kPod),
                                             fmt::format("GET {}", kPod)});
  CHECK(reports == std::vector<std::string>{"outcome 4 true"});

  // No answer to the read at first, then unbound: posted again, bound.
  int reads = 0, posts = 0;
  std::tie(requests, reports) = Run(Binding(), [&](const HttpRequest& r) {
    if (r.method == "GET") return reads++ == 0 ? Answer(503, "{}") : Answer(200, PodJson("pu", ""));
    return posts++ == 0 ? Answer(500, "{}") : Answer(201, "{}");
  });
  CHECK(requests.size() == 4);
  CHECK(reports == std::vector<std::string>{"outcome 4 true"});

  // A 409 after an earlier attempt landed: bound there, a success.
  std::tie(requests, reports) = Run(Binding(), [&](const HttpRequest& r) {
    return r.method == "GET" ? Answer(200, PodJson("pu", "n1")) : Answer(409, "{}");
  });
  CHECK(reports == std::vector<std::string>{"outcome 4 true"});
}

TEST_CASE(
    "kube commands: a Binding whose pod is bound elsewhere, replaced or not to be written fails") {
  for (const std::string& pod : {PodJson("pu", "n2"), PodJson("other", "n1")}) {
    CAPTURE(pod);
    auto [requests, reports] = Run(Binding(), [&](const HttpRequest& r) {
      return r.method == "GET" ? Answer(200, pod) : Answer(409, "{}");
    });
    CHECK(requests.size() == 2);
    CHECK(reports == std::vector<std::string>{"outcome 4 false"});
  }
  // Unbound after a 504, but the replica no longer leads: not posted again.
  auto [requests, reports] = Run(
      Binding(),
      [&](const HttpRequest& r) {
        return r.method == "GET" ? Answer(200, PodJson("pu", "")) : Answer(504, "{}");
      },
      /*may_write=*/false);
  CHECK(requests.size() == 2);
  CHECK(reports == std::vector<std::string>{"outcome 4 false"});
  // A plain refusal is not read: the pod is not bound.
  std::tie(requests, reports) =
      Run(Binding(), [&](const HttpRequest&) { return Answer(403, "{}"); });
  CHECK(requests.size() == 1);
  CHECK(reports == std::vector<std::string>{"outcome 4 false"});
}
