// dra::PlanClaimPreemption: PlanPreemption's victims and ranking with the
// DRA placer as the judge (devshare/dra_preemption.hpp).
#include "devshare/dra_preemption.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "dra_snapshot_fixtures.hpp"
#include "testutil.hpp"

using namespace devshare;
using namespace devshare::dra;
using namespace devshare::dra::testing;
using devshare::testing::MakePod;

namespace {

// node-a and node-b, each with two shared GPUs (dra_snapshot_fixtures), the
// pods holding shares of them, and a binpack placer.
struct Cluster {
  Cluster() : snapshot(TwoNodes()), placer(Binpack()) {}

  static Placer Binpack() {
    Result<Placer> placer = Placer::Make(PlacerOptions{Policy::kBinpack, {}, false});
    REQUIRE(placer.ok());
    return std::move(*placer);
  }

  // A pod of `priority` bound to `node`, started at second `started`,
  // holding a claim of `cores` percent of GPU `gpu` there, reserved for it.
  // False when the GPU has no room for it.
  bool Hold(const std::string& name, const std::string& node, int gpu, std::int64_t cores,
            std::int64_t priority, int started = 0) {
    ResourceClaim claim = Share(name, cores);
    claim.spec.requests[0].exactly->selectors = {
        fmt::format("device.attributes['gpu.example.com'].minor == {}", gpu)};
    Result<std::optional<std::vector<Allocation>>> a = snapshot.AllocateClaims({claim}, node);
    REQUIRE(a.ok());
    if (!*a) return false;
    claim.allocation = (**a)[0];
    claim.reserved_for = {ClaimConsumer{"", "pods", name, "uid-" + name}};
    snapshot.AddResourceClaim(claim);
    Pod p = MakePod(name).BoundTo(node);
    p.priority = priority;
    p.start_time = fmt::format("2026-11-28T10:{:02}:{:02}Z", started / 60, started % 60);
    pods.push_back(std::move(p));
    return true;
  }

  PreemptionPlan Plan(const Pod& pod, const std::vector<ResourceClaim>& claims,
                      std::span<const PodDisruptionBudget> budgets = {}) {
    Result<PreemptionPlan> plan =
        PlanClaimPreemption(snapshot, placer, pod, claims, {}, pods, budgets, ServedClasses{"gpu"});
    REQUIRE(plan.ok());
    return std::move(*plan);
  }

  // Whether `claims` fit on `node` once the claims reserved for the pods
  // named `gone` alone are released.
  bool FitsWithout(const std::vector<ResourceClaim>& claims, const std::string& node,
                   const std::vector<std::string>& gone) {
    ClusterSnapshot work = snapshot;
    for (const ResourceClaim* c : snapshot.ResourceClaims()) {
      const bool released =
          !c->reserved_for.empty() &&
          std::all_of(c->reserved_for.begin(), c->reserved_for.end(), [&](const ClaimConsumer& r) {
            return std::find(gone.begin(), gone.end(), r.name) != gone.end();
          });
      if (released) work.RemoveResourceClaim(c->claim_namespace, c->name);
    }
    Result<std::optional<NodeFit>> fit = placer.Fit(work, claims, {}, node);
    REQUIRE(fit.ok());
    return fit->has_value();
  }

  ClusterSnapshot snapshot;
  Placer placer;
  std::vector<Pod> pods;
};

Pod Preemptor(std::int64_t priority = 100) {
  Pod p = MakePod("urgent");
  p.priority = priority;
  p.resource_claims = {PodResourceClaim{"gpu", "want", "", ""}};
  return p;
}

std::vector<std::string> Names(const PreemptionCandidate& c) {
  std::vector<std::string> out;
  for (const PreemptionVictim& v : c.victims) out.push_back(v.name);
  return out;
}

}  // namespace

TEST_CASE("dra preemption: the fewest lower-priority holders go; the freed devices are the pod's") {
  Cluster c;
  REQUIRE(c.Hold("a0", "node-a", 0, 60, 0));
  REQUIRE(c.Hold("a1", "node-a", 1, 60, 5));
  REQUIRE(c.Hold("b0", "node-b", 0, 60, 50));
  REQUIRE(c.Hold("b1", "node-b", 1, 60, 200));  // higher: never a victim
  const std::vector<ResourceClaim> want = {Share("want", 50)};
  const std::size_t claims_before = c.snapshot.resource_claim_count();
  PreemptionPlan plan = c.Plan(Preemptor(), want);
  CHECK(plan.refused.empty());
  CHECK(plan.unresolvable.empty());
  REQUIRE(plan.candidates.size() == 2);
  // node-a: a1 (more important) is given back first and reprieved; a0
  // goes. node-b: b0 goes. The lower most important victim wins: node-a.
  const PreemptionCandidate& chosen = *plan.chosen();
  CHECK(chosen.node == "node-a");
  CHECK(Names(chosen) == Strings{"a0"});
  CHECK(chosen.victims[0].priority == 0);
  CHECK(chosen.devices.empty());
  REQUIRE(chosen.allocations.size() == 1);
  CHECK(chosen.allocations[0].devices.at(0).device == "gpu-0");
  CHECK(chosen.allocations[0].devices.at(0).consumed_capacity.at("cores") == Q(50));
  CHECK(plan.candidates[1].node == "node-b");
  CHECK(Names(plan.candidates[1]) == Strings{"b0"});
  // The snapshot given is left as it was.
  CHECK(c.snapshot.resource_claim_count() == claims_before);
  CHECK(c.snapshot.FindResourceClaim("default", "a0")->allocation);
}

TEST_CASE("dra preemption: refusals, equal priority, shared claims, excluded nodes") {
  Cluster c;
  REQUIRE(c.Hold("a0", "node-a", 0, 60, 100));  // equal priority
  REQUIRE(c.Hold("a1", "node-a", 1, 60, 0));
  REQUIRE(c.Hold("b0", "node-b", 0, 60, 0));
  REQUIRE(c.Hold("b1", "node-b", 1, 60, 0));
  const std::vector<ResourceClaim> want = {Share("want", 50)};
  Pod never = Preemptor();
  never.preemption_policy = "Never";
  CHECK(c.Plan(never, want).refused == "its preemptionPolicy is Never");
  CHECK(c.Plan(Preemptor(), {}).refused == "it has no claim to allocate");
  CHECK(c.Plan(Preemptor(), {Share("want", 40)}).refused ==
        "its claims fit on node-a without preemption");

  // b1's claim is shared with a pod of higher priority: releasing b1 frees
  // nothing of it.
  ResourceClaim shared = *c.snapshot.FindResourceClaim("default", "b1");
  shared.reserved_for.push_back(ClaimConsumer{"", "pods", "vip", "uid-vip"});
  c.snapshot.AddResourceClaim(shared);
  // A pod no node may take: every node is unresolvable, saying why.
  Pod picky = Preemptor();
  picky.node_selector.Set("zone", "z2");
  PreemptionPlan nowhere = c.Plan(picky, want);
  CHECK(nowhere.candidates.empty());
  REQUIRE(nowhere.unresolvable.size() == 2);
  CHECK(nowhere.unresolvable[0].node == "node-a");

  PreemptionPlan plan = c.Plan(Preemptor(), {Share("want", 90)});
  // node-a: only a1 is lower; its GPU frees. node-b: b0's GPU frees (b1's
  // claim stays, held for vip).
  REQUIRE(plan.candidates.size() == 2);
  for (const PreemptionCandidate& cand : plan.candidates) {
    CAPTURE(cand.node);
    CHECK(Names(cand) == Strings{cand.node == "node-a" ? "a1" : "b0"});
  }
  // With 100 cores asked, node-a has none to free with a0 staying, and
  // node-b none with b1's claim held.
  PreemptionPlan whole = c.Plan(Preemptor(), {Share("want", 100), Share("more", 100)});
  CHECK(whole.candidates.empty());
  REQUIRE(whole.unresolvable.size() == 2);
  CHECK(whole.unresolvable[1].reason ==
        "short of devices for its claims (with every pod of lower priority gone)");
}

TEST_CASE("dra preemption: PodDisruptionBudgets rank the nodes as kube-scheduler does") {
  Cluster c;
  REQUIRE(c.Hold("a0", "node-a", 0, 60, 0));
  REQUIRE(c.Hold("a1", "node-a", 1, 60, 0));
  REQUIRE(c.Hold("b0", "node-b", 0, 60, 10));
  REQUIRE(c.Hold("b1", "node-b", 1, 60, 10));
  for (Pod& p : c.pods) {
    if (p.node_name == "node-a") p.labels.Set("app", "train");
  }
  PodDisruptionBudget budget;
  budget.budget_namespace = "default";
  budget.name = "train";
  budget.selector.match_labels.Set("app", "train");
  const std::vector<ResourceClaim> want = {Share("want", 50)};
  // Without a budget node-a's lower priority wins.
  CHECK(c.Plan(Preemptor(), want).chosen()->node == "node-a");
  const PodDisruptionBudget budgets[] = {budget};
  PreemptionPlan plan = c.Plan(Preemptor(), want, budgets);
  REQUIRE(plan.candidates.size() == 2);
  CHECK(plan.candidates[0].node == "node-b");
  CHECK(plan.candidates[0].budget_violations == 0);
  CHECK(plan.candidates[1].budget_violations == 1);
  CHECK(plan.candidates[1].victims[0].violates_budget);
}

TEST_CASE("dra preemption: on random small clusters, victims are lower, sufficient and minimal") {
  std::mt19937_64 rng(20261128);
  int plans = 0;
  for (int round = 0; round < 150; ++round) {
    Cluster c;
    int pods = 0;
    for (const char* node : {"node-a", "node-b"}) {
      for (int gpu = 0; gpu < 2; ++gpu) {
        for (int k = 0; k < 3; ++k) {
          const auto cores = static_cast<std::int64_t>(10 * (1 + rng() % 5));
          c.Hold(fmt::format("p{}", pods++), node, gpu, cores,
                 static_cast<std::int64_t>(rng() % 4) * 10, static_cast<int>(rng() % 3600));
        }
      }
    }
    std::vector<ResourceClaim> want = {
        Share("want", static_cast<std::int64_t>(10 * (4 + rng() % 7)))};
    if (rng() % 3 == 0)
      want.push_back(Share("more", static_cast<std::int64_t>(10 * (1 + rng() % 6))));
    const Pod pod = Preemptor(25);
    const PreemptionPlan plan = c.Plan(pod, want);
    if (!plan.refused.empty()) continue;
    for (const PreemptionCandidate& cand : plan.candidates) {
      ++plans;
      const std::vector<std::string> victims = Names(cand);
      CHECK_FALSE(victims.empty());
      for (const PreemptionVictim& v : cand.victims) CHECK(v.priority < pod.priority);
      CHECK(cand.allocations.size() == want.size());
      CHECK(c.FitsWithout(want, cand.node, victims));
      // No proper subset of the victims would do (brute force).
      const std::size_t n = victims.size();
      for (std::size_t mask = 0; mask + 1 < (std::size_t{1} << n); ++mask) {
        std::vector<std::string> some;
        for (std::size_t i = 0; i < n; ++i) {
          if (mask & (std::size_t{1} << i)) some.push_back(victims[i]);
        }
        CHECK_FALSE(c.FitsWithout(want, cand.node, some));
      }
    }
    for (const NodeFailure& f : plan.unresolvable) {
      std::vector<std::string> lower;
      for (const Pod& p : c.pods) {
        if (p.node_name == f.node && p.priority < pod.priority) lower.push_back(p.name);
      }
      CHECK_FALSE(c.FitsWithout(want, f.node, lower));
    }
  }
  CHECK(plans > 50);
}
