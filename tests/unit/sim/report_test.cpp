// The run's report: the fragmentation curve, the mean allocation, latencies and reasons.
#include <doctest/doctest.h>

#include "sim_fixtures.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;
using namespace devshare::sim::fixtures;

TEST_CASE(
    "sim units: the report — the fragmentation curve, the mean allocation, latencies and reasons") {
  EventQueue q;
  ReportBuilder report(q, {WorkloadClass{1, 1, 0, 0, 0}});  // whole GPUs
  ClusterSnapshot truth;
  REQUIRE(truth.AddNode(StartNode(Spec("n1", 4))).ok());
  report.AddCapacity(4);
  // A 1-GPU pod arrives: 25 % of the GPUs asked, the curve's 10 % and 20 %
  // points, taken before it is placed.
  REQUIRE(report.Arrived(1, truth).ok());
  report.Bound(1);
  q.AdvanceTo(1000);
  report.LeaderCrashed();
  REQUIRE(report.Arrived(0.5, truth).ok());  // 37.5 %: the 30 % point, one GPU held
  REQUIRE(report.Arrived(0.5, truth).ok());  // 50 %: 40 % and 50 %
  q.AdvanceTo(1500);
  report.Placed();
  report.Departed(1);
  q.AdvanceTo(2000);
  report.CountPod(PodOf("a", 1, 1000), PodOutcome{true, false, false, false, 500, ""});
  report.CountPod(PodOf("b", 1, 500, 0, 1000),
                  PodOutcome{false, false, false, false, 0, "no device fits"});
  report.CountPod(PodOf("c", 1, 500, 0, 1000),
                  PodOutcome{false, false, true, false, 0, "no device fits"});
  Result<Report> r = report.Finish(truth);
  REQUIRE(r.ok());
  REQUIRE(r->fragmentation_curve.size() == 5);
  CHECK(r->fragmentation_curve[1].demand_percent == 20);
  CHECK(r->fragmentation_curve[1].allocation_percent == 0);
  CHECK(r->fragmentation_curve[2].allocation_percent == 25);
  CHECK(r->pods == 3);
  CHECK(r->bound == 1);
  CHECK(r->pending == 2);
  CHECK(r->pending_reasons.at("no device fits") == 2);
  CHECK(r->allocation_mean_percent == doctest::Approx(18.75));  // 1 GPU of 4 for 1.5 s of 2 s
  CHECK(r->unavailable_ms == 500);
  CHECK(r->end_ms == 2000);
  // Latencies: a bound at 500 ms, b waiting 1 s so far; c given up counts none.
  CHECK(r->latency_percentiles.front() == 500);
  CHECK(r->latency_p99_ms == 1000);
  CHECK(r->gpu_free == 4);   // `truth` holds no pods
  CHECK(r->quotas.empty());  // a run without quotas has no rows
}

TEST_CASE("sim units: the report — a row per namespace and quota resource, and quota warnings") {
  EventQueue q;
  ReportBuilder report(q, std::vector<WorkloadClass>{});
  ClusterSnapshot truth;
  REQUIRE(truth.AddNode(StartNode(Spec("n1", 4))).ok());
  StringMap hard;
  hard.Set("limits.nvidia.com/gpumem", "8192");
  hard.Set("limits.nvidia.com/gpucores", "1.5");
  const Status set = truth.SetQuota("team-a", "gpu", hard);
  REQUIRE_FALSE(set.ok());
  report.QuotaWarning(set.message());
  report.QuotasUsed(truth.Quotas());
  PodSpec a = PodOf("a", 1, 500), b = PodOf("b", 1, 500), c = PodOf("c", 1, 1000);
  a.pod_namespace = b.pod_namespace = "team-a";
  c.pod_namespace = "team-b";
  report.CountPod(a, PodOutcome{true, true, false, false, 0, ""});
  report.CountPod(b, PodOutcome{false, false, false, false, 0, kQuotaReason});
  report.CountPod(c, PodOutcome{false, false, false, false, 0, "no device fits"});
  Result<Report> r = report.Finish(truth, true);
  REQUIRE(r.ok());
  REQUIRE(r->quotas.size() == 2);
  // team-a: the gpumem limit (its cores limit is not a whole number: none).
  CHECK(r->quotas[0] == QuotaReport{"team-a", "nvidia.com/gpumem", 8192, 0, 1, 1, 1});
  // team-b: no device quota, its pods counted.
  CHECK(r->quotas[1] == QuotaReport{"team-b", "", -1, 0, 0, 1, 0});
  REQUIRE(r->quota_warnings.size() == 1);
  CHECK(r->quota_warnings[0].find("limits.nvidia.com/gpucores is \"1.5\"") != std::string::npos);
}
