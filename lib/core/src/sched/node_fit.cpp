#include "sched/node_fit.hpp"

#include <algorithm>

#include "sched/container_fit.hpp"
#include "sched/fragmentation.hpp"

namespace devshare::internal {

namespace {

void CopyDevices(const std::vector<WorkDevice>& from, std::vector<WorkDevice>& to) {
  to.resize(from.size());
  for (std::size_t i = 0; i < from.size(); ++i) {
    WorkDevice& t = to[i];
    const WorkDevice& f = from[i];
    // The hot part assigned as a whole; the rest field by field below.
    static_cast<internal::HotDevice&>(t) = f;  // NOLINT(cppcoreguidelines-slicing)
    t.slot = f.slot;
    t.score = f.score;
    if (f.is_mig || !t.mig.empty()) t.mig = f.mig;
  }
}

// Node score (spec §5.1), float32 as HAMi, O(1) from the node's aggregates
// (less the pod's own previous reservation, released first):
//   S = 10 * (ΣUsed/ΣCount + ΣUsedcores/ΣTotalcore + ΣUsedmem/ΣTotalmem), 0 when a total is 0.
float NodeBaseScore(const NodeState& node, const PodPlan& plan) {
  std::int64_t used = node.used_slots, cores = node.used_cores, mem = node.used_mem;
  if (plan.previous != nullptr && plan.previous->node == node.name) {
    for (const internal::PodUsageItem& item : plan.previous->usage) {
      bool on_node = false;
      for (const DeviceSlot& d : node.devices) {
        on_node = on_node || (d.vendor == item.vendor && d.info.id == item.usage.uuid);
      }
      if (!on_node) continue;
      used -= std::max(item.usage.slots, 1);
      cores -= item.usage.usedcores;
      mem -= item.usage.usedmem;
    }
  }
  if (node.total_slots == 0 || node.total_cores == 0 || node.total_mem == 0) return 0;
  return 10.0f * (static_cast<float>(used) / static_cast<float>(node.total_slots) +
                  static_cast<float>(cores) / static_cast<float>(node.total_cores) +
                  static_cast<float>(mem) / static_cast<float>(node.total_mem));
}

// ---------------------------------------------------------------------------
// One node (spec §4.5)

// Forgets the earlier requests' order: registration order, as HAMi's list
// is before a node's first sort (and each init container's). The ranks are
// only kept for Go's sort (`go_sort`).
void ResetOrder(Scratch& scratch, std::size_t devices, bool go_sort) {
  scratch.history.clear();
  if (!go_sort) return;
  scratch.rank.resize(devices);
  for (std::uint32_t i = 0; i < devices; ++i) scratch.rank[i] = i;
}

// Whether one request fits without choosing devices: for a single request
// whose checks do not depend on what else was picked (no NUMA binding,
// topology, quota or MIG), Fit succeeds exactly when `nums` devices pass
// every check. Used for the nodes that are not chosen, whose devices nobody
// needs; kFails is exact too but carries no reason, and kUnknown (a MIG
// device) needs the full evaluation.
enum class Feasibility { kFits, kFails, kUnknown };

// The one request of a simple plan, and what its checks need on one node.
struct SimpleAsk {
  const ContainerRequest& request;
  std::uint32_t vendor;
  bool selectors;      // the selectors apply (the NVIDIA vendor)
  bool cordons;        // the node has cordoned devices
  std::int32_t cores;  // capped at 100
};

[[gnu::always_inline]] inline SimpleAsk SimpleAskOf(const PodPlan& plan, const NodeState& node) {
  const ContainerRequest& r = plan.requests[plan.simple_container][plan.simple_index];
  const std::uint32_t vendor = plan.request_vendor[plan.simple_container][plan.simple_index];
  return SimpleAsk{r, vendor, plan.selectors_any && vendor == plan.nvidia, !node.cordoned.empty(),
                   std::min(r.coresreq, 100)};
}

// Whether a device is of the request's vendor and passes every check Fit
// makes for it; which one fails first does not matter here, so the checks
// on the device's numbers go first and its strings are read only for
// cordons and selectors.
[[gnu::always_inline]] inline bool Passes(const SimpleAsk& ask, const PodPlan& plan,
                                          const NodeState& node, const internal::HotDevice& d,
                                          const DeviceSlot* slot) {
  if (d.vendor != ask.vendor ||
      CheckIdentity(plan, node, d, slot, /*selectors=*/false, /*cordons=*/false) != kReasonCount ||
      CheckSlot(plan, d, slot, /*selectors=*/false) != kReasonCount ||
      CheckRoom(d, FitMemory(ask.request, d.devmem), ask.cores) != kReasonCount) {
    return false;
  }
  return !(ask.cordons || ask.selectors) ||
         (CheckIdentity(plan, node, d, slot, ask.selectors, ask.cordons) == kReasonCount &&
          CheckSlot(plan, d, slot, ask.selectors) == kReasonCount);
}

Feasibility QuickFeasibility(const SnapshotState& s, const PodPlan& plan, const NodeState& node) {
  const SimpleAsk ask = SimpleAskOf(plan, node);
  const internal::HotDevice* hot = s.Hot(node);
  std::int32_t passing = 0;
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    if (hot[i].is_mig) return Feasibility::kUnknown;
    if (Passes(ask, plan, node, hot[i], &node.devices[i]) && ++passing == ask.request.nums)
      return Feasibility::kFits;
  }
  return Feasibility::kFails;
}

// QuickFeasibility and the node score together for a simple plan's
// one-device request under the fgd node and GPU policies, on the node's
// measure from the snapshot, without fitting a working copy: Fit visits the
// devices by descending key, which differs from device to device under fgd,
// so it picks the passing device of the highest key, and the placement's
// fragmentation is that of the one device it changes (as TrackPicks and
// CurrentFragmentation reach it). On kFits, `verdict` is the node's.
Feasibility QuickFgd(const SnapshotState& s, const PodPlan& plan, const NodeState& node,
                     const NodeMeasure& cached, Scratch& scratch, NodeVerdict& verdict) {
  const SimpleAsk ask = SimpleAskOf(plan, node);
  const internal::HotDevice* hot = s.Hot(node);
  std::vector<std::uint32_t>& passing = scratch.order;
  passing.clear();
  for (std::uint32_t i = 0; i < node.devices.size(); ++i) {
    if (hot[i].is_mig) return Feasibility::kUnknown;
    if (Passes(ask, plan, node, hot[i], &node.devices[i])) passing.push_back(i);
  }
  if (passing.empty()) return Feasibility::kFails;
  scratch.after = FitFor(*plan.fgd, Less(FreeRoom(node), plan), scratch.fits);
  StartMeasure(&cached, scratch);
  FgdDeviceScores(std::span(hot, node.devices.size()), ask.request, plan, scratch);
  // Among equal keys Fit visits the later device first.
  std::uint32_t best = passing.front();
  for (std::uint32_t i : passing) {
    if (!FgdVisitsFirst(scratch.scores[best], hot[best], scratch.scores[i], hot[i])) best = i;
  }
  internal::HotDevice picked = hot[best];
  picked.used += 1;
  picked.usedmem += FitMemory(ask.request, picked.devmem);
  picked.usedcores += ask.cores;
  verdict.fits = true;
  verdict.free_gpus = cached.sums.all;
  verdict.score = FgdNodeScore(
      cached.fragmentation - FragmentationAfterPick(plan, scratch, best, FreeShare(picked)),
      scratch);
  return Feasibility::kFits;
}

}  // namespace

void LoadNode(const SnapshotState& s, const NodeState& node, const PodPlan& plan,
              std::vector<WorkDevice>& out) {
  out.resize(node.devices.size());
  const internal::HotDevice* hot = s.Hot(node);
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    WorkDevice& w = out[i];
    static_cast<internal::HotDevice&>(w) = hot[i];
    w.slot = &node.devices[i];
    w.score = 0;
    w.mig.clear();
    if (w.is_mig) {
      for (const internal::MigInUse& m : node.devices[i].mig_in_use) w.mig.push_back(m.placement);
    }
  }
  // The pod's own reservation is released first (spec §4.2 step 4).
  if (plan.previous != nullptr && plan.previous->node == node.name) {
    for (const internal::PodUsageItem& item : plan.previous->usage) {
      for (WorkDevice& w : out) {
        if (w.vendor == item.vendor && w.slot->info.id == item.usage.uuid) {
          w.used -= std::max(item.usage.slots, 1);
          w.usedmem -= item.usage.usedmem;
          w.usedcores -= item.usage.usedcores;
          break;
        }
      }
    }
  }
}

NodeVerdict EvaluateNode(const SnapshotState& s, const PodPlan& plan, const NodeState& node,
                         Scratch& scratch, bool need_devices) {
  NodeVerdict verdict;
  if (!need_devices && plan.simple) {
    const NodeMeasure* cached =
        plan.node_fgd && plan.gpu.fgd &&
                plan.requests[plan.simple_container][plan.simple_index].nums == 1
            ? CachedMeasure(s, node, plan)
            : nullptr;
    const Feasibility quick = cached != nullptr ? QuickFgd(s, plan, node, *cached, scratch, verdict)
                                                : QuickFeasibility(s, plan, node);
    if (quick == Feasibility::kFits && cached != nullptr) return verdict;
    // fgd and volcano score the placement itself.
    if (quick == Feasibility::kFits && !plan.node_fgd && !plan.node_volcano) {
      verdict.fits = true;
      verdict.score = NodeBaseScore(node, plan);
      return verdict;
    }
    if (quick == Feasibility::kFails && !plan.reasons) return verdict;
  }
  // fgd: the node's measure from the snapshot when it has the one needed.
  const NodeMeasure* cached = nullptr;
  if (plan.node_fgd || plan.gpu.fgd) {
    // Devices are scored with the pod's CPU and memory placed on the node.
    const Room room = NodeRoom(node, plan);
    cached = CachedMeasure(s, node, plan);
    if (cached == nullptr) scratch.before = FitFor(*plan.fgd, room, scratch.fits);
    scratch.after = FitFor(*plan.fgd, Less(room, plan), scratch.fits);
  }
  // A pod without devices under the fgd node policy changes only which
  // classes the node's CPU and memory host.
  if (plan.node_fgd && cached != nullptr && !HasRequests(plan.requests)) {
    StartMeasure(cached, scratch);
    verdict.fits = true;
    verdict.free_gpus = cached->sums.all;
    verdict.score =
        FgdNodeScore(cached->fragmentation - CurrentFragmentation(plan, scratch), scratch);
    return verdict;
  }
  scratch.placement.resize(plan.requests.size());
  for (ContainerPicks& c : scratch.placement) c.resize(plan.vendors.size());
  // Init containers run one at a time, each on the node as it is; the
  // unchanged node is kept in `base` only when there are any.
  if (plan.init_requests) {
    LoadNode(s, node, plan, scratch.base);
    for (std::size_t c = 0; c < plan.init_containers; ++c) {
      if (plan.requests[c].empty()) continue;
      CopyDevices(scratch.base, scratch.work);
      ResetOrder(scratch, scratch.work.size(), plan.hami_exact.go_device_sort);
      StartMeasure(cached, scratch);
      if (!FitContainer(plan, node, scratch.work, c, scratch, verdict.reason)) return verdict;
    }
    CopyDevices(scratch.base, scratch.work);
  } else {
    LoadNode(s, node, plan, scratch.work);
  }
  ResetOrder(scratch, scratch.work.size(), plan.hami_exact.go_device_sort);
  StartMeasure(cached, scratch);
  scratch.volcano_score = 0;  // app containers only: Volcano does not see init containers
  double before = 0;
  if (plan.node_fgd && cached != nullptr) {
    before = cached->fragmentation;
    verdict.free_gpus = cached->sums.all;
  } else if (plan.node_fgd) {
    EnsureMeasured(scratch.work, plan, scratch);
    before = Fragmentation(scratch.frag, *plan.fgd, scratch.before);
    verdict.free_gpus = scratch.frag.all;
  }
  for (std::size_t c = plan.init_containers; c < plan.requests.size(); ++c) {
    if (!FitContainer(plan, node, scratch.work, c, scratch, verdict.reason)) return verdict;
  }
  verdict.fits = true;
  if (plan.node_fgd) {
    EnsureMeasured(scratch.work, plan, scratch);
    verdict.score = FgdNodeScore(before - CurrentFragmentation(plan, scratch), scratch);
  } else if (plan.node_volcano) {
    verdict.score = scratch.volcano_score;
  } else {
    verdict.score = NodeBaseScore(node, plan);
  }
  return verdict;
}

// NodeScore::normalized: min-max over the feasible nodes, inverted when the
// policy prefers the lower raw score. One pass, the policy's branch outside it.
void NormalizeScores(std::vector<NodeScore>& scores, double min, double max, bool lower_is_better) {
  const double range = max - min;
  if (!(range > 0)) {
    for (NodeScore& s : scores) s.normalized = 100;
  } else if (lower_is_better) {
    for (NodeScore& s : scores) s.normalized = 100 * (1 - (s.score - min) / range);
  } else {
    for (NodeScore& s : scores) s.normalized = 100 * ((s.score - min) / range);
  }
}

}  // namespace devshare::internal