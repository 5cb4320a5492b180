#include "scenario_objects.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <utility>

#include "devshare/annotations.hpp"

namespace devshare::sim::internal {

std::vector<Device> MakeDevices(const NodeSpec& spec) {
  std::vector<Device> devices;
  for (std::int32_t g = 0; g < spec.gpus; ++g) {
    Device d;
    d.id = fmt::format("{}-gpu{}", spec.name, g);
    d.index = static_cast<std::uint32_t>(g);
    d.count = kSlotsPerGpu;
    d.devmem = spec.gpu_memory_mib;
    d.devcore = 100;
    d.type = spec.model;
    d.mode = "hami-core";
    d.health = true;
    devices.push_back(std::move(d));
  }
  return devices;
}

std::string GpuAllocatable(const NodeSpec& spec) {
  return std::to_string(spec.gpus * kSlotsPerGpu);
}

Node PlainNode(const NodeSpec& spec) {
  Node node;
  node.name = spec.name;
  node.uid = "uid-" + spec.name;
  if (spec.cpu_milli > 0) node.allocatable.Set("cpu", fmt::format("{}m", spec.cpu_milli));
  if (spec.memory_mib > 0) node.allocatable.Set("memory", fmt::format("{}Mi", spec.memory_mib));
  return node;
}

Node MakeNode(const NodeSpec& spec, const std::string& register_key, const std::string& encoded) {
  Node node = PlainNode(spec);
  node.annotations.Set(register_key, encoded);
  node.allocatable.Set("nvidia.com/gpu", GpuAllocatable(spec));
  return node;
}

Pod MakePod(const PodSpec& spec, std::size_t index) {
  Pod pod;
  pod.name = spec.name;
  pod.pod_namespace = spec.pod_namespace;
  pod.uid = fmt::format("uid-{}", index);
  pod.phase = "Pending";
  Container c;
  c.name = "main";
  if (spec.gpus > 0) {
    const bool fraction = spec.gpus == 1 && spec.gpu_milli > 0 && spec.gpu_milli < 1000;
    const std::int32_t share = fraction ? std::max(1, spec.gpu_milli / 10) : 100;
    c.limits.Set("nvidia.com/gpu", std::to_string(spec.gpus));
    c.limits.Set("nvidia.com/gpucores", std::to_string(share));
    c.limits.Set("nvidia.com/gpumem-percentage", std::to_string(share));
  }
  pod.containers.push_back(std::move(c));
  if (!spec.gpu_spec.empty()) {
    std::string types = spec.gpu_spec;
    std::replace(types.begin(), types.end(), '|', ',');
    pod.annotations.Set(keys::kUseGpuType, types);
  }
  pod.cpu_milli = spec.cpu_milli;
  pod.memory_bytes = spec.memory_mib * 1024 * 1024;
  pod.labels = spec.labels;
  pod.priority = spec.priority;
  pod.preemption_policy = spec.preemption_policy;
  return pod;
}

std::string StartTime(std::int64_t now_ms) {
  using std::chrono::seconds;
  constexpr std::chrono::sys_days kRunStart{std::chrono::year{2026} / 1 / 1};
  const std::chrono::sys_seconds at = kRunStart + seconds(now_ms / 1000);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", at);
}

double GpusOf(const PodSpec& spec) {
  return spec.gpus == 1 && spec.gpu_milli > 0 ? spec.gpu_milli / 1000.0 : spec.gpus;
}

std::string RegisterKey(const engine::EngineOptions& options) {
  return options.config.vendors.empty() ? std::string("hami.io/node-nvidia-register")
                                        : options.config.vendors.front().register_annotation;
}

std::string HandshakeKey(const engine::EngineOptions& options) {
  if (options.registration == engine::RegistrationProtocol::kVolcano)
    return std::string(keys::kVolcanoHandshake);
  return options.config.vendors.empty() ? std::string("hami.io/node-handshake")
                                        : options.config.vendors.front().handshake_annotation;
}

engine::EngineOptions ReplicaEngineOptions(const Scenario& scenario) {
  engine::EngineOptions options = scenario.engine;
  options.api_qps = scenario.api.qps;
  if (!options.filter.workload.empty()) return options;
  using Shape = std::tuple<std::int32_t, std::int32_t, std::int64_t, std::int64_t>;
  std::map<Shape, double> mix;  // (gpus, milli, cpu, memory) -> count
  for (const PodSpec& p : scenario.pods) {
    if (p.gpus == 0) continue;
    const bool fraction = p.gpus == 1 && p.gpu_milli > 0 && p.gpu_milli < 1000;
    mix[{fraction ? 0 : p.gpus, fraction ? p.gpu_milli : 0, p.cpu_milli, p.memory_mib}] += 1;
  }
  for (const auto& [shape, count] : mix) {
    const auto& [gpus, milli, cpu, memory] = shape;
    options.filter.workload.push_back(WorkloadClass{count, gpus, milli, cpu, memory});
  }
  return options;
}

}  // namespace devshare::sim::internal
