// devshare/workload.hpp — the workload the fgd policy minimises
// fragmentation for (FilterOptions::workload, MeasureFragmentation,
// ClusterSnapshot::SetFragmentationWorkload).
#ifndef DEVSHARE_WORKLOAD_HPP_
#define DEVSHARE_WORKLOAD_HPP_

#include <cstdint>

namespace devshare {

// One class of pod request in the workload the fgd policy expects: `weight`
// is its share, `gpus` whole GPUs, or a fraction `gpu_milli` (1..999) of one;
// `cpu_milli` and `memory_mib` the CPU and memory it asks (0: fits any node).
//
// fgd's fragmentation of a node (Weng et al., ATC '23): for every class, the
// node's free GPU share the class cannot use, weighted by `weight`. A class
// the node's free CPU or memory cannot host (ClusterSnapshot counts them;
// unknown capacity is unlimited) can use none of it; otherwise a fractional
// class cannot use the devices with less free than it asks, and a k-GPU
// class only fully free devices, none when fewer than k are. The node score
// is the decrease in that fragmentation when the pod (its devices, CPU and
// memory) is placed; the GPU order, the smallest increase for each device.
struct WorkloadClass {
  double weight = 1;
  std::int32_t gpus = 0;
  std::int32_t gpu_milli = 0;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  friend bool operator==(const WorkloadClass&, const WorkloadClass&) = default;
};

}  // namespace devshare

#endif  // DEVSHARE_WORKLOAD_HPP_
