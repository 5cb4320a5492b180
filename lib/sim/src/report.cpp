#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "scenario_objects.hpp"

namespace devshare::sim::internal {

std::int64_t Percentile(const std::vector<std::int64_t>& sorted, std::size_t p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, sorted.size() * p / 100)];
}

namespace {

// Report::free_by_share of `truth`.
std::vector<FreeShareCount> FreeByShare(const ClusterSnapshot& truth) {
  std::map<std::int32_t, std::uint64_t> counts;
  for (const std::string& node : truth.NodeNames()) {
    Result<std::vector<DeviceView>> devices = truth.NodeDevices(node);
    if (!devices.ok()) continue;
    for (const DeviceView& d : *devices) {
      if (!d.healthy || d.usage.used >= d.device.count || d.device.devcore <= 0 ||
          d.device.devmem <= 0)
        continue;
      const double cores = 1.0 - static_cast<double>(d.usage.usedcores) / d.device.devcore;
      const double memory = 1.0 - static_cast<double>(d.usage.usedmem) / d.device.devmem;
      const auto milli = static_cast<std::int32_t>(std::lround(std::min(cores, memory) * 100)) * 10;
      if (milli > 0) ++counts[std::min(milli, 1000)];
    }
  }
  std::vector<FreeShareCount> out;
  out.reserve(counts.size());
  for (const auto& [milli, n] : counts) out.push_back(FreeShareCount{milli, n});
  return out;
}

}  // namespace

ReportBuilder::ReportBuilder(const EventQueue& events, std::vector<WorkloadClass> workload)
    : ReportBuilder(events, [workload = std::move(workload)](const ClusterSnapshot& truth) {
        return MeasureFragmentation(truth, workload);
      }) {}

ReportBuilder::ReportBuilder(const EventQueue& events, Measure measure)
    : events_(events), measure_(std::move(measure)) {}

Status ReportBuilder::Arrived(double gpus, const ClusterSnapshot& truth) {
  ++report_.pods;
  arrived_gpus_ += gpus;
  while (report_.gpu_capacity > 0 &&
         arrived_gpus_ >= report_.gpu_capacity * kCurveStepPercent * next_curve_point_ / 100.0) {
    Result<ClusterFragmentation> f = measure_(truth);
    if (!f.ok()) return f.status();
    report_.fragmentation_curve.push_back(FragmentationSample{kCurveStepPercent * next_curve_point_,
                                                              100.0 * held_ / report_.gpu_capacity,
                                                              f->free_gpus, f->fragmented_gpus});
    ++next_curve_point_;
  }
  return Status();
}

void ReportBuilder::Bound(double gpus) {
  ++report_.bound;
  Hold(gpus);
}

void ReportBuilder::Placed() {
  if (!crashed_at_) return;
  report_.unavailable_ms += events_.now() - *crashed_at_;
  crashed_at_.reset();
}

void ReportBuilder::Hold(double delta) {
  held_integral_ += held_ * static_cast<double>(events_.now() - held_since_);
  held_since_ = events_.now();
  held_ += delta;
}

void ReportBuilder::QuotasUsed(std::span<const QuotaUse> in_force) {
  for (const QuotaUse& q : in_force) {
    std::int64_t& peak = quota_peaks_[{q.pod_namespace, q.resource}];
    peak = std::max(peak, q.used);
  }
}

void ReportBuilder::CountPod(const PodSpec& spec, const PodOutcome& pod) {
  QuotaReport& ns = namespaces_[spec.pod_namespace];
  if (pod.bound) {
    ++ns.bound;
    latencies_.push_back(pod.bound_at - spec.arrive_ms);
    if (pod.running) report_.gpu_allocated += GpusOf(spec);
    return;
  }
  // A pod still waiting counts with the time it has waited, so a backlog
  // shows in the percentiles.
  if (!pod.given_up) latencies_.push_back(events_.now() - spec.arrive_ms);
  ++report_.pending;
  ++ns.pending;
  if (pod.reason == kQuotaReason) ++ns.pending_quota;
  ++report_.pending_reasons[!pod.reason.empty() ? std::string(pod.reason)
                            : pod.binding       ? "binding in progress"
                                                : "waiting in the scheduling queue"];
}

Result<Report> ReportBuilder::Finish(const ClusterSnapshot& truth, bool quotas) {
  const std::int64_t now = events_.now();
  if (quotas) {
    const std::vector<QuotaUse> in_force = truth.Quotas();
    std::map<std::string, QuotaReport> rows = namespaces_;  // a row per namespace with pods
    for (const QuotaUse& q : in_force) rows.try_emplace(q.pod_namespace);
    for (auto& [name, counts] : rows) {
      counts.pod_namespace = name;
      bool limited = false;
      for (const QuotaUse& q : in_force) {
        if (q.pod_namespace != name) continue;
        limited = true;
        QuotaReport row = counts;
        row.resource = q.resource;
        row.limit = q.limit;
        auto peak = quota_peaks_.find({q.pod_namespace, q.resource});
        row.peak_used = peak == quota_peaks_.end() ? 0 : peak->second;
        report_.quotas.push_back(std::move(row));
      }
      if (!limited) report_.quotas.push_back(counts);
    }
  }
  report_.end_ms = now;
  report_.allocation_percent =
      report_.gpu_capacity > 0 ? 100.0 * report_.gpu_allocated / report_.gpu_capacity : 0;
  Result<ClusterFragmentation> fragmentation = measure_(truth);
  if (!fragmentation.ok()) return fragmentation.status();
  report_.gpu_free = fragmentation->free_gpus;
  report_.free_by_share = FreeByShare(truth);
  report_.gpu_fragmented = fragmentation->fragmented_gpus;
  report_.fragmentation_percent =
      fragmentation->free_gpus > 0
          ? 100.0 * fragmentation->fragmented_gpus / fragmentation->free_gpus
          : 0;
  Hold(0);
  if (report_.gpu_capacity > 0 && now > 0) {
    report_.allocation_mean_percent =
        100.0 * held_integral_ / static_cast<double>(now) / report_.gpu_capacity;
  }
  std::sort(latencies_.begin(), latencies_.end());
  if (!latencies_.empty()) {
    for (std::size_t p = 0; p <= 100; ++p)
      report_.latency_percentiles.push_back(Percentile(latencies_, p));
    report_.latency_p50_ms = report_.latency_percentiles[50];
    report_.latency_p99_ms = report_.latency_percentiles[99];
  }
  if (crashed_at_) report_.unavailable_ms += now - *crashed_at_;
  return report_;
}

}  // namespace devshare::sim::internal
