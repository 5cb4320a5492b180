// The results of an experiment as JSON (devshare/sim/experiment.hpp).
#include <boost/json.hpp>

#include "devshare/sim/experiment.hpp"

namespace devshare::sim {

namespace {

boost::json::object SampleObject(const FragmentationSample& f) {
  return boost::json::object{{"demandPercent", f.demand_percent},
                             {"allocationPercent", f.allocation_percent},
                             {"gpuFree", f.gpu_free},
                             {"gpuFragmented", f.gpu_fragmented}};
}

boost::json::object QuotaObject(const QuotaReport& q) {
  return boost::json::object{
      {"namespace", q.pod_namespace},   {"resource", q.resource}, {"limit", q.limit},
      {"peakUsed", q.peak_used},        {"bound", q.bound},       {"pending", q.pending},
      {"pendingQuota", q.pending_quota}};
}

boost::json::object PreemptionObject(const PreemptionReport& p) {
  return boost::json::object{{"highPriorityPods", p.high_priority_pods},
                             {"highPriorityBound", p.high_priority_bound},
                             {"highPriorityP50Ms", p.high_priority_p50_ms},
                             {"highPriorityP99Ms", p.high_priority_p99_ms},
                             {"preemptions", p.preemptions},
                             {"victims", p.victims},
                             {"evictionsRefused", p.evictions_refused},
                             {"preemptionsAbandoned", p.preemptions_abandoned},
                             {"memoryFreedBeyondMib", p.memory_freed_beyond_mib},
                             {"evictedNotHelped", p.evicted_not_helped},
                             {"victimsTerminating", p.victims_terminating},
                             {"workLostGpuSeconds", p.work_lost_gpu_seconds}};
}

// The report's fields after `out`'s own.
boost::json::object ReportObject(const Report& r, boost::json::object out = {}) {
  boost::json::object calls, reasons;
  for (const auto& [verb, n] : r.api_calls) calls[verb] = n;
  for (const auto& [reason, n] : r.pending_reasons) reasons[reason] = n;
  auto counts = [](const std::map<std::string, std::uint64_t>& by_name) {
    boost::json::object o;
    for (const auto& [name, n] : by_name) o[name] = n;
    return o;
  };
  boost::json::array percentiles(r.latency_percentiles.begin(), r.latency_percentiles.end());
  boost::json::array curve;
  for (const FragmentationSample& f : r.fragmentation_curve) curve.push_back(SampleObject(f));
  boost::json::array free_by_share;
  for (const FreeShareCount& c : r.free_by_share) {
    free_by_share.push_back(
        boost::json::object{{"freeMilli", c.free_milli}, {"devices", c.devices}});
  }
  boost::json::array quotas;
  for (const QuotaReport& q : r.quotas) quotas.push_back(QuotaObject(q));
  boost::json::array warnings(r.quota_warnings.begin(), r.quota_warnings.end());
  const boost::json::object fields{{"pods", r.pods},
                                   {"bound", r.bound},
                                   {"pending", r.pending},
                                   {"pendingReasons", std::move(reasons)},
                                   {"gpuCapacity", r.gpu_capacity},
                                   {"gpuAllocated", r.gpu_allocated},
                                   {"allocationPercent", r.allocation_percent},
                                   {"allocationMeanPercent", r.allocation_mean_percent},
                                   {"gpuFree", r.gpu_free},
                                   {"gpuFragmented", r.gpu_fragmented},
                                   {"fragmentationPercent", r.fragmentation_percent},
                                   {"fragmentationCurve", std::move(curve)},
                                   {"freeByShare", std::move(free_by_share)},
                                   {"latencyP50Ms", r.latency_p50_ms},
                                   {"latencyP99Ms", r.latency_p99_ms},
                                   {"latencyPercentilesMs", std::move(percentiles)},
                                   {"throttledMs", r.throttled_ms},
                                   {"apiCalls", std::move(calls)},
                                   {"rejected429", r.rejected_429},
                                   {"conflicts409", r.conflicts_409},
                                   {"filtersRefused", r.filters_refused},
                                   {"extenderTimeouts", r.extender_timeouts},
                                   {"lockContention", r.lock_contention},
                                   {"lockRetries", r.lock_retries},
                                   {"bindsFailed", r.binds_failed},
                                   {"registrationWrites", r.registration_writes},
                                   {"nodesDropped", r.nodes_dropped},
                                   {"duplicateRegistrationWrites", r.duplicate_registration_writes},
                                   {"unavailableMs", r.unavailable_ms},
                                   {"driftInjected", counts(r.drift_injected)},
                                   {"driftFound", counts(r.drift_found)},
                                   {"driftHealed", counts(r.drift_healed)},
                                   {"cacheMismatchedDevices", r.cache_mismatched_devices},
                                   {"quotas", std::move(quotas)},
                                   {"quotaWarnings", std::move(warnings)},
                                   {"preemption", PreemptionObject(r.preemption)},
                                   {"endMs", r.end_ms}};
  for (const auto& field : fields) out.insert(field);
  return out;
}

}  // namespace

std::string ReportJson(const Report& report) {
  return boost::json::serialize(ReportObject(report));
}

std::string FragmentationSampleJson(const FragmentationSample& sample) {
  return boost::json::serialize(SampleObject(sample));
}

std::string QuotaReportJson(const QuotaReport& quota) {
  return boost::json::serialize(QuotaObject(quota));
}

std::string PreemptionReportJson(const PreemptionReport& preemption) {
  return boost::json::serialize(PreemptionObject(preemption));
}

std::string ResultsJson(const Experiment& experiment, const std::vector<VariantResult>& results) {
  boost::json::array variants;
  for (const VariantResult& v : results) {
    boost::json::array runs;
    for (std::size_t i = 0; i < v.reports.size(); ++i)
      runs.push_back(ReportObject(v.reports[i], {{"seed", v.seeds[i]}}));
    variants.push_back(boost::json::object{{"name", v.name}, {"runs", std::move(runs)}});
  }
  return boost::json::serialize(boost::json::object{{"name", experiment.name},
                                                    {"description", experiment.description},
                                                    {"variants", std::move(variants)}});
}

}  // namespace devshare::sim
