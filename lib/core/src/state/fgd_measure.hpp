// fgd_measure.hpp — fgd's measure (Weng et al., ATC '23) as the snapshot
// keeps it per node and Filter and MeasureFragmentation read it: for each
// workload class, the free GPU share of a node the class cannot use,
// weighted by the class's share. A class the node's free CPU or memory
// cannot host can use none of it; otherwise a fractional class r cannot use
// a device with less than r free, and a k-GPU class only fully free devices,
// none when fewer than k are. The sums behind it live in a FragState so that
// changing one device's free share costs O(shapes), not O(devices x classes).
//
// The snapshot keeps every node's sums for the workload it was given
// (RemeasureNode after each change to the node). Which classes fit a node's
// CPU and memory is a table row or cell (tabulated for the snapshot's
// workload, else summed once per call): O(log classes). Private to the core;
// Filter's working measure and fgd's scores are in sched/fragmentation.hpp.
#ifndef DEVSHARE_SRC_STATE_FGD_MEASURE_HPP_
#define DEVSHARE_SRC_STATE_FGD_MEASURE_HPP_

#include <span>
#include <vector>

#include "state/fgd_model.hpp"
#include "state/snapshot_state.hpp"

namespace devshare::internal {

// The workload's classes are valid (kInvalidArgument otherwise).
Status ValidateWorkload(std::span<const WorkloadClass> workload);
// fgd's default workload mix (FilterOptions::workload when empty).
const std::vector<WorkloadClass>& DefaultWorkload();

// The workload (the default mix when empty) as fit tables: O(classes log
// classes + CPU steps x shapes).
FgdModel MakeFgdModel(std::span<const WorkloadClass> workload);

// Free share of a device in [0, 1]: the tighter of free cores and free
// memory; 0 when it has no free slot or is unhealthy.
float FreeShare(const HotDevice& d);
// A device of free share `f` added to the sums `s` (sign +1) or removed (-1).
void AddDevice(FragState& s, float f, const FgdModel& m, double sign);
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
// A node's free CPU and memory.
Room FreeRoom(const NodeState& node);

// `node`'s measure for the model `m`, from the snapshot's numbers.
void MeasureNode(const SnapshotState& s, const NodeState& node, const FgdModel& m, FitMemo& fits,
                 NodeMeasure& out);
// The snapshot's measure of `node` for its fragmentation workload (a no-op
// without one): called after every change to the node's devices, CPU or
// memory.
void RemeasureNode(SnapshotState& s, const NodeState& node);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_STATE_FGD_MEASURE_HPP_
