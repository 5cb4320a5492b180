// Private: a scenario's nodes and pods as the Kubernetes objects and devices
// the models hold, the annotation keys the plugins write, and the engine
// options every replica starts from.
//
// Thread-safety: pure functions.
#ifndef DEVSHARE_SIM_SRC_SCENARIO_OBJECTS_HPP_
#define DEVSHARE_SIM_SRC_SCENARIO_OBJECTS_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/objects.hpp"
#include "devshare/sim/simulator.hpp"

namespace devshare::sim::internal {

inline constexpr std::int32_t kSlotsPerGpu = 100;  // slots never bind before memory and cores

// The devices a node's plugin advertises: `spec.gpus` healthy devices
// `<node>-gpu<i>` of the node's model and memory.
std::vector<Device> MakeDevices(const NodeSpec& spec);

// The node's allocatable `nvidia.com/gpu`: the slots of all its devices.
std::string GpuAllocatable(const NodeSpec& spec);

// The Node object without devices: its name, a UID, and its CPU and memory
// as allocatable `cpu` and `memory` when the spec limits them.
Node PlainNode(const NodeSpec& spec);
// The Node object as the run starts: its plugin's `encoded` devices under
// `register_key`, and allocatable GPU slots, CPU and memory (the last two
// only when the spec limits them). The API server gives it its
// resourceVersion.
Node MakeNode(const NodeSpec& spec, const std::string& register_key, const std::string& encoded);

// The scenario's pod `index` as it is created: pending, in its namespace, one container
// asking HAMi's resources (a share of one GPU as gpucores and
// gpumem-percentage, or whole GPUs), the GPU models it allows as
// `nvidia.com/use-gputype`, its CPU and memory, its labels, priority and
// preemption policy.
Pod MakePod(const PodSpec& spec, std::size_t index);

// status.startTime of a pod started at `now_ms` of the run: RFC 3339, the
// run beginning at 2026-01-01T00:00:00Z (whole seconds, as the API server
// keeps them).
std::string StartTime(std::int64_t now_ms);

// GPUs the pod asks: its share of one device, or its whole devices.
double GpusOf(const PodSpec& spec);

// The annotation the plugins register their devices under, and the one the
// handshake writes (Volcano's under its protocol): the first vendor's.
std::string RegisterKey(const engine::EngineOptions& options);
std::string HandshakeKey(const engine::EngineOptions& options);

// The scenario's engine options as a replica runs them: told its API
// client's QPS (as `devshare serve` tells it --qps), and with the scenario's
// own request mix as the workload fgd expects when none is given: one class
// per distinct (gpus, gpu_milli, CPU, memory) of the scenario's GPU pods,
// weighted by its count.
engine::EngineOptions ReplicaEngineOptions(const Scenario& scenario);

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_SCENARIO_OBJECTS_HPP_
