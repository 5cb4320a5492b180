// PlanPreemption (devshare/preemption.hpp): kube-scheduler's victim
// selection and node ranking (sched/victims.hpp), with devshare's Filter as
// the judge of fit.
#include "devshare/preemption.hpp"

#include <fmt/format.h>

#include <map>

#include "sched/victims.hpp"

namespace devshare {

namespace {

// Filter on one node of the working snapshot.
class FilterJudge final : public internal::VictimJudge {
 public:
  FilterJudge(const ClusterSnapshot& snapshot, const Pod& pod, std::int64_t now,
              const FilterOptions& options)
      : VictimJudge(snapshot), pod_(pod), now_(now), options_(options) {}

  Result<bool> Fits(const std::string& node, PreemptionCandidate& candidate,
                    std::string* reason) override {
    const std::string one[] = {node};
    Result<FilterResult> r = Filter(Work(), pod_, one, now_, options_);
    if (!r.ok()) return r.status();
    if (!r->node) {
      if (reason != nullptr && !r->failed.empty()) *reason = r->failed.front().reason;
      return false;
    }
    candidate.devices = std::move(r->devices);
    candidate.annotations = std::move(r->annotations);
    return true;
  }

 private:
  const Pod& pod_;
  std::int64_t now_;
  const FilterOptions& options_;
};

}  // namespace

Result<PreemptionPlan> PlanPreemption(const ClusterSnapshot& snapshot, const Pod& pod,
                                      std::span<const Pod> pods,
                                      std::span<const PodDisruptionBudget> budgets,
                                      std::span<const std::string> candidates, std::int64_t now,
                                      const FilterOptions& options, std::size_t max_candidates) {
  PreemptionPlan plan;
  if (pod.preemption_policy == "Never") {
    plan.refused = "its preemptionPolicy is Never";
    return plan;
  }
  Result<FilterResult> first = Filter(snapshot, pod, candidates, now, options);
  if (!first.ok()) return first.status();
  if (first->node) {
    plan.refused = fmt::format("it fits on {} without preemption", *first->node);
    return plan;
  }
  if (!first->has_requests) {
    plan.refused = "it asks for no device";
    return plan;
  }
  std::map<std::string, std::string> reasons;
  for (const NodeFailure& f : first->failed) reasons[f.node] = f.reason;
  // A pod given back is added as the snapshot was given it (one whose
  // device annotations do not decode holds its CPU and memory only, then
  // as now).
  FilterJudge judge(snapshot, pod, now, options);
  return internal::PlanVictims(pod, pods, budgets, reasons, judge, max_candidates);
}

}  // namespace devshare
