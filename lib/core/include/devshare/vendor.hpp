// devshare/vendor.hpp — vendors described by data, and HAMi's device-config
// YAML that configures them.
//
// A VendorSpec says everything the scheduler needs to know about one kind of
// device: its common word (the key in requests and pod devices), the
// Kubernetes resource names a container asks with, the annotations the node
// registers with and the pod is assigned through, and the request defaults.
// NVIDIA is described completely; Hygon DCU, Cambricon MLU, Iluvatar, Ascend
// and Metax come from the same YAML sections HAMi reads (spec §10.2).
//
// Volcano's vGPU (section `volcano`, devshare's own): the NVIDIA devices as
// Volcano's device plugin registers them (`volcano.sh/node-vgpu-register`)
// and its scheduler assigns them (`volcano.sh/vgpu-ids-new`,
// `volcano.sh/vgpu-node`), asked for with `volcano.sh/vgpu-number`,
// `volcano.sh/vgpu-memory` and `volcano.sh/vgpu-cores`. It stands alone: a
// scheduler serves HAMi's annotations or Volcano's, not both.
//
// Example (HAMi's device-config.yaml):
//   nvidia:
//     resourceCountName: nvidia.com/gpu
//     resourceMemoryName: nvidia.com/gpumem
//     defaultMemory: 0
//     deviceSplitCount: 10
//   hygon:
//     resourceCountName: hygon.com/dcunum
//
// Thread-safety: value types and pure functions.
#ifndef DEVSHARE_VENDOR_HPP_
#define DEVSHARE_VENDOR_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/export.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/pod_codec.hpp"
#include "devshare/status.hpp"

namespace devshare {

// How a vendor's devices become known to the scheduler.
enum class Registration {
  kAnnotation,  // the device plugin writes `register_annotation`
  kCapacity,    // derived from the node's capacity of `count_resource`
};

// A memory template a device is carved into (Ascend vNPU).
struct MemoryTemplate {
  std::string name;         // for example "vir05_1c_16g"
  std::int64_t memory = 0;  // MiB
  std::int32_t ai_core = 0;
  std::int32_t ai_cpu = 0;
  friend bool operator==(const MemoryTemplate&, const MemoryTemplate&) = default;
};

struct VendorSpec {
  // The YAML section it came from: "nvidia", "hygon", "cambricon",
  // "iluvatars", "vnpus", "metax" or "volcano".
  std::string section;
  // The vendor key in requests, pod devices and Device::vendor, for example
  // "NVIDIA", "DCU", "MLU", "MR-V100", "Ascend910B3", "Metax-GPU".
  std::string common_word;

  // Kubernetes extended resources a container asks with; empty when the
  // vendor has no such dimension.
  std::string count_resource;
  std::string memory_resource;
  std::string memory_percentage_resource;
  std::string core_resource;
  std::string priority_resource;
  // Requested memory is multiplied by this (MiB per requested unit).
  // Default: 1.
  std::int32_t memory_factor = 1;

  // Request defaults (spec §3.3). Default: 0, 0, 1.
  std::int32_t default_memory = 0;
  std::int32_t default_cores = 0;
  std::int32_t default_gpu_num = 1;

  Registration registration = Registration::kAnnotation;
  std::string register_annotation;  // empty for kCapacity
  RegisterFormat register_format = RegisterFormat::kJson;
  std::string handshake_annotation;    // empty when the vendor has none
  std::string to_allocate_annotation;  // pod devices the plugin consumes
  std::string allocated_annotation;    // pod devices the scheduler keeps
  PodDevicesFormat pod_devices_format = PodDevicesFormat::kHami;

  // Chip data (Iluvatar, Ascend): the chip name and, for Ascend, the
  // memory templates requests are rounded up to and the device totals.
  std::string chip_name;
  std::vector<MemoryTemplate> templates;
  std::int64_t memory_allocatable = 0;
  std::int64_t memory_capacity = 0;
  std::int32_t ai_core = 0;
  std::int32_t ai_cpu = 0;

  friend bool operator==(const VendorSpec&, const VendorSpec&) = default;
};

// One entry of `migProfileAllowlist`.
struct MigProfileAllow {
  std::vector<std::string> models;
  std::vector<std::string> profiles;  // each "<n>g.<...>"
  friend bool operator==(const MigProfileAllow&, const MigProfileAllow&) = default;
};

// NVIDIA options of the `nvidia:` section beyond the VendorSpec.
struct NvidiaOptions {
  bool overwrite_env = false;               // Default: false
  bool disable_core_limit = false;          // Default: false
  std::string gpu_core_policy = "default";  // "default" | "force" | "disable"
  std::string runtime_class_name;           // Default: none
  std::vector<MigProfileAllow> mig_profile_allowlist;
  // Node defaults shared with the device plugin (absent when not set).
  std::optional<std::uint32_t> device_split_count;
  std::optional<double> device_memory_scaling;
  std::optional<double> device_core_scaling;
  std::optional<std::int64_t> pre_configured_device_memory;
  std::optional<std::string> lib_cuda_log_level;  // "0" | "1" | "3" | "4"
  std::optional<bool> enable_numa_topology;
  friend bool operator==(const NvidiaOptions&, const NvidiaOptions&) = default;
};

struct DeviceConfig {
  // In the order the YAML lists them; NVIDIA first in the default config.
  std::vector<VendorSpec> vendors;
  NvidiaOptions nvidia;
  // Sections HAMi knows that devshare does not model (for example
  // `mthreads`, `enflame`): accepted and listed here, not silently lost.
  std::vector<std::string> ignored_sections;
  // Where a scheduler records its decision on the pod: the node it chose
  // (pods carrying it hold devices) and when, in Unix seconds. HAMi's keys,
  // or Volcano's (`volcano.sh/vgpu-node`, `volcano.sh/vgpu-time`) with the
  // `volcano` section.
  std::string assigned_node_annotation = "hami.io/vgpu-node";
  std::string assigned_time_annotation = "hami.io/vgpu-time";
  // The pod annotations that allow or deny NVIDIA devices by UUID:
  // HAMi's, or Volcano's (`volcano.sh/vgpu-use-gpuuuid`,
  // `volcano.sh/vgpu-nouse-gpuuuid`) with the `volcano` section.
  std::string use_uuid_annotation = "nvidia.com/use-gpuuuid";
  std::string nouse_uuid_annotation = "nvidia.com/nouse-gpuuuid";

  // The vendor with this common word, or nullptr.
  DEVSHARE_EXPORT const VendorSpec* FindVendor(std::string_view common_word) const;
};

// HAMi's built-in defaults (InitDefaultDevices): NVIDIA only, with
// nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpumem-percentage,
// nvidia.com/gpucores and nvidia.com/priority.
DEVSHARE_EXPORT DeviceConfig DefaultDeviceConfig();

// Volcano's vGPU alone, with Volcano's default resource names (what the
// YAML document `volcano: {}` gives).
DEVSHARE_EXPORT DeviceConfig VolcanoDeviceConfig();

// Parses a device-config YAML document. Keys omitted from a section take
// the defaults above; a `volcano` section selects Volcano's vGPU even when
// empty. Errors (kInvalidConfig, naming the key and its line): invalid
// YAML, an unknown key, a value of the wrong type or out of range, an
// invalid gpuCorePolicy or MIG profile name, two vendors with one common
// word, a `volcano` section beside another vendor's, or a document in which
// every vendor section is empty.
DEVSHARE_EXPORT Result<DeviceConfig> ParseDeviceConfig(std::string_view yaml);

}  // namespace devshare

#endif  // DEVSHARE_VENDOR_HPP_
