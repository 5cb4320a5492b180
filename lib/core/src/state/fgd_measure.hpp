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

#include <algorithm>
#include <cstdint>
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

// FreeShare, AddDevice, FragmentationAfterMove and Fragmentation: below.
// The sums of a node whose devices have the free shares `free`.
void Measure(std::span<const float> free, const FgdModel& m, FragState& s);
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

// The small functions every scored device calls, defined here so that they
// are inlined in Filter.

// The sums every shape reads (Σ free, Σ free of the devices not fully free,
// the fully free devices) with a device of free share `f` added (sign +1) or
// removed (-1).
inline void AddToTotals(double& all, double& partial, std::int32_t& whole, float f, double sign) {
  all += sign * f;
  if (f >= kWholeDevice) {
    whole += sign > 0 ? 1 : -1;
  } else {
    partial += sign * f;
  }
}

// Free share of a device in [0, 1]: the tighter of free cores and free
// memory; 0 when it has no free slot or is unhealthy.
inline float FreeShare(const HotDevice& d) {
  if (!d.healthy || d.count <= d.used || d.devcore <= 0 || d.devmem <= 0) return 0;
  const float cores = 1.0f - static_cast<float>(d.usedcores) / static_cast<float>(d.devcore);
  const float mem = 1.0f - static_cast<float>(d.usedmem) / static_cast<float>(d.devmem);
  return std::clamp(std::min(cores, mem), 0.0f, 1.0f);
}

// A device of free share `f` added to the sums `s` (sign +1) or removed (-1).
inline void AddDevice(FragState& s, float f, const FgdModel& m, double sign) {
  if (f == 0) return;    // a full device adds nothing
  if (f < m.max_need) {  // else below no fractional shape's need
    for (std::size_t g = 0; g < m.shapes.size(); ++g) {
      if (m.shapes[g].gpu_milli > 0 && f < m.shapes[g].need) s.below[g] += sign * f;
    }
  }
  AddToTotals(s.all, s.partial, s.whole, f, sign);
}

// Fragmentation(s, m, w) of `s` with one device's free share moved from
// `from` to `to`: the same operations as AddDevice(-from), AddDevice(+to) on
// a copy and then Fragmentation, so the same result to the bit, without the
// copy of the per-shape sums.
inline double FragmentationAfterMove(const FragState& s, float from, float to, const FgdModel& m,
                                     const FitWeights& w) {
  double all = s.all, partial = s.partial;
  std::int32_t whole = s.whole;
  if (from != 0) AddToTotals(all, partial, whole, from, -1);
  if (to != 0) AddToTotals(all, partial, whole, to, +1);
  double total = w.unfit * all;
  for (std::size_t g = 0; g < m.shapes.size(); ++g) {
    const FgdShape& shape = m.shapes[g];
    double frag = 0;
    if (shape.gpu_milli > 0) {
      frag = s.below[g];
      if (from != 0 && from < shape.need) frag += -1.0 * from;
      if (to != 0 && to < shape.need) frag += 1.0 * to;
    } else {
      frag = whole >= shape.gpus ? partial : all;
    }
    total += w.fit[g] * frag;
  }
  return m.total > 0 ? total / m.total : 0;
}

// The weighted fragmentation of `s` for the classes `w` says fit.
inline double Fragmentation(const FragState& s, const FgdModel& m, const FitWeights& w) {
  double total = w.unfit * s.all;
  for (std::size_t g = 0; g < m.shapes.size(); ++g) {
    const FgdShape& shape = m.shapes[g];
    const double frag =
        shape.gpu_milli > 0 ? s.below[g] : (s.whole >= shape.gpus ? s.partial : s.all);
    total += w.fit[g] * frag;
  }
  return m.total > 0 ? total / m.total : 0;
}

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_STATE_FGD_MEASURE_HPP_
