// fragmentation.hpp — fgd's measure (Weng et al., ATC '23) as Filter and
// MeasureFragmentation use it: for each workload class, the free GPU share
// of a node the class cannot use, weighted by the class's share. A class the
// node's free CPU or memory cannot host can use none of it; otherwise a
// fractional class r cannot use a device with less than r free, and a k-GPU
// class only fully free devices, none when fewer than k are. The sums behind
// it live in a FragState so that changing one device's free share costs
// O(shapes), not O(devices x classes). Private to the core.
#ifndef DEVSHARE_SRC_FRAGMENTATION_HPP_
#define DEVSHARE_SRC_FRAGMENTATION_HPP_

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "filter_plan.hpp"

namespace devshare::internal {

// Free CPU (millicores) and memory (bytes) of a node, the pod's own
// placement released first; unknown capacity is unlimited.
struct Room {
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
};
constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();

// The workload as fit tables, for one Filter call: O(classes log classes +
// CPU steps x shapes).
FgdModel MakeFgdModel(std::span<const WorkloadClass> workload);

// The weighted fragmentation of `s` for the classes `w` says fit.
double Fragmentation(const FragState& s, const PodPlan& plan, const FitWeights& w);
// Measures the working devices into scratch.frag unless it matches them.
void EnsureMeasured(const std::vector<WorkDevice>& devices, const PodPlan& plan, Scratch& scratch);
// Keeps scratch.frag in step with picks just applied to the devices.
void TrackPicks(const std::vector<WorkDevice>& devices, const std::vector<Pick>& picked,
                const PodPlan& plan, Scratch& scratch);
// The fgd node score from the decrease in fragmentation a placement brings:
// 100 * sigmoid(decrease), rounded down.
double FgdNodeScore(double decrease);
// A node's free CPU and memory; the same less what the pod asks.
Room NodeRoom(const NodeState& node, const PodPlan& plan);
Room Less(Room room, const PodPlan& plan);
// The weights of the classes that fit `room` (a table row, or summed into
// `storage`).
FitWeights FitFor(const FgdModel& m, Room room, std::vector<double>& storage);
// fgd as a GPU policy: each device's score is the increase in node
// fragmentation if `request`'s share of it were taken (lower is better).
void FgdDeviceScores(std::vector<WorkDevice>& devices, const ContainerRequest& request,
                     const PodPlan& plan, Scratch& scratch);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_FRAGMENTATION_HPP_
