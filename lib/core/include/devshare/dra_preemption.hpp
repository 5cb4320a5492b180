// devshare/dra_preemption.hpp — which lower-priority pods a pod whose
// ResourceClaims fit on no node would evict, on which node, and the
// devices its claims would get there.
//
// PlanPreemption's rules (devshare/preemption.hpp: the victims set aside,
// given back budget-violating first and most important first, kept only
// when the claims no longer fit without them; the nodes ranked as
// kube-scheduler ranks them), judged by dra::Placer::Fit instead of
// Filter. A victim is a pod bound to the node holding at least one
// allocated claim of a served class reserved for it; setting it aside
// frees its CPU and memory and releases each such claim whose every
// consumer is a pod set aside (as the resourceclaim controller deallocates
// a claim once no pod it is reserved for is left, and deletes one made
// from a template with its pod).
//
// Thread-safety: as the Placer (one per thread); the snapshot is read only.
#ifndef DEVSHARE_DRA_PREEMPTION_HPP_
#define DEVSHARE_DRA_PREEMPTION_HPP_

#include <span>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_gate.hpp"
#include "devshare/dra_place.hpp"
#include "devshare/export.hpp"
#include "devshare/objects.hpp"
#include "devshare/preemption.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"

namespace devshare::dra {

// The preemption plan for `pod` (its CPU and memory in `resources`) whose
// `claims` (unallocated, in the pod's order) are to be allocated, over
// every node of the snapshot. `pods` are the pods that may be victims (as
// PlanPreemption takes them); `budgets` the cluster's
// PodDisruptionBudgets; `served` the classes whose claims count. Each
// candidate carries the claims' `allocations` there. The nodes the pod may
// not go to (NodeExcludes) are unresolvable with that reason. Refused:
// preemptionPolicy Never, no claim, or a node where the claims fit already.
// Errors: Placer::Fit's.
DEVSHARE_EXPORT Result<PreemptionPlan> PlanClaimPreemption(
    const ClusterSnapshot& snapshot, Placer& placer, const Pod& pod,
    const std::vector<ResourceClaim>& claims, const PodResources& resources,
    std::span<const Pod> pods, std::span<const PodDisruptionBudget> budgets,
    const ServedClasses& served);

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_PREEMPTION_HPP_
