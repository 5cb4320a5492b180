// devshare/testing.hpp — fixtures for the tests of schedulers, device plugins
// and tools that read HAMi's or Volcano's annotations: Nodes whose register
// annotations are valid in each format, Pods with device requests and
// allocations, and a ready ClusterSnapshot, each in a line or two.
//
//   using namespace devshare::testing;
//   Node node = NodeBuilder("gpu-1").Gpus(2, 40960);           // 2 x 40 GiB, 10 slots each
//   Pod held = PodBuilder("a").Gpus(1, 8000).Allocated("gpu-1", {{Use("gpu-1", 0, 8000, 30)}});
//   Result<ClusterSnapshot> snapshot = SnapshotOf({node}, {held});
//   Pod next = PodBuilder("b").Gpus(1, 8000);                 // ready for devshare::Filter
//
// The annotations are what the vendor's device plugin and scheduler write
// (the DeviceConfig's keys and formats: NVIDIA's JSON by default, HAMi's
// legacy colon format, Volcano's), so a test built on them reads exactly
// what a cluster would hold. Every builder is a value: copy one to vary it.
//
// Thread-safety: value types and pure functions.
#ifndef DEVSHARE_TESTING_HPP_
#define DEVSHARE_TESTING_HPP_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/objects.hpp"
#include "devshare/pod_codec.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"
#include "devshare/vendor.hpp"

namespace devshare::testing {

// The UUID NodeBuilder gives a node's GPU `index`: "GPU-<node>-<index>".
inline std::string GpuUuid(std::string_view node, std::uint32_t index) {
  return "GPU-" + std::string(node) + "-" + std::to_string(index);
}

// One device of an allocation: GPU `index` of `node` (as NodeBuilder names
// it), `memory_mib` and `cores` percent of it, of the vendor `type`.
inline ContainerDevice Use(std::string_view node, std::uint32_t index, std::int32_t memory_mib,
                           std::int32_t cores = 0, std::string type = "NVIDIA") {
  return ContainerDevice{GpuUuid(node, index), std::move(type), memory_mib, cores};
}

// A Node whose devices register through `vendor`'s annotation of `config`
// (NVIDIA of HAMi's default config unless said), in the vendor's format
// unless Format() says another, with the allocatable count the kubelet
// would report (the devices' slots).
class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name, const DeviceConfig& config = DefaultDeviceConfig(),
                       std::string_view vendor = "NVIDIA") {
    node_.name = std::move(name);
    if (const VendorSpec* v = config.FindVendor(vendor)) vendor_ = *v;
    format_ = vendor_.register_format;
  }
  // `count` GPUs "<node>-gpu<i>" (UUID GpuUuid), each of `memory_mib`,
  // `slots` sharing it and `cores` percent.
  NodeBuilder& Gpus(int count, std::int32_t memory_mib = 40960, std::int32_t slots = 10,
                    std::int32_t cores = 100, std::string type = "NVIDIA A100-SXM4-40GB") {
    for (int i = 0; i < count; ++i) {
      Device d;
      d.index = static_cast<std::uint32_t>(devices_.size());
      d.id = GpuUuid(node_.name, d.index);
      d.count = slots;
      d.devmem = memory_mib;
      d.devcore = cores;
      d.type = type;
      d.mode = "hami-core";
      d.health = true;
      d.vendor = vendor_.common_word;
      devices_.push_back(std::move(d));
    }
    return *this;
  }
  // A device as given (its UUID, index, NUMA node, health, MIG profiles).
  NodeBuilder& With(Device device) {
    devices_.push_back(std::move(device));
    return *this;
  }
  // The register annotation's format: kJson, kLegacy or kVolcano.
  NodeBuilder& Format(RegisterFormat format) {
    format_ = format;
    return *this;
  }
  // Allocatable CPU and memory, as quantities ("8", "8000m", "16Gi").
  NodeBuilder& Cpu(std::string quantity) {
    node_.allocatable.Set("cpu", std::move(quantity));
    return *this;
  }
  NodeBuilder& Memory(std::string quantity) {
    node_.allocatable.Set("memory", std::move(quantity));
    return *this;
  }
  NodeBuilder& Annotation(std::string key, std::string value) {
    node_.annotations.Set(std::move(key), std::move(value));
    return *this;
  }
  NodeBuilder& Label(std::string key, std::string value) {
    node_.labels.Set(std::move(key), std::move(value));
    return *this;
  }
  const std::vector<Device>& devices() const { return devices_; }

  // The node; without devices, it registers none (a CPU node), unless an
  // Annotation() set the register annotation itself.
  Node Build() const {
    Node n = node_;
    if (devices_.empty()) return n;
    std::int64_t slots = 0;
    for (const Device& d : devices_) slots += d.count;
    if (!vendor_.register_annotation.empty())
      n.annotations.Set(vendor_.register_annotation, EncodeNodeDevices(devices_, format_));
    if (!vendor_.count_resource.empty()) {
      n.allocatable.Set(vendor_.count_resource, std::to_string(slots));
      n.capacity.Set(vendor_.count_resource, std::to_string(slots));
    }
    return n;
  }
  operator Node() const { return Build(); }  // NOLINT: a builder converts

 private:
  Node node_;
  VendorSpec vendor_;
  RegisterFormat format_ = RegisterFormat::kJson;
  std::vector<Device> devices_;
};

// A Pod (Pending, UID "uid-<name>") whose containers ask `vendor`'s
// devices of `config` by its resource names, and that may hold an
// allocation as the vendor's scheduler records it.
class PodBuilder {
 public:
  explicit PodBuilder(std::string name, std::string pod_namespace = "default",
                      const DeviceConfig& config = DefaultDeviceConfig(),
                      std::string_view vendor = "NVIDIA")
      : assigned_node_(config.assigned_node_annotation) {
    pod_.uid = "uid-" + name;
    pod_.name = std::move(name);
    pod_.pod_namespace = std::move(pod_namespace);
    pod_.phase = "Pending";
    if (const VendorSpec* v = config.FindVendor(vendor)) vendor_ = *v;
  }
  // An app container asking `count` devices, with `memory_mib` of each,
  // `cores` percent of each, or `memory_percent` of each (each when >= 0).
  PodBuilder& Gpus(int count, int memory_mib = -1, int cores = -1, int memory_percent = -1) {
    pod_.containers.push_back(Ask(count, memory_mib, cores, memory_percent));
    return *this;
  }
  // An init container asking as Gpus does.
  PodBuilder& InitGpus(int count, int memory_mib = -1, int cores = -1, int memory_percent = -1) {
    pod_.init_containers.push_back(Ask(count, memory_mib, cores, memory_percent));
    return *this;
  }
  // The CPU (millicores) and memory (MiB) the pod requests.
  PodBuilder& Requests(std::int64_t cpu_milli, std::int64_t memory_mib) {
    pod_.cpu_milli = cpu_milli;
    pod_.memory_bytes = memory_mib * 1024 * 1024;
    return *this;
  }
  // Placed on `node` holding `containers` (one entry per container, init
  // containers first): the annotations the scheduler writes, and bound.
  PodBuilder& Allocated(std::string node, const PodSingleDevice& containers) {
    const std::string devices = EncodePodDevices(containers, vendor_.pod_devices_format);
    pod_.annotations.Set(assigned_node_, node);
    if (!vendor_.allocated_annotation.empty())
      pod_.annotations.Set(vendor_.allocated_annotation, devices);
    if (!vendor_.to_allocate_annotation.empty())
      pod_.annotations.Set(vendor_.to_allocate_annotation, devices);
    pod_.node_name = std::move(node);
    pod_.phase = "Running";
    return *this;
  }
  PodBuilder& Annotation(std::string key, std::string value) {
    pod_.annotations.Set(std::move(key), std::move(value));
    return *this;
  }
  PodBuilder& Label(std::string key, std::string value) {
    pod_.labels.Set(std::move(key), std::move(value));
    return *this;
  }
  PodBuilder& Uid(std::string uid) {
    pod_.uid = std::move(uid);
    return *this;
  }
  PodBuilder& Phase(std::string phase) {
    pod_.phase = std::move(phase);
    return *this;
  }
  // Bound to `node` (spec.nodeName) without devices.
  PodBuilder& BoundTo(std::string node) {
    pod_.node_name = std::move(node);
    return *this;
  }
  Pod Build() const { return pod_; }
  operator Pod() const { return pod_; }  // NOLINT: a builder converts

 private:
  Container Ask(int count, int memory_mib, int cores, int memory_percent) const {
    Container c;
    c.name = "c" + std::to_string(pod_.init_containers.size() + pod_.containers.size());
    auto set = [&](const std::string& resource, int value) {
      if (value >= 0 && !resource.empty()) c.limits.Set(resource, std::to_string(value));
    };
    set(vendor_.count_resource, count > 0 ? count : -1);
    set(vendor_.memory_resource, memory_mib);
    set(vendor_.core_resource, cores);
    set(vendor_.memory_percentage_resource, memory_percent);
    return c;
  }

  Pod pod_;
  VendorSpec vendor_;
  std::string assigned_node_;
};

// A snapshot of `nodes` and `pods` under `config`. Errors: the first node
// or pod whose annotations do not decode (a fixture should be valid).
inline Result<ClusterSnapshot> SnapshotOf(std::span<const Node> nodes, std::span<const Pod> pods,
                                          const DeviceConfig& config = DefaultDeviceConfig()) {
  ClusterSnapshot snapshot(config);
  for (const Node& n : nodes) {
    if (Status s = snapshot.AddNode(n); !s.ok()) return s;
  }
  for (const Pod& p : pods) {
    if (Status s = snapshot.AddPod(p); !s.ok()) return s;
  }
  return snapshot;
}
inline Result<ClusterSnapshot> SnapshotOf(std::initializer_list<Node> nodes,
                                          std::initializer_list<Pod> pods = {},
                                          const DeviceConfig& config = DefaultDeviceConfig()) {
  return SnapshotOf(std::span<const Node>(nodes.begin(), nodes.size()),
                    std::span<const Pod>(pods.begin(), pods.size()), config);
}

}  // namespace devshare::testing

#endif  // DEVSHARE_TESTING_HPP_
