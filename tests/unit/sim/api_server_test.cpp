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

TEST_CASE("sim units: API server — evictions honour a budget (429) and turn the pod terminating") {
  Api a(Exact(), {Spec("n1", 2)}, 3);
  for (std::size_t i = 0; i < 3; ++i) {
    PodSpec spec = PodOf("p" + std::to_string(i), 1, 1000);
    spec.labels.Set("app", i < 2 ? "train" : "other");
    a.api.CreatePod(i, MakePod(spec, i));
  }
  a.api.BindPod(0, "n1");
  a.api.BindPod(1, "n1");
  DisruptionBudget budget;
  budget.name = "train";
  budget.selector.match_labels.Set("app", "train");
  budget.min_available = "1";
  a.api.AddBudget(budget);
  CHECK(a.api.BudgetStatus(0).disruptions_allowed == 1);  // 2 healthy, 1 desired
  auto evict = [&](std::uint64_t id, std::size_t pod) {
    a.api.Submit(Request{Verb::kEviction, 0,
                         engine::EvictPod{id, "sim", a.api.pod(pod).name, a.api.pod(pod).uid}});
  };
  evict(1, 0);
  std::vector<std::pair<std::int64_t, Completion>> done = a.Serve();
  REQUIRE(done.size() == 1);
  CHECK(done[0].second.ok);
  CHECK(done[0].second.evicted);
  CHECK(a.api.pod(0).terminating);
  CHECK(a.api.exists(0));  // deleted after its grace period, by the coordinator
  CHECK(a.api.BudgetStatus(0).disruptions_allowed == 0);
  // The second trainer: the budget allows no more; a pod not bound, and one
  // no budget covers, go; one evicted already is a success, as a pod gone is.
  evict(2, 1);
  done = a.Serve();
  REQUIRE(done.size() == 1);
  CHECK_FALSE(done[0].second.ok);
  CHECK_FALSE(a.api.pod(1).terminating);
  CHECK(a.Counted().preemption.evictions_refused == 1);
  evict(3, 2);
  evict(4, 0);
  a.api.Submit(Request{Verb::kEviction, 0, engine::EvictPod{5, "sim", "ghost", "uid-9"}});
  done = a.Serve();
  REQUIRE(done.size() == 3);
  CHECK((done[0].second.ok && done[0].second.evicted));
  CHECK((done[1].second.ok && !done[1].second.evicted));
  CHECK((done[2].second.ok && !done[2].second.evicted));
  CHECK(a.Counted().api_calls.at("eviction") == 5);
}

TEST_CASE("sim units: API server — a nomination is kept on the pod") {
  Api a;
  a.api.CreatePod(0, MakePod(PodOf("p0", 1, 250), 0));
  a.api.Submit(Request{Verb::kNominate, 0, engine::NominatePod{"sim", "p0", "uid-0", "n1"}});
  a.api.Submit(Request{Verb::kNominate, 0, engine::NominatePod{"sim", "p0", "uid-other", "n2"}});
  const auto done = a.Serve();
  REQUIRE(done.size() == 2);
  CHECK(done[0].second.ok);
  CHECK_FALSE(done[1].second.ok);  // another pod under the name
  CHECK(a.api.nominated_node(0) == "n1");
  CHECK(a.Counted().api_calls.at("patch-pod-status") == 2);
}
