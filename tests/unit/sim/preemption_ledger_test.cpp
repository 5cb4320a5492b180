// The preemption report's figures and the victims' invariant (preemption_ledger.cpp).
#include "src/preemption_ledger.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;

namespace {

PodSpec Ranked(std::string name, std::int64_t priority, std::int32_t milli,
               std::int64_t arrive_ms) {
  PodSpec p;
  p.name = std::move(name);
  p.gpus = 1;
  p.gpu_milli = milli;
  p.priority = priority;
  p.arrive_ms = arrive_ms;
  return p;
}

}  // namespace

TEST_CASE("sim preemption ledger: the figures of two preemptions, by hand") {
  // Two trainers (a whole GPU, half a GPU) and two inference pods.
  const std::vector<PodSpec> pods = {Ranked("train", 0, 1000, 0), Ranked("half", 0, 500, 0),
                                     Ranked("infer-a", 10, 250, 10000),
                                     Ranked("infer-b", 10, 250, 20000)};
  PreemptionLedger ledger(pods);
  // infer-a evicts train on n1 (40960 MiB for 10240): 30720 beyond; infer-b
  // evicts half on n2 (20480 for 10240): 10240 beyond.
  CHECK_FALSE(ledger.Preempting(2, "n1", {0}, 40960, 10240));
  CHECK_FALSE(ledger.Preempting(3, "n2", {1}, 20480, 10240));
  CHECK_FALSE(ledger.Evicted(0));
  CHECK_FALSE(ledger.Evicted(1));
  ledger.Deleted(0, 1000, 41000);  // ran 40 s on a whole GPU
  ledger.Deleted(1, 2000, 52000);  // 50 s on half of one
  std::map<std::size_t, PodEnd> ends = {{0, {true, true, false, 1000, "n1"}},
                                        {1, {true, true, false, 2000, "n2"}},
                                        {2, {true, true, false, 45000, "n1"}},   // 35 s
                                        {3, {true, true, false, 55000, "n3"}}};  // elsewhere: 35 s
  Report report;
  ledger.AddTo(
      report, [&](std::size_t i) { return ends.at(i); }, 60000);
  const PreemptionReport& r = report.preemption;
  CHECK(r.high_priority_pods == 2);
  CHECK(r.high_priority_bound == 2);
  CHECK(r.high_priority_p50_ms == 35000);
  CHECK(r.high_priority_p99_ms == 35000);
  CHECK(r.preemptions == 2);
  CHECK(r.victims == 2);
  CHECK(r.memory_freed_beyond_mib == 30720 + 10240);
  CHECK(r.evicted_not_helped == 1);  // infer-b was bound on n3, not where half was
  CHECK(r.victims_terminating == 0);
  CHECK(r.work_lost_gpu_seconds == doctest::Approx(40 + 25));
}

TEST_CASE("sim preemption ledger: a victim of equal priority, an eviction of no preemption") {
  const std::vector<PodSpec> pods = {Ranked("a", 5, 1000, 0), Ranked("b", 5, 250, 0),
                                     Ranked("c", 1, 1000, 0)};
  PreemptionLedger ledger(pods);
  CHECK(ledger.Preempting(1, "n1", {2, 0}, 0, 0) ==
        "victim a (priority 5) is not below its preemptor b (priority 5)");
  CHECK(ledger.Evicted(1) == "evicted, the victim of no preemption");
  // Less freed than asked (room was free already): nothing beyond.
  PreemptionLedger other(pods);
  CHECK_FALSE(other.Preempting(1, "n1", {2}, 100, 4000));
  Report report;
  other.AddTo(
      report,
      [](std::size_t) {
        return PodEnd{true, false, true, 0, ""};
      },
      1000);
  CHECK(report.preemption.memory_freed_beyond_mib == 0);
  CHECK(report.preemption.victims == 0);                  // never evicted
  CHECK(report.preemption.high_priority_pods == 2);       // above the lowest, 1
  CHECK(report.preemption.high_priority_p50_ms == 1000);  // still waiting: its wait so far
}

TEST_CASE("sim preemption ledger: a victim still terminating, one whose run ended first") {
  const std::vector<PodSpec> pods = {Ranked("a", 0, 1000, 0), Ranked("b", 0, 1000, 0),
                                     Ranked("x", 9, 1000, 0)};
  PreemptionLedger ledger(pods);
  CHECK_FALSE(ledger.Preempting(2, "n1", {0, 1}, 0, 0));
  CHECK_FALSE(ledger.Evicted(0));
  CHECK_FALSE(ledger.Evicted(1));
  ledger.Deleted(1, 5000, 5000);  // its run ended in its grace period: nothing lost
  Report report;
  ledger.AddTo(
      report,
      [](std::size_t i) {
        return PodEnd{true, i != 2, i == 2, 0, "n1"};
      },
      9000);
  CHECK(report.preemption.victims == 2);
  CHECK(report.preemption.victims_terminating == 1);
  CHECK(report.preemption.evicted_not_helped == 1);  // b went; x is still waiting
  CHECK(report.preemption.work_lost_gpu_seconds == 0);
}
