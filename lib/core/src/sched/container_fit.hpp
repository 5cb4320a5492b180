// container_fit.hpp — one container of a pod on a node's working devices
// (spec §4.4, §5.2, §5.3): the devices scored and ordered by the GPU policy
// before each request, Fit picking the devices that pass every check (with
// the selectors, MIG placements, the quota and topology), the picks' usage
// added. Private to the core; node_fit drives it container by container.
#ifndef DEVSHARE_SRC_CONTAINER_FIT_HPP_
#define DEVSHARE_SRC_CONTAINER_FIT_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sched/filter_plan.hpp"
#include "sched/filter_reasons.hpp"

namespace devshare::internal {

// Fits container `container` of `plan` on `devices` (node's working copies),
// request by request: on success its picks are in scratch.placement and
// their usage is on `devices`; on failure `reason` says why (HAMi's text).
bool FitContainer(const PodPlan& plan, const NodeState& node, std::vector<WorkDevice>& devices,
                  std::size_t container, Scratch& scratch, std::string& reason);

// The selectors of spec §1.2: the mode and type selectors, the UUID ones.
bool TypeAllowed(const PodPlan& plan, const Device& info);
bool UuidAllowed(const PodPlan& plan, const Device& info);

// fgd's device order: FgdKey(score_a, a) > FgdKey(score_b, b), compared
// field by field — the smallest fragmentation increase, then the fuller
// device, then the lower index: Fit visits a first.
inline bool FgdVisitsFirst(float score_a, const internal::HotDevice& a, float score_b,
                           const internal::HotDevice& b) {
  if (score_a != score_b) return score_a < score_b;
  if (a.used != b.used) return a.used > b.used;
  return a.index < b.index;
}

// ---------------------------------------------------------------------------
// Device checks (spec §4.4): the ones Fit and the node's quick feasibility
// share, each the first failing check's reason in HAMi's order, or
// kReasonCount. Inline: they run for every device of every node.

// Memory a request takes on a device of `devmem` MiB (Fit's rule: the
// percentage only when no MiB are asked; see ScoredMemory).
inline std::int32_t FitMemory(const ContainerRequest& r, std::int32_t devmem) {
  if (r.memreq > 0) return r.memreq;
  if (r.mem_percentage == ContainerRequest::kPercentageUnset) return 0;
  return static_cast<std::int32_t>(static_cast<std::int64_t>(devmem) * r.mem_percentage / 100);
}

// Before NUMA: health, cordons, the type and mode selectors.
[[gnu::always_inline]] inline Reason CheckIdentity(const PodPlan& plan, const NodeState& node,
                                                   const internal::HotDevice& d,
                                                   const DeviceSlot* slot, bool selectors,
                                                   bool cordons) {
  if (!d.healthy) return kCardNotHealth;
  if (cordons && std::binary_search(node.cordoned.begin(), node.cordoned.end(), slot->info.id))
    return kCardCordoned;
  if (selectors && !TypeAllowed(plan, slot->info)) return kCardTypeMismatch;
  return kReasonCount;
}

// After NUMA: the UUID selectors, a free slot, mutex.
[[gnu::always_inline]] inline Reason CheckSlot(const PodPlan& plan, const internal::HotDevice& d,
                                               const DeviceSlot* slot, bool selectors) {
  if (selectors && !UuidAllowed(plan, slot->info)) return kCardUuidMismatch;
  if (d.count <= d.used) return kCardTimeSlicingExhausted;
  if (plan.gpu.mutex && d.used > 0) return kExclusiveDeviceAllocateConflict;
  return kReasonCount;
}

// After the quota: memory and cores free, an exclusive ask on a used device,
// a zero-core ask on a device whose cores are all taken. `cores` at most 100.
[[gnu::always_inline]] inline Reason CheckRoom(const internal::HotDevice& d, std::int32_t memreq,
                                               std::int32_t cores) {
  if (d.devmem - d.usedmem < memreq) return kCardInsufficientMemory;
  if (d.devcore - d.usedcores < cores) return kCardInsufficientCore;
  if (d.devcore == 100 && cores == 100 && d.used > 0) return kExclusiveDeviceAllocateConflict;
  if (d.devcore != 0 && d.usedcores == d.devcore && cores == 0) return kCardComputeUnitsExhausted;
  return kReasonCount;
}

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_CONTAINER_FIT_HPP_
