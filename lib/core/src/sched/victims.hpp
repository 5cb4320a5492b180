// kube-scheduler's victim selection and node ranking (SelectVictimsOnNode,
// pickOneNodeForPreemption), over a judge of fit: PlanPreemption's is
// Filter (devshare/preemption.hpp), dra::PlanClaimPreemption's the DRA
// placer (devshare/dra_preemption.hpp).
#ifndef DEVSHARE_SRC_VICTIMS_HPP_
#define DEVSHARE_SRC_VICTIMS_HPP_

#include <map>
#include <optional>
#include <span>
#include <string>

#include "devshare/objects.hpp"
#include "devshare/preemption.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"

namespace devshare::internal {

// Whether the preemptor fits a node once pods are set aside. The pods are
// set aside in a copy of the snapshot given, made at the first SetAside,
// so a plan with no pod to set aside copies nothing.
class VictimJudge {
 public:
  explicit VictimJudge(const ClusterSnapshot& snapshot) : snapshot_(&snapshot) {}
  virtual ~VictimJudge() = default;
  VictimJudge(const VictimJudge&) = delete;
  VictimJudge& operator=(const VictimJudge&) = delete;

  // Takes what `pod` holds out of the working snapshot; false when it held
  // nothing there (it is then no victim). The default: its devices, CPU
  // and memory (ClusterSnapshot::RemovePod).
  virtual bool SetAside(const Pod& pod) { return Work().RemovePod(pod.uid); }
  // Puts back what SetAside took, as the snapshot was given it.
  virtual void GiveBack(const Pod& pod) { static_cast<void>(Work().AddPod(pod)); }
  // Whether the preemptor fits `node` of the working snapshot; when it
  // does, what it would take there is written to `candidate` (its devices
  // and annotations, or its claims' allocations); when not, why to
  // `reason` unless null. Errors: the judge's own, which end the plan.
  virtual Result<bool> Fits(const std::string& node, PreemptionCandidate& candidate,
                            std::string* reason) = 0;

 protected:
  ClusterSnapshot& Work() {
    if (!work_) work_.emplace(*snapshot_);
    return *work_;
  }

 private:
  const ClusterSnapshot* snapshot_;
  std::optional<ClusterSnapshot> work_;
};

// The plan for `pod` on the nodes of `reasons` (node -> why it does not fit
// there as things are): on each, the pods of `pods` bound there with a
// lower priority than `pod` are set aside; where it fits then, they are
// given back one by one (those whose eviction violates one of `budgets`
// first, each group most important first) and a pod stays a victim only
// when `pod` no longer fits with it; the candidates ranked as
// kube-scheduler ranks them. With `enough` above 0, as kube-scheduler's
// DryRunPreemption: the nodes are examined from one chosen by the pod's
// UID on (in name order, wrapping), until `enough` candidates including
// one without a budget violation are found; the others are `unexamined`.
// `refused` is left empty. Errors: the judge's.
Result<PreemptionPlan> PlanVictims(const Pod& pod, std::span<const Pod> pods,
                                   std::span<const PodDisruptionBudget> budgets,
                                   const std::map<std::string, std::string>& reasons,
                                   VictimJudge& judge, std::size_t enough = 0);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_VICTIMS_HPP_
