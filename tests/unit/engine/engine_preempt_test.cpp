// The engine's preemption: evictions, the devices kept for the preemptor,
// no second preemption for one slice, budgets, giving up, and the
// extender's preempt verb.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "devshare/engine/engine.hpp"
#include "engine_commands.hpp"
#include "testutil.hpp"

using namespace devshare;
using namespace devshare::engine;
using devshare::engine::testing::kNowMs;
using devshare::engine::testing::Of;
using devshare::testing::MakeNode;
using devshare::testing::MakePod;

namespace {

// A pod of `priority` on n1 holding `mem` MiB of its one GPU, started at
// second `started`.
Pod Running(const std::string& name, int mem, std::int64_t priority, int started) {
  Pod p = MakePod(name).Container(1, mem).Holding("n1", fmt::format("n1-gpu0,NVIDIA,{},0:;", mem));
  p.priority = priority;
  p.start_time = fmt::format("2026-11-28T10:00:{:02}Z", started);
  p.labels.Set("app", "train");
  return p;
}

Pod Pending(const std::string& name, int mem, std::int64_t priority) {
  Pod p = MakePod(name).Container(1, mem);
  p.priority = priority;
  return p;
}

// n1: one GPU of 8,000 MiB, full: a (4,000 MiB), b and c (2,000 each), all
// of priority 0.
struct FullNode {
  explicit FullNode(EngineOptions options = {}) : engine(std::move(options)) {
    std::vector<Command> out;
    engine.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
    engine.Tick(kNowMs, out);
    for (const Pod& p :
         {Running("a", 4000, 0, 0), Running("b", 2000, 0, 1), Running("c", 2000, 0, 2)}) {
      engine.PodObserved(p);
    }
  }
  std::vector<Command> Filter(const Pod& pod, std::int64_t now_ms = kNowMs) {
    std::vector<Command> out;
    engine.PodObserved(pod);
    engine.Filter(1, pod, {"n1"}, now_ms, out);
    return out;
  }
  Engine engine;
};

std::vector<std::string> Evicted(const std::vector<Command>& out) {
  std::vector<std::string> names;
  for (const EvictPod& e : Of<EvictPod>(out)) names.push_back(e.name);
  return names;
}

}  // namespace

TEST_CASE("engine preemption: the fewest victims go, the freed devices wait for the preemptor") {
  FullNode f;
  const Pod urgent = Pending("urgent", 4000, 100);
  std::vector<Command> out = f.Filter(urgent);
  // a alone would do, but b and c together are less important (started later).
  CHECK(Evicted(out) == std::vector<std::string>{"b", "c"});
  auto nominated = Of<NominatePod>(out);
  REQUIRE(nominated.size() == 1);
  CHECK(nominated[0].node == "n1");
  auto reply = Of<FilterReply>(out).at(0);
  CHECK(reply.nodes.empty());
  REQUIRE(reply.failed.size() == 1);
  CHECK(reply.failed[0].reason.find("preempting: evicting default/b (priority 0), default/c") !=
        std::string::npos);
  CHECK(f.engine.counters().preemptions == 1);
  REQUIRE(f.engine.preemptions().contains("uid-urgent"));
  CHECK(f.engine.preemptions().at("uid-urgent").victims ==
        std::vector<std::string>{"default/b", "default/c"});
  for (const EvictPod& e : Of<EvictPod>(out)) f.engine.ApiResult(e.id, true, kNowMs, out);
  CHECK(f.engine.counters().preemption_victims == 2);

  SUBCASE("a pod of lower priority does not take them meanwhile") {
    for (const char* uid : {"uid-b", "uid-c"}) f.engine.PodDeleted(uid);
    auto low = Of<FilterReply>(f.Filter(Pending("low", 2000, 0))).at(0);
    CHECK(low.nodes.empty());
    CHECK(Evicted(f.Filter(Pending("low", 2000, 0))).empty());
  }
  SUBCASE("its Filters wait for the victims, without evicting again; then it is placed there") {
    out = f.Filter(urgent);
    CHECK(Evicted(out).empty());
    CHECK(Of<FilterReply>(out).at(0).failed.at(0).reason.find(
              "waiting for default/b, default/c to go") != std::string::npos);
    f.engine.PodDeleted("uid-b");
    CHECK(Of<FilterReply>(f.Filter(urgent)).at(0).nodes.empty());
    f.engine.PodDeleted("uid-c");
    auto placed = Of<FilterReply>(f.Filter(urgent)).at(0);
    CHECK(placed.nodes == std::vector<std::string>{"n1"});
    CHECK(f.engine.counters().preemptions_placed == 1);
    CHECK(f.engine.preemptions().empty());
  }
  SUBCASE("a second pod of high priority does not evict for the same slice") {
    // b and c go already and their slice is kept; a alone frees no room
    // beside what the first pod takes.
    out = f.Filter(Pending("second", 4000, 100));
    CHECK(Evicted(out).empty());
    CHECK(Of<FilterReply>(out).at(0).unresolvable.size() == 1);
    CHECK(f.engine.counters().preemptions == 1);
  }
  SUBCASE("deleted while its victims go: the devices are released") {
    f.engine.PodDeleted("uid-urgent");
    CHECK(f.engine.preemptions().empty());
    for (const char* uid : {"uid-b", "uid-c"}) f.engine.PodDeleted(uid);
    CHECK(Of<FilterReply>(f.Filter(Pending("low", 4000, 0))).at(0).nodes ==
          std::vector<std::string>{"n1"});
  }
}

TEST_CASE("engine preemption: equal priority and preemptionPolicy Never evict nobody") {
  FullNode f;
  std::vector<Command> out = f.Filter(Pending("peer", 2000, 0));
  CHECK(Evicted(out).empty());
  auto reply = Of<FilterReply>(out).at(0);
  CHECK(reply.failed.empty());
  REQUIRE(reply.unresolvable.size() == 1);  // no eviction can help
  CHECK(reply.unresolvable[0].node == "n1");

  Pod polite = Pending("polite", 2000, 100);
  polite.preemption_policy = "Never";
  out = f.Filter(polite);
  CHECK(Evicted(out).empty());
  CHECK(Of<FilterReply>(out).at(0).failed.size() == 1);
  CHECK(f.engine.counters().preemptions_refused == 2);
  CHECK(f.engine.counters().preemptions == 0);

  EngineOptions off;
  off.preemption = false;
  FullNode quiet(off);
  out = quiet.Filter(Pending("urgent", 4000, 100));
  CHECK(Evicted(out).empty());
  CHECK(Of<FilterReply>(out).at(0).failed.size() == 1);
  CHECK(Of<FilterReply>(out).at(0).unresolvable.empty());
}

TEST_CASE("engine preemption: a PodDisruptionBudget that allows no disruption is honoured") {
  FullNode f;
  PodDisruptionBudget budget{"default", "train", {}, 0, {}};
  budget.selector.match_labels.Set("app", "train");
  f.engine.PodDisruptionBudgetObserved(budget);
  std::vector<Command> out = f.Filter(Pending("urgent", 4000, 100));
  CHECK(Evicted(out).empty());
  CHECK(Of<FilterReply>(out).at(0).failed.at(0).reason.find("PodDisruptionBudget forbids it") !=
        std::string::npos);
  CHECK(f.engine.counters().preemptions_refused == 1);
  f.engine.PodDisruptionBudgetDeleted("default", "train");
  CHECK(Evicted(f.Filter(Pending("urgent", 4000, 100))).size() == 2);
}

TEST_CASE("engine preemption: given up on a refused eviction, victims that stay, or no bind") {
  EngineOptions options;
  options.preemption_hold_ms = 60000;
  options.preemption_timeout_ms = 300000;
  FullNode f(options);
  const Pod urgent = Pending("urgent", 4000, 100);
  std::vector<Command> out = f.Filter(urgent);
  auto evictions = Of<EvictPod>(out);
  REQUIRE(evictions.size() == 2);

  SUBCASE("a refused eviction: released, and no new preemption until the hold is over") {
    f.engine.ApiResult(evictions[0].id, false, kNowMs, out);
    CHECK(f.engine.counters().evictions_failed == 1);
    CHECK(f.engine.counters().preemptions_abandoned == 1);
    CHECK(f.engine.preemptions().empty());
    CHECK(Evicted(f.Filter(urgent, kNowMs + 1000)).empty());
    out.clear();
    f.engine.Tick(kNowMs + 60000, out);
    CHECK(Evicted(f.Filter(urgent, kNowMs + 60000)).size() == 2);
  }
  SUBCASE("victims still there after the timeout") {
    REQUIRE(f.engine.NextWakeMs().has_value());
    CHECK(*f.engine.NextWakeMs() <= kNowMs + 300000);
    f.engine.Tick(kNowMs + 299000, out);
    CHECK(f.engine.preemptions().size() == 1);
    f.engine.Tick(kNowMs + 300000, out);
    CHECK(f.engine.preemptions().empty());
    CHECK(f.engine.counters().preemptions_abandoned == 1);
  }
  SUBCASE("the victims gone, the pod not placed within the hold") {
    f.engine.PodDeleted("uid-b");
    f.engine.PodDeleted("uid-c");
    f.engine.Tick(kNowMs + 1000, out);  // notes when they went
    REQUIRE(f.engine.preemptions().at("uid-urgent").victims_gone_ms == kNowMs + 1000);
    f.engine.Tick(kNowMs + 61000, out);
    CHECK(f.engine.preemptions().empty());
    CHECK(Of<FilterReply>(f.Filter(Pending("low", 4000, 0), kNowMs + 61000)).at(0).nodes ==
          std::vector<std::string>{"n1"});
  }
}

TEST_CASE("engine preemption: the extender's preempt verb adds the device victims") {
  FullNode f;
  const Pod urgent = Pending("urgent", 4000, 100);
  f.engine.PodObserved(urgent);
  // kube-scheduler proposes n1 without victims (it sees no GPU).
  auto answer = f.engine.ExtenderPreempt(urgent, {{"n1", {}}}, kNowMs);
  REQUIRE(answer.ok());
  REQUIRE(answer->contains("n1"));
  CHECK(answer->at("n1").uids == std::vector<std::string>{"uid-b", "uid-c"});
  // Its own victims free enough: passed through as proposed.
  answer = f.engine.ExtenderPreempt(urgent, {{"n1", {{"uid-a"}, 0}}}, kNowMs);
  REQUIRE(answer.ok());
  CHECK(answer->at("n1").uids == std::vector<std::string>{"uid-a"});
  // A pod too big for the node even with every lower pod gone: left out.
  answer = f.engine.ExtenderPreempt(Pending("huge", 9000, 100), {{"n1", {}}}, kNowMs);
  REQUIRE(answer.ok());
  CHECK(answer->empty());
  // A pod preempting already gets its own node and victims.
  std::vector<Command> out = f.Filter(urgent);
  REQUIRE(Evicted(out).size() == 2);
  answer = f.engine.ExtenderPreempt(urgent, {{"n1", {{"uid-a"}, 0}}}, kNowMs);
  REQUIRE(answer.ok());
  CHECK(answer->at("n1").uids == std::vector<std::string>{"uid-b", "uid-c"});
}

TEST_CASE("engine preemption: only bound pods of lower priority are victims, as they are seen") {
  Engine engine{EngineOptions{}};
  std::vector<Command> out;
  engine.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
  engine.Tick(kNowMs, out);
  auto filter = [&](const Pod& pod) {
    std::vector<Command> o;
    engine.PodObserved(pod);
    engine.Filter(1, pod, {"n1"}, kNowMs, o);
    return o;
  };
  engine.PodObserved(Running("full", 8000, 100, 0));
  // Pending at first: nothing to evict.
  engine.PodObserved(Pending("low", 2000, 0));
  CHECK(Evicted(filter(Pending("urgent", 8000, 100))).empty());
  CHECK(engine.counters().preemptions_refused == 1);
  // Bound later (the same pod seen again, on n1): the one victim there is.
  engine.PodDeleted("uid-full");
  engine.PodObserved(Running("low", 8000, 0, 1));
  CHECK(Evicted(filter(Pending("urgent", 8000, 100))) == std::vector<std::string>{"low"});
  // Deleted: no pod of lower priority is left to evict for another.
  engine.PodDeleted("uid-low");
  engine.PodDeleted("uid-urgent");
  engine.PodObserved(Running("peer", 8000, 100, 2));
  CHECK(Evicted(filter(Pending("second", 8000, 100))).empty());
  CHECK(engine.counters().preemptions_refused == 2);
}
