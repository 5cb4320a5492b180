// devshare/device.hpp — the device data model shared by every layer.
//
// These are plain value types mirroring HAMi's scheduler data
// (spec/hami-behaviour.md §2): what a node registers (Device, MigProfile),
// what a container asks for (ContainerRequest), what a container was given
// (ContainerDevice, PodDevices), MIG reservations (MigAllocation) and GPU pair
// scores (DevicePairScore). Units: memory in MiB, cores in percent of one
// device (100 = a whole device), a "slot" is one time-sliced share.
//
// Thread-safety: value types; distinct objects may be used from any thread.
#ifndef DEVSHARE_DEVICE_HPP_
#define DEVSHARE_DEVICE_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace devshare {

// A MIG slice position on a GPU, in memory-slice units.
struct MigPlacement {
  std::uint32_t start = 0;
  std::uint32_t size = 0;
  friend bool operator==(const MigPlacement&, const MigPlacement&) = default;
};

// A MIG profile a GPU supports, with the placements still schedulable.
struct MigProfile {
  std::string name;            // for example "1g.5gb"
  std::int32_t memory_mb = 0;  // memory of one instance
  std::int32_t core = 0;       // cores (percent) of one instance
  std::uint32_t slice_count = 0;
  std::vector<MigPlacement> placements;
  friend bool operator==(const MigProfile&, const MigProfile&) = default;
};

// One physical device as a node registers it (HAMi's DeviceInfo).
struct Device {
  std::string id;            // UUID, for example "GPU-0b1c..."
  std::uint32_t index = 0;   // NVML index
  std::int32_t count = 0;    // slots: how many containers may share it
  std::int32_t devmem = 0;   // total memory, MiB
  std::int32_t devcore = 0;  // total cores, percent (100 = whole device)
  std::string type;          // model, for example "NVIDIA-Tesla V100-PCIE-32GB"
  std::int32_t numa = 0;     // NUMA node
  std::string mode;          // "hami-core" | "mig" | "mps" (may be empty)
  std::vector<MigProfile> mig_profiles;
  bool health = false;
  std::string vendor;  // devicevendor: the vendor's common word
  friend bool operator==(const Device&, const Device&) = default;
};

// Pair scores of one GPU towards the other GPUs of its node
// (`hami.io/node-nvidia-score`). Higher is better connected.
struct DevicePairScore {
  std::string uuid;
  // (peer uuid, score), sorted by peer uuid, unique.
  std::vector<std::pair<std::string, std::int64_t>> scores;
  friend bool operator==(const DevicePairScore&, const DevicePairScore&) = default;
};

// What one container asks of one vendor (HAMi's ContainerDeviceRequest).
struct ContainerRequest {
  static constexpr std::int32_t kPercentageUnset = 101;
  std::int32_t nums = 0;                           // devices wanted; 0 means no request
  std::string vendor;                              // common word, for example "NVIDIA"
  std::int32_t memreq = 0;                         // MiB, already multiplied by memoryFactor
  std::int32_t mem_percentage = kPercentageUnset;  // 1..100, or unset
  std::int32_t coresreq = 0;                       // percent of one device
  friend bool operator==(const ContainerRequest&, const ContainerRequest&) = default;
};

// One device given to one container (HAMi's ContainerDevice). Only uuid,
// type, usedmem and usedcores travel in the pod annotations.
struct ContainerDevice {
  std::string uuid;
  std::string type;            // the vendor's common word, e.g. "NVIDIA"
  std::int32_t usedmem = 0;    // MiB
  std::int32_t usedcores = 0;  // percent
  friend bool operator==(const ContainerDevice&, const ContainerDevice&) = default;
};

using ContainerDevices = std::vector<ContainerDevice>;
// One entry per container, init containers first (HAMi's PodSingleDevice).
using PodSingleDevice = std::vector<ContainerDevices>;

// A pod's devices per vendor, sorted by vendor common word (HAMi's
// PodDevices map, made deterministic).
using PodDevices = std::vector<std::pair<std::string, PodSingleDevice>>;

// What is in use on one device: the dynamic counterpart of Device.
struct DeviceUsage {
  std::int32_t used = 0;       // slots taken
  std::int32_t usedmem = 0;    // MiB
  std::int32_t usedcores = 0;  // percent
  friend bool operator==(const DeviceUsage&, const DeviceUsage&) = default;
};

// A node and the devices it registered, for every vendor (Device::vendor
// says whose each one is), in registration order.
struct NodeDevices {
  std::string name;
  std::vector<Device> devices;
  friend bool operator==(const NodeDevices&, const NodeDevices&) = default;
};

// A MIG reservation written by the scheduler (`hami.io/vgpu-mig-allocations`)
// and completed with its runtime identity by the device plugin.
struct MigAllocation {
  std::int64_t container_index = 0;
  std::int64_t device_index = 0;
  std::string gpu_uuid;
  std::string profile;
  MigPlacement placement;
  // Runtime identity: all three present or all absent.
  std::string mig_uuid;
  std::optional<std::uint32_t> gpu_instance_id;
  std::optional<std::uint32_t> compute_instance_id;
  friend bool operator==(const MigAllocation&, const MigAllocation&) = default;
};

}  // namespace devshare

#endif  // DEVSHARE_DEVICE_HPP_
