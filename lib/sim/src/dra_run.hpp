// Private: the simulator's DRA mode (Scenario::dra): a scenario's nodes
// and pods as ResourceSlices and ResourceClaims, and the placement-only
// run over them.
//
// Thread-safety: pure functions; a run is single-threaded.
#ifndef DEVSHARE_SIM_SRC_DRA_RUN_HPP_
#define DEVSHARE_SIM_SRC_DRA_RUN_HPP_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "devshare/dra.hpp"
#include "devshare/objects.hpp"
#include "devshare/sim/simulator.hpp"

namespace devshare::sim::internal {

inline constexpr std::string_view kDraDriver = "hami-core-gpu.project-hami.io";
inline constexpr std::string_view kDraClass = "hami-gpu";

// The node's GPUs as the driver's one slice (see DraMode).
dra::ResourceSlice GpuSlice(const NodeSpec& spec);
// The DeviceClass every GPU claim names.
dra::DeviceClass GpuClass();
// Pod `index`'s claim (see DraMode), `smallest_gpu_mib` being the memory
// of the scenario's smallest GPU. REQUIRES: spec.gpus > 0.
dra::ResourceClaim GpuClaim(const PodSpec& spec, std::size_t index, std::int32_t smallest_gpu_mib);

// Runs a scenario in DRA mode. Errors: a claim devshare cannot allocate
// (an allocator error), kInternal when a placement over-commits a device.
Result<Report> RunDra(const Scenario& scenario, std::uint64_t seed, const Progress& progress);

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_DRA_RUN_HPP_
