// fragmentation.hpp — fgd (Weng et al., ATC '23) in Filter and
// MeasureFragmentation: the snapshot's measure (state/fgd_measure.hpp) read
// per scored node, the working measure that follows a pod's picks, and fgd's
// node and device scores.
//
// Cost per scored node: Filter borrows the snapshot's sums until a pick
// changes them: O(1) to load. Each distinct (free share, ask) of a node's
// devices costs O(shapes), unless a node measured alike
// (NodeMeasure::signature) was scored for the same request in the same
// call; the placement's fragmentation costs O(shapes) unless one device
// changed by exactly the ask it was scored for. Private to the core.
#ifndef DEVSHARE_SRC_SCHED_FRAGMENTATION_HPP_
#define DEVSHARE_SRC_SCHED_FRAGMENTATION_HPP_

#include <memory>
#include <span>
#include <vector>

#include "sched/filter_plan.hpp"
#include "state/fgd_measure.hpp"
#include "state/fgd_model.hpp"
#include "state/snapshot_state.hpp"

namespace devshare::internal {

// The snapshot's tables when `workload` is the one it measures, else tables
// made into `own`.
const FgdModel& ModelFor(const SnapshotState& s, std::span<const WorkloadClass> workload,
                         std::unique_ptr<FgdModel>& own);

// A node's free CPU and memory with the pod's own placement released
// first (FreeRoom's); the same less what the pod asks.
Room NodeRoom(const NodeState& node, const PodPlan& plan);
Room Less(Room room, const PodPlan& plan);
// The fgd node score from the decrease in fragmentation a placement brings:
// 100 * sigmoid(decrease), rounded down; the second form keeps it in
// scratch.node_scores.
double FgdNodeScore(double decrease);
double FgdNodeScore(double decrease, Scratch& scratch);

// The snapshot's measure of `node` when it is the one the plan needs (the
// plan's workload is the snapshot's and the pod holds nothing on the
// node), else nullptr.
inline const NodeMeasure* CachedMeasure(const SnapshotState& s, const NodeState& node,
                                        const PodPlan& plan) {
  if (plan.fgd == nullptr || plan.own_fgd != nullptr) return nullptr;  // not the snapshot's
  if (plan.previous != nullptr && plan.previous->node == node.name) return nullptr;
  if (plan.previous_requests != nullptr && plan.previous_requests->node == node.name) {
    return nullptr;
  }
  return &s.fragmentation->nodes[static_cast<std::size_t>(&node - s.nodes.data())];
}

// Filter's working measure (Scratch): starts from `cached` (borrowed until
// a pick changes it) or is measured from the working devices when first
// needed (EnsureMeasured), follows the picks, and knows the working devices'
// fragmentation under scratch.after when it can. The functions below
// EnsureMeasured need it measured.
void StartMeasure(const NodeMeasure* cached, Scratch& scratch);
void EnsureMeasured(const std::vector<WorkDevice>& devices, const PodPlan& plan, Scratch& scratch);
// The working devices' fragmentation with the classes scratch.after says
// fit.
double CurrentFragmentation(const PodPlan& plan, Scratch& scratch);
// The same were `device` left with the free share `now`: a device score's
// when it foresaw that move.
double FragmentationAfterPick(const PodPlan& plan, Scratch& scratch, std::size_t device, float now);
// Keeps the working measure in step with picks just applied to the devices.
void TrackPicks(const std::vector<WorkDevice>& devices, const std::vector<Pick>& picked,
                const PodPlan& plan, Scratch& scratch);
// fgd as a GPU policy: each device's score (into scratch.scores) is the
// increase in node fragmentation if `request`'s share of it were taken
// (lower is better). `devices` are the measured ones: HotDevice (the
// snapshot's, borrowed) or WorkDevice.
template <typename Device>
void FgdDeviceScores(std::span<const Device> devices, const ContainerRequest& request,
                     const PodPlan& plan, Scratch& scratch);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_SCHED_FRAGMENTATION_HPP_
