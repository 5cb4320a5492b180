// PlanPreemption: kube-scheduler's victim selection and node ranking under
// devshare's Filter (devshare/preemption.hpp).
#include "devshare/preemption.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <random>

#include "testutil.hpp"

using namespace devshare;
using devshare::testing::MakeNode;
using devshare::testing::MakePod;

namespace {

constexpr std::int64_t kNow = 1787300439;

// A pod of `priority` on `node` holding `mem` MiB of GPU `gpu` there,
// started at second `started` of an hour.
Pod Running(const std::string& name, const std::string& node, int gpu, int mem,
            std::int64_t priority, int started = 0) {
  Pod p = MakePod(name).Container(1, mem).Holding(
      node, fmt::format("{}-gpu{},NVIDIA,{},0:;", node, gpu, mem));
  p.priority = priority;
  p.start_time = fmt::format("2026-11-28T10:{:02}:{:02}Z", started / 60, started % 60);
  return p;
}

Pod Preemptor(int gpus, int mem, std::int64_t priority) {
  Pod p = MakePod("urgent").Container(gpus, mem);
  p.priority = priority;
  return p;
}

struct Cluster {
  ClusterSnapshot snapshot;
  std::vector<Pod> pods;
  void Node(const std::string& name, int gpus, int mem) {
    REQUIRE(snapshot.AddNode(MakeNode(name).Gpus(gpus, 10, mem)).ok());
  }
  void Add(Pod pod) {
    REQUIRE(snapshot.AddPod(pod).ok());
    pods.push_back(std::move(pod));
  }
  PreemptionPlan Plan(const Pod& pod, std::span<const PodDisruptionBudget> budgets = {}) {
    Result<PreemptionPlan> plan = PlanPreemption(snapshot, pod, pods, budgets, {}, kNow);
    REQUIRE(plan.ok());
    return std::move(*plan);
  }
};

std::vector<std::string> Names(const PreemptionCandidate& c) {
  std::vector<std::string> out;
  for (const PreemptionVictim& v : c.victims) out.push_back(v.name);
  return out;
}

// Whether `pod` fits on `node` once the pods named `gone` are removed.
bool FitsWithout(const Cluster& c, const Pod& pod, const std::string& node,
                 const std::vector<std::string>& gone) {
  ClusterSnapshot work = c.snapshot;
  for (const Pod& p : c.pods) {
    if (std::find(gone.begin(), gone.end(), p.name) != gone.end()) work.RemovePod(p.uid);
  }
  const std::string one[] = {node};
  Result<FilterResult> r = Filter(work, pod, one, kNow);
  REQUIRE(r.ok());
  return r->node.has_value();
}

}  // namespace

TEST_CASE("preemption: the fewest lower-priority pods go, the least important first") {
  Cluster c;
  c.Node("n1", 1, 40000);
  c.Add(Running("old-low", "n1", 0, 15000, 0, 10));
  c.Add(Running("new-low", "n1", 0, 15000, 0, 20));  // started later: less important
  c.Add(Running("peer", "n1", 0, 10000, 100));       // equal priority: never a victim
  PreemptionPlan plan = c.Plan(Preemptor(1, 12000, 100));
  CHECK(plan.refused.empty());
  REQUIRE(plan.chosen() != nullptr);
  CHECK(plan.chosen()->node == "n1");
  // Both low pods set aside, then the more important one given back: it fits
  // beside the preemptor (15000 + 10000 + 12000 <= 40000).
  CHECK(Names(*plan.chosen()) == std::vector<std::string>{"new-low"});
  CHECK(plan.chosen()->victims[0].uid == "uid-new-low");
  CHECK(plan.chosen()->budget_violations == 0);
  REQUIRE(plan.chosen()->devices.size() == 1);
  CHECK(plan.chosen()->devices[0].second[0][0].uuid == "n1-gpu0");
  CHECK(plan.chosen()->devices[0].second[0][0].usedmem == 12000);
}

TEST_CASE("preemption: nodes no eviction can help are unresolvable, with why") {
  Cluster c;
  c.Node("n1", 1, 40000);
  c.Node("n2", 1, 10000);  // too small even empty
  c.Add(Running("peer", "n1", 0, 30000, 100));
  PreemptionPlan plan = c.Plan(Preemptor(1, 20000, 100));
  CHECK(plan.candidates.empty());
  REQUIRE(plan.unresolvable.size() == 2);
  CHECK(plan.unresolvable[0].node == "n1");
  CHECK(plan.unresolvable[0].reason == "1/1 CardInsufficientMemory");  // no lower pod there
  CHECK(plan.unresolvable[1].node == "n2");
  CHECK(plan.unresolvable[1].reason.find("CardInsufficientMemory") != std::string::npos);
}

TEST_CASE("preemption: with a limit, enough candidates, one within the budgets, then no more") {
  Cluster c;
  for (int n = 0; n < 6; ++n) {
    const std::string node = fmt::format("n{}", n);
    c.Node(node, 1, 40000);
    Pod low = Running(fmt::format("low{}", n), node, 0, 40000, 0);
    low.labels.Set("app", n % 2 == 0 ? "kept" : "free");
    c.Add(std::move(low));
  }
  PodDisruptionBudget kept{"default", "kept", {}, 0, {}};
  kept.selector.match_labels.Set("app", "kept");
  const PodDisruptionBudget budgets[] = {kept};
  const Pod urgent = Preemptor(1, 20000, 100);
  auto plan = [&](std::size_t limit) {
    Result<PreemptionPlan> r =
        PlanPreemption(c.snapshot, urgent, c.pods, budgets, {}, kNow, {}, limit);
    REQUIRE(r.ok());
    return std::move(*r);
  };
  const PreemptionPlan all = plan(0);
  CHECK(all.candidates.size() == 6);
  CHECK(all.unexamined.empty());
  for (const std::size_t limit : {1, 2, 4}) {
    CAPTURE(limit);
    const PreemptionPlan some = plan(limit);
    // At least `limit`, more only until one violates no budget.
    CHECK(some.candidates.size() >= limit);
    CHECK(some.candidates.size() <= limit + 1);
    REQUIRE(some.chosen() != nullptr);
    CHECK(some.chosen()->budget_violations == 0);
    CHECK(some.candidates.size() + some.unexamined.size() == 6);
    CHECK(
        std::is_sorted(some.unexamined.begin(), some.unexamined.end(),
                       [](const NodeFailure& a, const NodeFailure& b) { return a.node < b.node; }));
    CHECK(plan(limit) == some);  // the same nodes on every run
  }
}

TEST_CASE("preemption: a pod that may not or need not preempt is refused, and why") {
  Cluster c;
  c.Node("n1", 1, 40000);
  c.Add(Running("low", "n1", 0, 30000, 0));
  Pod never = Preemptor(1, 20000, 100);
  never.preemption_policy = "Never";
  CHECK(c.Plan(never).refused == "its preemptionPolicy is Never");
  CHECK(c.Plan(Preemptor(1, 5000, 100)).refused == "it fits on n1 without preemption");
  CHECK(c.Plan(Preemptor(0, -1, 100)).refused == "it asks for no device");
}

TEST_CASE("preemption: nodes ranked as kube-scheduler ranks them") {
  SUBCASE("fewest budget violations first") {
    Cluster c;
    c.Node("n1", 1, 20000);
    c.Node("n2", 1, 20000);
    Pod guarded = Running("guarded", "n1", 0, 20000, 0);
    guarded.labels.Set("app", "db");
    c.Add(guarded);
    c.Add(Running("free", "n2", 0, 20000, 50));
    const PodDisruptionBudget budget{"default", "db", LabelSelector{{{"app", "db"}}, {}}, 0, {}};
    PreemptionPlan plan = c.Plan(Preemptor(1, 20000, 100), std::span(&budget, 1));
    REQUIRE(plan.candidates.size() == 2);
    CHECK(plan.chosen()->node == "n2");  // a higher-priority victim, but no violation
    CHECK(plan.candidates[1].budget_violations == 1);
    CHECK(plan.candidates[1].victims[0].violates_budget);
    // A budget that allows one disruption is not violated.
    const PodDisruptionBudget lenient{"default", "db", LabelSelector{{{"app", "db"}}, {}}, 1, {}};
    CHECK(c.Plan(Preemptor(1, 20000, 100), std::span(&lenient, 1)).chosen()->node == "n1");
    // A budget with an empty selector selects no pod.
    const PodDisruptionBudget empty{"default", "all", {}, 0, {}};
    CHECK(c.Plan(Preemptor(1, 20000, 100), std::span(&empty, 1)).chosen()->node == "n1");
  }
  SUBCASE("then the lowest priority of the most important victim") {
    Cluster c;
    c.Node("a", 1, 20000);
    c.Node("b", 1, 20000);
    c.Add(Running("mid", "a", 0, 20000, 50));
    c.Add(Running("low1", "b", 0, 10000, 10));
    c.Add(Running("low2", "b", 0, 10000, 10));
    PreemptionPlan plan = c.Plan(Preemptor(1, 20000, 100));
    CHECK(plan.chosen()->node == "b");  // two victims, but of priority 10 < 50
    CHECK(Names(plan.candidates[1]) == std::vector<std::string>{"mid"});
  }
  SUBCASE("then the smallest priority sum, then the fewest victims") {
    Cluster c;
    c.Node("a", 1, 20000);
    c.Node("b", 1, 20000);
    c.Node("c", 1, 20000);
    c.Add(Running("a1", "a", 0, 10000, 10));
    c.Add(Running("a2", "a", 0, 10000, 10));  // sum 20
    c.Add(Running("b1", "b", 0, 10000, 10));
    c.Add(Running("b2", "b", 0, 10000, 5));   // sum 15
    c.Add(Running("c1", "c", 0, 20000, 10));  // sum 10, one victim
    PreemptionPlan plan = c.Plan(Preemptor(1, 20000, 100));
    REQUIRE(plan.candidates.size() == 3);
    CHECK(plan.candidates[0].node == "c");
    CHECK(plan.candidates[1].node == "b");
    CHECK(plan.candidates[2].node == "a");
  }
  SUBCASE("then the latest start among the most important victims, then the name") {
    Cluster c;
    c.Node("a", 1, 20000);
    c.Node("b", 1, 20000);
    c.Node("c", 1, 20000);
    c.Add(Running("early", "a", 0, 20000, 10, 5));
    c.Add(Running("late", "b", 0, 20000, 10, 50));
    c.Add(Running("late-too", "c", 0, 20000, 10, 50));
    PreemptionPlan plan = c.Plan(Preemptor(1, 20000, 100));
    REQUIRE(plan.candidates.size() == 3);
    CHECK(plan.candidates[0].node == "b");
    CHECK(plan.candidates[1].node == "c");
    CHECK(plan.candidates[2].node == "a");
  }
}

TEST_CASE("preemption: the namespace's quota counts what the victims free") {
  Cluster c;
  c.Node("n1", 2, 20000);
  REQUIRE(
      c.snapshot.SetQuota("default", "q", StringMap{{"limits.nvidia.com/gpumem", "20000"}}).ok());
  c.Add(Running("low", "n1", 0, 15000, 0));
  // GPU 1 is free, but the quota is not: only evicting "low" makes room in it.
  PreemptionPlan plan = c.Plan(Preemptor(1, 10000, 100));
  REQUIRE(plan.chosen() != nullptr);
  CHECK(Names(*plan.chosen()) == std::vector<std::string>{"low"});
  // The snapshot given is left as it was.
  CHECK(c.snapshot.QuotaUsed("default", "nvidia.com/gpumem") == 15000);
}

TEST_CASE("preemption: on random small clusters, victims are lower, sufficient and minimal") {
  std::mt19937_64 rng(20261128);
  int plans = 0;
  for (int round = 0; round < 200; ++round) {
    Cluster c;
    const int nodes = 1 + static_cast<int>(rng() % 3);
    for (int n = 0; n < nodes; ++n) c.Node(fmt::format("n{}", n), 1 + rng() % 2, 10000);
    int pods = 0;
    for (int n = 0; n < nodes; ++n) {
      for (int gpu = 0; gpu < 2; ++gpu) {
        for (int k = 0; k < 3; ++k) {
          const int mem = 1000 * static_cast<int>(1 + rng() % 4);
          Pod p =
              Running(fmt::format("p{}", pods++), fmt::format("n{}", n), gpu, mem,
                      static_cast<std::int64_t>(rng() % 4) * 10, static_cast<int>(rng() % 3600));
          ClusterSnapshot trial = c.snapshot;
          if (trial.AddPod(p).ok() && [&] {
                auto d = trial.NodeDevices(p.node_name);
                if (!d.ok()) return false;
                for (const DeviceView& v : *d) {
                  if (v.usage.usedmem > v.device.devmem) return false;
                }
                return true;
              }()) {
            c.Add(std::move(p));
          }
        }
      }
    }
    const Pod pod = Preemptor(1, 1000 * static_cast<int>(4 + rng() % 6), 25);
    const PreemptionPlan plan = c.Plan(pod);
    if (!plan.refused.empty()) continue;
    for (const PreemptionCandidate& cand : plan.candidates) {
      ++plans;
      const std::vector<std::string> victims = Names(cand);
      CHECK_FALSE(victims.empty());
      for (const PreemptionVictim& v : cand.victims) CHECK(v.priority < pod.priority);
      CHECK(FitsWithout(c, pod, cand.node, victims));
      // No proper subset of the victims would do (brute force).
      const std::size_t n = victims.size();
      for (std::size_t mask = 0; mask + 1 < (std::size_t{1} << n); ++mask) {
        std::vector<std::string> some;
        for (std::size_t i = 0; i < n; ++i) {
          if (mask & (std::size_t{1} << i)) some.push_back(victims[i]);
        }
        CHECK_FALSE(FitsWithout(c, pod, cand.node, some));
      }
    }
    for (const NodeFailure& f : plan.unresolvable) {
      std::vector<std::string> lower;
      for (const Pod& p : c.pods) {
        if (p.node_name == f.node && p.priority < pod.priority) lower.push_back(p.name);
      }
      CHECK_FALSE(FitsWithout(c, pod, f.node, lower));
    }
  }
  CHECK(plans > 50);  // the rounds exercise real choices
}
