#include "preemption_ledger.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "report.hpp"
#include "scenario_objects.hpp"

namespace devshare::sim::internal {

PreemptionLedger::PreemptionLedger(const std::vector<PodSpec>& pods) : pods_(pods) {
  if (pods.empty()) return;
  lowest_priority_ = std::min_element(pods.begin(), pods.end(), [](const auto& a, const auto& b) {
                       return a.priority < b.priority;
                     })->priority;
}

std::optional<std::string> PreemptionLedger::Preempting(std::size_t preemptor,
                                                        const std::string& node,
                                                        const std::vector<std::size_t>& victims,
                                                        std::int64_t victims_mib,
                                                        std::int64_t needed_mib) {
  ++preemptions_;
  beyond_mib_ += std::max<std::int64_t>(0, victims_mib - needed_mib);
  const PodSpec& p = pods_[preemptor];
  for (std::size_t v : victims) {
    if (pods_[v].priority >= p.priority) {
      return fmt::format("victim {} (priority {}) is not below its preemptor {} (priority {})",
                         pods_[v].name, pods_[v].priority, p.name, p.priority);
    }
    victims_[v] = Victim{preemptor, node, false, false};
  }
  return std::nullopt;
}

std::optional<std::string> PreemptionLedger::Evicted(std::size_t pod) {
  auto it = victims_.find(pod);
  if (it == victims_.end()) return fmt::format("evicted, the victim of no preemption");
  it->second.evicted = true;
  return std::nullopt;
}

void PreemptionLedger::Deleted(std::size_t pod, std::int64_t bound_at_ms, std::int64_t now_ms) {
  auto it = victims_.find(pod);
  if (it == victims_.end() || !it->second.evicted) return;
  it->second.deleted = true;
  lost_gpu_ms_ += GpusOf(pods_[pod]) * static_cast<double>(now_ms - bound_at_ms);
}

void PreemptionLedger::AddTo(Report& report, const std::function<PodEnd(std::size_t)>& end,
                             std::int64_t now_ms) const {
  PreemptionReport& r = report.preemption;
  std::vector<std::int64_t> waits;
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    if (pods_[i].priority <= lowest_priority_) continue;
    const PodEnd e = end(i);
    if (!e.arrived) continue;
    ++r.high_priority_pods;
    if (e.bound) {
      ++r.high_priority_bound;
      waits.push_back(e.bound_at - pods_[i].arrive_ms);
    } else if (e.waiting) {
      waits.push_back(now_ms - pods_[i].arrive_ms);
    }
  }
  std::sort(waits.begin(), waits.end());
  r.high_priority_p50_ms = Percentile(waits, 50);
  r.high_priority_p99_ms = Percentile(waits, 99);
  r.preemptions = preemptions_;
  r.memory_freed_beyond_mib = beyond_mib_;
  r.work_lost_gpu_seconds = lost_gpu_ms_ / 1000.0;
  for (const auto& [pod, v] : victims_) {
    if (!v.evicted) continue;
    ++r.victims;
    if (!v.deleted) {
      ++r.victims_terminating;
      continue;
    }
    const PodEnd preemptor = end(v.preemptor);
    if (!preemptor.bound || preemptor.node != v.node) ++r.evicted_not_helped;
  }
}

}  // namespace devshare::sim::internal
