// Private: what preemption did in a run (Report::preemption) — each
// preemption the engines began, its victims' evictions and deletions, the
// high-priority pods' time to bind — and the invariant on victims: every
// victim is of lower priority than its preemptor, and every eviction is a
// preemption's.
//
// Pods are the scenario's indices. Thread-safety: none; a run is
// single-threaded.
#ifndef DEVSHARE_SIM_SRC_PREEMPTION_LEDGER_HPP_
#define DEVSHARE_SIM_SRC_PREEMPTION_LEDGER_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "devshare/sim/simulator.hpp"

namespace devshare::sim::internal {

// A pod as the run leaves it, for the ledger: bound at some point (when,
// and on which node), or not bound and not given up (still waiting).
struct PodEnd {
  bool arrived = false;
  bool bound = false;
  bool waiting = false;
  std::int64_t bound_at = 0;
  std::string node;
};

class PreemptionLedger {
 public:
  explicit PreemptionLedger(const std::vector<PodSpec>& pods);

  // An engine nominated `preemptor` to `node` after evicting `victims`,
  // which hold `victims_mib` of GPU memory there; the preemptor takes
  // `needed_mib`. Errors: the first victim whose priority is not below the
  // preemptor's, in words.
  std::optional<std::string> Preempting(std::size_t preemptor, const std::string& node,
                                        const std::vector<std::size_t>& victims,
                                        std::int64_t victims_mib, std::int64_t needed_mib);
  // The Eviction API accepted the eviction of `pod`. Errors: no preemption
  // names it as a victim.
  std::optional<std::string> Evicted(std::size_t pod);
  // `pod` was deleted at `now_ms`, bound since `bound_at_ms`: an evicted
  // pod's run is lost (its GPUs times that time).
  void Deleted(std::size_t pod, std::int64_t bound_at_ms, std::int64_t now_ms);
  // The figures, each pod's end told by `end` (nothing to report when the
  // scenario's pods are all of one priority and none preempted).
  void AddTo(Report& report, const std::function<PodEnd(std::size_t)>& end,
             std::int64_t now_ms) const;

 private:
  struct Victim {
    std::size_t preemptor = 0;
    std::string node;
    bool evicted = false, deleted = false;
  };

  const std::vector<PodSpec>& pods_;
  std::int64_t lowest_priority_ = 0;
  std::uint64_t preemptions_ = 0;
  std::int64_t beyond_mib_ = 0;
  double lost_gpu_ms_ = 0;
  std::map<std::size_t, Victim> victims_;  // by pod
};

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_PREEMPTION_LEDGER_HPP_
