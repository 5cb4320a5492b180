// fragmentation.hpp — fgd's measure (Weng et al., ATC '23) as Filter,
// MeasureFragmentation and the snapshot use it: for each workload class, the
// free GPU share of a node the class cannot use, weighted by the class's
// share. A class the node's free CPU or memory cannot host can use none of
// it; otherwise a fractional class r cannot use a device with less than r
// free, and a k-GPU class only fully free devices, none when fewer than k
// are. The sums behind it live in a FragState so that changing one device's
// free share costs O(shapes), not O(devices x classes).
//
// Cost per scored node: the snapshot keeps every node's sums for the
// workload it was given (RemeasureNode after each change to the node), and
// Filter borrows them until a pick changes them: O(1) to load. Each distinct
// (free share, ask) of a node's devices costs O(shapes), unless a node
// measured alike (NodeMeasure::signature) was scored for the same request
// in the same call; the placement's fragmentation costs O(shapes) unless one
// device changed by exactly the ask it was scored for. Which classes fit a
// node's CPU and memory is a table row or cell (tabulated for the
// snapshot's workload, else summed once per call): O(log classes). Private
// to the core.
#ifndef DEVSHARE_SRC_FRAGMENTATION_HPP_
#define DEVSHARE_SRC_FRAGMENTATION_HPP_

#include <memory>
#include <span>
#include <vector>

#include "fgd_model.hpp"
#include "filter_plan.hpp"
#include "snapshot_state.hpp"

namespace devshare::internal {

// The workload (the default mix when empty) as fit tables: O(classes log
// classes + CPU steps x shapes).
FgdModel MakeFgdModel(std::span<const WorkloadClass> workload);

// The snapshot's tables when `workload` is the one it measures, else tables
// made into `own`.
const FgdModel& ModelFor(const SnapshotState& s, std::span<const WorkloadClass> workload,
                         std::unique_ptr<FgdModel>& own);

// Free share of a device in [0, 1]: the tighter of free cores and free
// memory; 0 when it has no free slot or is unhealthy.
float FreeShare(const HotDevice& d);
// The sums of a node whose devices have the free shares `free`.
void Measure(std::span<const float> free, const FgdModel& m, FragState& s);
// Fragmentation(s, m, w) were one device's free share `from` to become `to`.
double FragmentationAfterMove(const FragState& s, float from, float to, const FgdModel& m,
                              const FitWeights& w);
// The weighted fragmentation of `s` for the classes `w` says fit.
double Fragmentation(const FragState& s, const FgdModel& m, const FitWeights& w);
// Sums every cell of `m` into its table, unless they would take more than
// kMaxTabulated numbers: O(CPU steps x memory steps x classes), once, for a
// model many Filter calls share.
constexpr std::size_t kMaxTabulated = std::size_t{1} << 20;
void TabulateCells(FgdModel& m);
// The weights of the classes that fit `room`: a table row or cell, or a
// cell summed into `memo` the first time it is asked for.
FitWeights FitFor(const FgdModel& m, Room room, FitMemo& memo);
// A node's free CPU and memory; the same with the pod's own placement
// released first; the same less what the pod asks.
Room FreeRoom(const NodeState& node);
Room NodeRoom(const NodeState& node, const PodPlan& plan);
Room Less(Room room, const PodPlan& plan);
// The fgd node score from the decrease in fragmentation a placement brings:
// 100 * sigmoid(decrease), rounded down; the second form keeps it in
// scratch.node_scores.
double FgdNodeScore(double decrease);
double FgdNodeScore(double decrease, Scratch& scratch);

// `node`'s measure for the model `m`, from the snapshot's numbers.
void MeasureNode(const SnapshotState& s, const NodeState& node, const FgdModel& m, FitMemo& fits,
                 NodeMeasure& out);
// The snapshot's measure of `node` for its fragmentation workload (a no-op
// without one): called after every change to the node's devices, CPU or
// memory.
void RemeasureNode(SnapshotState& s, const NodeState& node);
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

#endif  // DEVSHARE_SRC_FRAGMENTATION_HPP_
