// devshare/preemption.hpp — which lower-priority pods a pod that fits on no
// node would evict, on which node, and the devices it would take there.
//
// kube-scheduler's DefaultPreemption (SelectVictimsOnNode,
// pickOneNodeForPreemption), judged by devshare's Filter instead of its
// in-tree plugins, so a shared device's memory, cores and slots count: on
// each node, every pod of lower priority is set aside; if the pod does not
// fit even then, no eviction there can help; else the pods are given back
// one by one, those whose eviction would violate a PodDisruptionBudget
// first, each in order of importance (higher priority, then earlier start),
// and a pod stays evicted only when the preemptor no longer fits with it.
// No victim can therefore be spared alone. The nodes are ranked as
// kube-scheduler ranks them: fewest budget violations, then the lowest
// priority of the most important victim, then the smallest sum of
// priorities, then the fewest victims, then the latest start among the
// most important victims; then by name.
//
// Thread-safety: a pure function of its arguments.
#ifndef DEVSHARE_PREEMPTION_HPP_
#define DEVSHARE_PREEMPTION_HPP_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/export.hpp"
#include "devshare/filter.hpp"
#include "devshare/objects.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"

namespace devshare {

struct PreemptionVictim {
  std::string pod_namespace;
  std::string name;
  std::string uid;
  std::int64_t priority = 0;
  bool violates_budget = false;  // its eviction exceeds a PodDisruptionBudget
  friend bool operator==(const PreemptionVictim&, const PreemptionVictim&) = default;
};

// One node where evicting `victims` lets the pod fit.
struct PreemptionCandidate {
  std::string node;
  // Most important first (higher priority, then earlier start, then name).
  std::vector<PreemptionVictim> victims;
  std::size_t budget_violations = 0;
  // What the pod takes there once the victims are gone, as Filter gives it:
  // its devices and the annotations that record them.
  PodDevices devices;
  StringMap annotations;
  // A DRA preemptor (dra::PlanClaimPreemption): its claims' allocations
  // there, one per claim in order; the two above are then empty.
  std::vector<dra::Allocation> allocations;
  friend bool operator==(const PreemptionCandidate&, const PreemptionCandidate&) = default;
};

struct PreemptionPlan {
  // Every node where evictions help, best first; empty when none does.
  std::vector<PreemptionCandidate> candidates;
  // The nodes where no eviction helps, with Filter's reasons once every
  // pod of lower priority is set aside (a node without such a pod: its
  // reasons as they are), by node name.
  std::vector<NodeFailure> unresolvable;
  // With `max_candidates`: the nodes left unexamined once enough candidates
  // were found, with Filter's reasons as things are, by node name.
  std::vector<NodeFailure> unexamined;
  // Why the pod may not preempt at all, or empty: its preemptionPolicy is
  // Never, or it fits somewhere already.
  std::string refused;
  const PreemptionCandidate* chosen() const {
    return candidates.empty() ? nullptr : &candidates.front();
  }
  friend bool operator==(const PreemptionPlan&, const PreemptionPlan&) = default;
};

// The preemption plan for `pod` over `candidates` (every node of the
// snapshot when empty). `pods` are the pods that may be victims, as the
// API server has them: those bound to a node (spec.nodeName) with a lower
// priority than `pod` are considered there, if the snapshot holds them
// (their devices, CPU or memory). `budgets` are the cluster's
// PodDisruptionBudgets. `now` and `options` as Filter takes them. With
// `max_candidates` above 0, as kube-scheduler limits its dry run
// (max(100, 10 % of the nodes)): the nodes are examined from one the pod's
// UID chooses on, in name order and wrapping, until that many candidates,
// one of them without a budget violation, are found; the rest are
// `unexamined`. Errors: Filter's.
DEVSHARE_EXPORT Result<PreemptionPlan> PlanPreemption(
    const ClusterSnapshot& snapshot, const Pod& pod, std::span<const Pod> pods,
    std::span<const PodDisruptionBudget> budgets, std::span<const std::string> candidates,
    std::int64_t now, const FilterOptions& options = {}, std::size_t max_candidates = 0);

}  // namespace devshare

#endif  // DEVSHARE_PREEMPTION_HPP_
