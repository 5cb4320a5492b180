// The API server model: token buckets, 429s and Retry-After, 409s on stale preconditions.
#include <doctest/doctest.h>

#include "sim_fixtures.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;
using namespace devshare::sim::fixtures;

TEST_CASE("sim units: API server — a replica's writes wait for its token bucket, plugins' do not") {
  ApiModel model = Exact();
  model.qps = 5;
  model.burst = 2;
  Api a(model);
  for (int i = 0; i < 3; ++i) a.api.Submit(Request{Verb::kPatchPod, 0, engine::PatchPod{}});
  a.api.Submit(Request{Verb::kPluginPod, -1, PodWrite{0, {}}});
  std::vector<std::int64_t> starts;
  while (!a.events.empty()) starts.push_back(a.events.Pop().at);
  // Two tokens at once, the third 1 / 5 s later; the plugin's at once.
  CHECK(starts == std::vector<std::int64_t>{0, 0, 0, 200});
  const Report r = a.Counted();
  CHECK(r.throttled_ms == 200);
  CHECK(r.api_calls.at("patch-pod") == 3);
  CHECK(r.api_calls.at("plugin-patch-pod") == 1);
  CHECK(r.api_calls.count("binding") == 0);  // verbs never sent are not listed
}

TEST_CASE("sim units: API server — 429 beyond the concurrency limit, retried after Retry-After") {
  ApiModel model = Exact();
  model.max_inflight = 1;
  Api a(model);
  a.api.Submit(Request{Verb::kPluginNode, -1, NodeWrite{0, {}, std::nullopt}});
  a.api.Submit(Request{Verb::kPluginNode, -1, NodeWrite{0, {}, std::nullopt}});
  const auto done = a.Serve();
  REQUIRE(done.size() == 2);
  CHECK(done[0].first == 20);    // latency
  CHECK(done[1].first == 1020);  // 429 at 0, sent again at 1 s
  CHECK(a.Counted().rejected_429 == 1);
  CHECK(a.api.node(0).resource_version == "3");  // 1 when added; each write bumps it
}

TEST_CASE(
    "sim units: API server — stale preconditions, a second Binding and a stale Lease get 409") {
  Api a;
  a.api.CreatePod(0, MakePod(PodOf("p0", 0, 0), 0));
  const AnnotationWrite lock{std::string(keys::kNodeLock), std::string("taken")};
  const AnnotationWrite absent{std::string(keys::kNodeLock), std::nullopt};
  a.api.Submit(
      Request{Verb::kPatchNode, 0, engine::PatchNode{1, "n1", {lock}, {absent}, {}, false}});
  a.api.Submit(
      Request{Verb::kPatchNode, 0, engine::PatchNode{2, "n1", {lock}, {absent}, {}, false}});
  a.api.Submit(Request{Verb::kPatchNode, 0, engine::PatchNode{3, "ghost", {lock}, {}, {}, false}});
  a.api.Submit(Request{Verb::kBinding, 0, engine::PostBinding{4, "sim", "p0", "uid-0", "n1", {}}});
  a.api.Submit(Request{Verb::kBinding, 0, engine::PostBinding{5, "sim", "p0", "uid-0", "n1", {}}});
  a.api.Submit(Request{Verb::kPatchPod, 0, engine::PatchPod{6, "sim", "nobody", {}}});
  const auto done = a.Serve();
  REQUIRE(done.size() == 6);
  std::vector<bool> ok;
  for (const auto& [at, c] : done) ok.push_back(c.ok);
  CHECK(ok == std::vector<bool>{true, false, false, true, false, false});
  CHECK(done[0].second.node == 0);
  CHECK(done[3].second.pod == 0);
  CHECK(*a.api.node(0).annotations.Find(keys::kNodeLock) == "taken");
  CHECK(a.api.pod(0).node_name == "n1");
  CHECK(a.Counted().conflicts_409 ==
        2);  // the lock taken already, the pod bound already; 404s are not 409s

  LeaseRecord lease;
  lease.holder = "a";
  a.api.Submit(
      Request{Verb::kLease, -1, LeaseWrite{ElectionDecision{ElectionAction::kCreate, lease}}});
  a.api.Submit(
      Request{Verb::kLease, -1, LeaseWrite{ElectionDecision{ElectionAction::kCreate, lease}}});
  a.Serve();
  REQUIRE(a.api.lease().has_value());
  CHECK(a.api.lease()->resource_version == "1");
  lease.resource_version = "0";  // read before the create
  a.api.Submit(
      Request{Verb::kLease, -1, LeaseWrite{ElectionDecision{ElectionAction::kRenew, lease}}});
  lease.resource_version = "1";
  a.api.Submit(
      Request{Verb::kLease, -1, LeaseWrite{ElectionDecision{ElectionAction::kRenew, lease}}});
  const auto leases = a.Serve();
  CHECK_FALSE(leases.at(0).second.ok);
  CHECK(leases.at(1).second.ok);
  CHECK(a.api.lease()->resource_version == "2");
  CHECK(a.Counted().conflicts_409 == 4);
}
