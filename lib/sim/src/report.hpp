// Private: what a run reports, gathered as it goes — GPUs held over time,
// the fragmentation curve over arrived demand, the leader's unavailability —
// and written out at the end with the pods' latencies and pending reasons
// and the fragmentation left. The other models add their own counters
// (AddTo) to the Report this returns.
//
// Fragmentation is measured on the cluster as its API objects say
// (MeasureFragmentation of the API server's `truth()`, or the DRA
// placer's measure), for the workload fgd is given: by default the
// scenario's own mix of GPU pods.
//
// Thread-safety: none; a run is single-threaded.
#ifndef DEVSHARE_SIM_SRC_REPORT_HPP_
#define DEVSHARE_SIM_SRC_REPORT_HPP_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devshare/filter.hpp"
#include "devshare/sim/simulator.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"
#include "event_queue.hpp"

namespace devshare::sim::internal {

// The pending reason of a pod whose last Filter found no device within its
// namespace's quota (a node refused one for ResourceQuotaNotFit).
inline constexpr std::string_view kQuotaReason =
    "no device fits the namespace's quota (ResourceQuotaNotFit)";

// A pod as the run leaves it.
struct PodOutcome {
  bool bound = false;    // bound at some point
  bool running = false;  // holds its devices at the end
  bool given_up = false;
  bool binding = false;  // not bound, with a Bind in flight
  std::int64_t bound_at = 0;
  std::string_view reason;  // why it is not bound, the last time it was tried
};

// Percentile p (0..100) of sorted values, nearest rank; 0 when empty.
std::int64_t Percentile(const std::vector<std::int64_t>& sorted, std::size_t p);

class ReportBuilder {
 public:
  // How the cluster's fragmentation is measured.
  using Measure = std::function<Result<ClusterFragmentation>(const ClusterSnapshot&)>;
  // Measured by MeasureFragmentation for `workload`.
  ReportBuilder(const EventQueue& events, std::vector<WorkloadClass> workload);
  ReportBuilder(const EventQueue& events, Measure measure);
  ReportBuilder(const ReportBuilder&) = delete;
  ReportBuilder& operator=(const ReportBuilder&) = delete;

  // A node with `gpus` devices is part of the cluster.
  void AddCapacity(double gpus) { report_.gpu_capacity += gpus; }

  // A pod asking `gpus` arrived: the curve's points its demand reaches are
  // sampled on `truth` now, before the pod is placed. Errors: the
  // workload's (MeasureFragmentation).
  Status Arrived(double gpus, const ClusterSnapshot& truth);
  // A pod asking `gpus` was bound, or its run ended.
  void Bound(double gpus);
  void Departed(double gpus) { Hold(-gpus); }
  // The leading replica crashed; the time to the next placement counts as
  // unavailable.
  void LeaderCrashed() { crashed_at_ = events_.now(); }
  void Placed();

  // A quota's device limit is ignored (ApiServer::AddQuota's error).
  void QuotaWarning(std::string_view warning) { report_.quota_warnings.emplace_back(warning); }
  // The namespaces' quota usage now (the API objects' Quotas(), after a
  // Binding): the peaks move up.
  void QuotasUsed(std::span<const QuotaUse> in_force);

  // At the end, each arrived pod in the scenario's order.
  void CountPod(const PodSpec& spec, const PodOutcome& pod);
  // The report, now; with `quotas`, the namespaces' rows (limits as `truth`
  // holds them). Errors: the workload's (MeasureFragmentation).
  Result<Report> Finish(const ClusterSnapshot& truth, bool quotas = false);

 private:
  static constexpr double kCurveStepPercent = 10;

  // GPUs held by running pods change by `delta` now: the time integral of
  // the allocation moves forward first.
  void Hold(double delta);

  const EventQueue& events_;
  const Measure measure_;
  Report report_;
  double arrived_gpus_ = 0;  // asked by the arrived pods
  int next_curve_point_ = 1;
  double held_ = 0,
         held_integral_ = 0;  // GPUs held by running pods; their integral over time (GPU x ms)
  std::int64_t held_since_ = 0;
  std::optional<std::int64_t> crashed_at_;
  std::vector<std::int64_t> latencies_;
  std::map<std::pair<std::string, std::string>, std::int64_t>
      quota_peaks_;                                // (namespace, resource)
  std::map<std::string, QuotaReport> namespaces_;  // the pods' counts, by namespace
};

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_REPORT_HPP_
