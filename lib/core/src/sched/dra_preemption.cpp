// dra::PlanClaimPreemption (devshare/dra_preemption.hpp): the victims and
// ranking of sched/victims.hpp, with the DRA placer as the judge of fit.
#include "devshare/dra_preemption.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "sched/victims.hpp"
#include "state/fgd_measure.hpp"
#include "state/snapshot_state.hpp"

namespace devshare::dra {

namespace core = ::devshare::internal;

namespace {

using ClaimsByPod = std::map<std::string, std::vector<const ResourceClaim*>>;

bool IsPod(const ClaimConsumer& c) { return c.api_group.empty() && c.resource == "pods"; }

// Why claims and `resources` do not fit `node` (Placer::Fit said so).
std::string NoFitReason(const core::NodeState& node, const PodResources& resources) {
  const core::Room room = core::FreeRoom(node);
  return room.cpu < resources.cpu_milli || room.memory < resources.memory_bytes
             ? "short of CPU or memory"
             : "short of devices for its claims";
}

// Placer::Fit on the working snapshot; a pod set aside takes its claims
// along once no other consumer is left.
class ClaimJudge final : public core::VictimJudge {
 public:
  ClaimJudge(const ClusterSnapshot& snapshot, Placer& placer,
             const std::vector<ResourceClaim>& claims, const PodResources& resources,
             const ClaimsByPod& held)
      : VictimJudge(snapshot),
        placer_(placer),
        claims_(claims),
        resources_(resources),
        held_(held) {}

  bool SetAside(const Pod& pod) override {
    bool took = Work().RemovePod(pod.uid);
    aside_.insert(pod.uid);
    for (const ResourceClaim* c : HeldBy(pod)) {
      if (Released(*c)) took = Work().RemoveResourceClaim(c->claim_namespace, c->name) || took;
    }
    // Holding nothing here, it is no victim, and frees no claim it shares.
    if (!took) aside_.erase(pod.uid);
    return took;
  }

  void GiveBack(const Pod& pod) override {
    for (const ResourceClaim* c : HeldBy(pod)) {
      if (Released(*c)) Work().AddResourceClaim(*c);
    }
    aside_.erase(pod.uid);
    static_cast<void>(Work().AddPod(pod));
  }

  Result<bool> Fits(const std::string& node, PreemptionCandidate& candidate,
                    std::string* reason) override {
    Result<std::optional<NodeFit>> fit = placer_.Fit(Work(), claims_, resources_, node);
    if (!fit.ok()) return fit.status();
    if (!*fit) {
      const core::NodeState* state = Work().state().FindNode(node);
      if (reason != nullptr && state != nullptr) *reason = NoFitReason(*state, resources_);
      return false;
    }
    candidate.allocations = std::move((*fit)->allocations);
    return true;
  }

 private:
  const std::vector<const ResourceClaim*>& HeldBy(const Pod& pod) const {
    static const std::vector<const ResourceClaim*> kNone;
    auto it = held_.find(pod.uid);
    return it == held_.end() ? kNone : it->second;
  }
  // Whether every consumer of `claim` is a pod set aside.
  bool Released(const ResourceClaim& claim) const {
    return std::all_of(claim.reserved_for.begin(), claim.reserved_for.end(),
                       [&](const ClaimConsumer& c) { return IsPod(c) && aside_.contains(c.uid); });
  }

  Placer& placer_;
  const std::vector<ResourceClaim>& claims_;
  const PodResources& resources_;
  const ClaimsByPod& held_;
  std::set<std::string> aside_;  // UIDs
};

}  // namespace

Result<PreemptionPlan> PlanClaimPreemption(const ClusterSnapshot& snapshot, Placer& placer,
                                           const Pod& pod, const std::vector<ResourceClaim>& claims,
                                           const PodResources& resources, std::span<const Pod> pods,
                                           std::span<const PodDisruptionBudget> budgets,
                                           const ServedClasses& served) {
  PreemptionPlan plan;
  if (pod.preemption_policy == "Never") {
    plan.refused = "its preemptionPolicy is Never";
    return plan;
  }
  if (claims.empty()) {
    plan.refused = "it has no claim to allocate";
    return plan;
  }
  // Why it fits nowhere now, node by node; the nodes it may not go to are
  // no candidates.
  const core::SnapshotState& s = snapshot.state();
  std::map<std::string, std::string> reasons;
  for (std::uint32_t i : s.by_name) {
    const core::NodeState& node = s.nodes[i];
    if (!node.present) continue;
    if (std::optional<std::string> excluded = NodeExcludes(pod, node.object)) {
      plan.unresolvable.push_back(NodeFailure{node.name, std::move(*excluded)});
      continue;
    }
    Result<std::optional<NodeFit>> fit = placer.Fit(snapshot, claims, resources, node.name);
    if (!fit.ok()) return fit.status();
    if (*fit) {
      plan.refused = fmt::format("its claims fit on {} without preemption", node.name);
      plan.unresolvable.clear();
      return plan;
    }
    reasons[node.name] = NoFitReason(node, resources);
  }
  // The claims of served classes each pod holds; the pods holding none are
  // no victims.
  ClaimsByPod held;
  for (const ResourceClaim* c : snapshot.ResourceClaims()) {
    if (!c->allocation || !AsksServedClass(c->spec, served)) continue;
    for (const ClaimConsumer& consumer : c->reserved_for) {
      if (IsPod(consumer)) held[consumer.uid].push_back(c);
    }
  }
  std::vector<Pod> holders;
  for (const Pod& p : pods) {
    if (held.contains(p.uid)) holders.push_back(p);
  }
  ClaimJudge judge(snapshot, placer, claims, resources, held);
  Result<PreemptionPlan> victims = core::PlanVictims(pod, holders, budgets, reasons, judge);
  if (!victims.ok()) return victims.status();
  // The excluded nodes and those PlanVictims found unresolvable, by name.
  for (NodeFailure& f : victims->unresolvable) plan.unresolvable.push_back(std::move(f));
  std::sort(plan.unresolvable.begin(), plan.unresolvable.end(),
            [](const NodeFailure& a, const NodeFailure& b) { return a.node < b.node; });
  plan.candidates = std::move(victims->candidates);
  return plan;
}

}  // namespace devshare::dra
