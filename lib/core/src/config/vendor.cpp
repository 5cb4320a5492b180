#include "devshare/vendor.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>

#include "base/text.hpp"
#include "yaml_fields.hpp"

namespace devshare {

const VendorSpec* DeviceConfig::FindVendor(std::string_view common_word) const {
  for (const VendorSpec& v : vendors) {
    if (v.common_word == common_word) return &v;
  }
  return nullptr;
}

namespace {

using namespace internal::yaml;  // NOLINT: the field readers are this file's vocabulary

VendorSpec NvidiaDefaults() {
  VendorSpec v;
  v.section = "nvidia";
  v.common_word = "NVIDIA";
  v.count_resource = "nvidia.com/gpu";
  v.memory_resource = "nvidia.com/gpumem";
  v.memory_percentage_resource = "nvidia.com/gpumem-percentage";
  v.core_resource = "nvidia.com/gpucores";
  v.priority_resource = "nvidia.com/priority";
  v.register_annotation = "hami.io/node-nvidia-register";
  v.register_format = RegisterFormat::kJson;
  v.handshake_annotation = "hami.io/node-handshake";
  v.to_allocate_annotation = "hami.io/vgpu-devices-to-allocate";
  v.allocated_annotation = "hami.io/vgpu-devices-allocated";
  return v;
}

VendorSpec HygonDefaults() {
  VendorSpec v;
  v.section = "hygon";
  v.common_word = "DCU";
  v.count_resource = "hygon.com/dcunum";
  v.memory_resource = "hygon.com/dcumem";
  v.core_resource = "hygon.com/dcucores";
  v.default_cores = 100;
  v.register_annotation = "hami.io/node-dcu-register";
  v.register_format = RegisterFormat::kLegacy;
  v.handshake_annotation = "hami.io/node-handshake-dcu";
  v.to_allocate_annotation = "hami.io/dcu-devices-to-allocate";
  v.allocated_annotation = "hami.io/dcu-devices-allocated";
  return v;
}

VendorSpec CambriconDefaults() {
  VendorSpec v;
  v.section = "cambricon";
  v.common_word = "MLU";
  v.count_resource = "cambricon.com/vmlu";
  v.memory_resource = "cambricon.com/mlu.smlu.vmemory";
  v.core_resource = "cambricon.com/mlu.smlu.vcore";
  v.memory_factor = 256;  // one requested unit is 256 MiB
  v.default_cores = 100;
  v.registration = Registration::kCapacity;
  v.to_allocate_annotation = "hami.io/cambricon-mlu-devices-to-allocate";
  v.allocated_annotation = "hami.io/cambricon-mlu-devices-allocated";
  return v;
}

VendorSpec MetaxDefaults() {
  VendorSpec v;
  v.section = "metax";
  v.common_word = "Metax-GPU";
  v.count_resource = "metax-tech.com/gpu";
  v.registration = Registration::kCapacity;
  v.to_allocate_annotation = "hami.io/metax-gpu-devices-to-allocate";
  v.allocated_annotation = "hami.io/metax-gpu-devices-allocated";
  return v;
}

// Volcano's own defaults (its GetDefaultDevicesConfig): no memory
// percentage resource, and no request defaults (Volcano's scheduler applies
// none: a container without memory asks a whole device's).
VendorSpec VolcanoDefaults() {
  VendorSpec v;
  v.section = "volcano";
  v.common_word = "NVIDIA";
  v.count_resource = "volcano.sh/vgpu-number";
  v.memory_resource = "volcano.sh/vgpu-memory";
  v.core_resource = "volcano.sh/vgpu-cores";
  v.register_annotation = "volcano.sh/node-vgpu-register";
  v.register_format = RegisterFormat::kVolcano;
  v.handshake_annotation = "volcano.sh/node-vgpu-handshake";
  v.to_allocate_annotation = "volcano.sh/devices-to-allocate";
  v.allocated_annotation = "volcano.sh/vgpu-ids-new";
  v.pod_devices_format = PodDevicesFormat::kVolcano;
  return v;
}

// Iluvatar and Ascend keys derive from the configured common word.
void SetIluvatarKeys(VendorSpec& v) {
  v.register_annotation = fmt::format("hami.io/node-{}-register", v.common_word);
  v.register_format = RegisterFormat::kLegacy;
  v.handshake_annotation = fmt::format("hami.io/node-handshake-{}", v.common_word);
  v.to_allocate_annotation = fmt::format("hami.io/{}-devices-to-allocate", v.common_word);
  v.allocated_annotation = fmt::format("hami.io/{}-devices-allocated", v.common_word);
}

void SetAscendKeys(VendorSpec& v) {
  v.register_annotation = fmt::format("hami.io/node-register-{}", v.common_word);
  v.register_format = RegisterFormat::kJson;
  v.handshake_annotation = fmt::format("hami.io/node-handshake-{}", v.common_word);
  v.to_allocate_annotation = fmt::format("hami.io/{}-devices-to-allocate", v.common_word);
  v.allocated_annotation = fmt::format("hami.io/{}-devices-allocated", v.common_word);
}

// A key HAMi reads that has no effect on scheduling: shape-checked only.
FieldReader Ignored() {
  return [](const YAML::Node&, const std::string&) { return Status(); };
}

Status ReadMigAllowlist(const YAML::Node& node, const std::string& path,
                        std::vector<MigProfileAllow>& out) {
  if (node.IsNull()) return Status();
  if (!node.IsSequence()) return FieldError(path, node, "expected a list");
  out.clear();
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string item_path = fmt::format("{}[{}]", path, i);
    MigProfileAllow allow;
    Status s = ReadMap(
        node[i], item_path,
        {{"models", [&](const YAML::Node& n,
                        const std::string& p) { return ReadStringList(n, p, allow.models); }},
         {"profiles", [&](const YAML::Node& n, const std::string& p) {
            return ReadStringList(n, p, allow.profiles);
          }}});
    if (!s.ok()) return s;
    for (std::size_t j = 0; j < allow.profiles.size(); ++j) {
      const std::string& profile = allow.profiles[j];
      const std::size_t g = profile.find("g.");
      const bool digits =
          g > 0 && g != std::string::npos && profile.find_first_not_of("0123456789") == g;
      if (!digits || g + 2 >= profile.size()) {
        return FieldError(fmt::format("{}.profiles[{}]", item_path, j), node[i],
                          fmt::format("MIG profile {} does not look like <n>g.<memory>",
                                      internal::Quote(profile)));
      }
    }
    out.push_back(std::move(allow));
  }
  return Status();
}

Status ReadNvidia(const YAML::Node& node, VendorSpec& v, NvidiaOptions& o) {
  return ReadMap(node, "nvidia",
                 {{"resourceCountName", String(v.count_resource)},
                  {"resourceMemoryName", String(v.memory_resource)},
                  {"resourceCoreName", String(v.core_resource)},
                  {"resourceMemoryPercentageName", String(v.memory_percentage_resource)},
                  {"resourcePriorityName", String(v.priority_resource)},
                  {"overwriteEnv", Bool(o.overwrite_env)},
                  {"defaultMemory", Int(v.default_memory)},
                  {"defaultCores", Int(v.default_cores)},
                  {"defaultGPUNum", Int(v.default_gpu_num)},
                  {"memoryFactor", Int(v.memory_factor)},
                  {"disableCoreLimit", Bool(o.disable_core_limit)},
                  {"gpuCorePolicy",
                   [&o](const YAML::Node& n, const std::string& p) {
                     Status s = ReadString(n, p, o.gpu_core_policy);
                     if (s.ok() && o.gpu_core_policy != "default" && o.gpu_core_policy != "force" &&
                         o.gpu_core_policy != "disable") {
                       return FieldError(p, n,
                                         fmt::format("{} is not one of default, force, disable",
                                                     internal::Quote(o.gpu_core_policy)));
                     }
                     return s;
                   }},
                  {"runtimeClassName", String(o.runtime_class_name)},
                  {"migProfileAllowlist",
                   [&o](const YAML::Node& n, const std::string& p) {
                     return ReadMigAllowlist(n, p, o.mig_profile_allowlist);
                   }},
                  {"deviceSplitCount",
                   [&o](const YAML::Node& n, const std::string& p) {
                     return ReadOptionalInt(n, p, o.device_split_count);
                   }},
                  {"deviceMemoryScaling",
                   [&o](const YAML::Node& n, const std::string& p) {
                     return ReadOptionalDouble(n, p, o.device_memory_scaling);
                   }},
                  {"deviceCoreScaling",
                   [&o](const YAML::Node& n, const std::string& p) {
                     return ReadOptionalDouble(n, p, o.device_core_scaling);
                   }},
                  {"preConfiguredDeviceMemory",
                   [&o](const YAML::Node& n, const std::string& p) {
                     return ReadOptionalInt(n, p, o.pre_configured_device_memory);
                   }},
                  {"libCudaLogLevel",
                   [&o](const YAML::Node& n, const std::string& p) {
                     if (n.IsNull()) return Status();
                     std::string level;
                     Status s = ReadString(n, p, level);
                     if (!s.ok()) return s;
                     if (level != "0" && level != "1" && level != "3" && level != "4") {
                       return FieldError(p, n, "expected one of 0, 1, 3, 4");
                     }
                     o.lib_cuda_log_level = level;
                     return Status();
                   }},
                  {"enableNumaTopology", [&o](const YAML::Node& n, const std::string& p) {
                     return ReadOptionalBool(n, p, o.enable_numa_topology);
                   }}});
}

Status ReadIluvatars(const YAML::Node& node, std::vector<VendorSpec>& out) {
  if (node.IsNull()) return Status();
  if (!node.IsSequence()) return FieldError("iluvatars", node, "expected a list");
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string path = fmt::format("iluvatars[{}]", i);
    VendorSpec v;
    v.section = "iluvatars";
    v.memory_factor = 256;  // one requested unit is 256 MiB
    Status s = ReadMap(node[i], path,
                       {{"chipName", String(v.chip_name)},
                        {"commonWord", String(v.common_word)},
                        {"resourceCountName", String(v.count_resource)},
                        {"resourceMemoryName", String(v.memory_resource)},
                        {"resourceCoreName", String(v.core_resource)}});
    if (!s.ok()) return s;
    if (v.common_word.empty()) return FieldError(path + ".commonWord", node[i], "required");
    SetIluvatarKeys(v);
    out.push_back(std::move(v));
  }
  return Status();
}

Status ReadTemplates(const YAML::Node& node, const std::string& path,
                     std::vector<MemoryTemplate>& out) {
  if (node.IsNull()) return Status();
  if (!node.IsSequence()) return FieldError(path, node, "expected a list");
  for (std::size_t i = 0; i < node.size(); ++i) {
    MemoryTemplate t;
    Status s = ReadMap(node[i], fmt::format("{}[{}]", path, i),
                       {{"name", String(t.name)},
                        {"memory", Int(t.memory)},
                        {"aiCore", Int(t.ai_core)},
                        {"aiCPU", Int(t.ai_cpu)}});
    if (!s.ok()) return s;
    out.push_back(std::move(t));
  }
  return Status();
}

Status ReadVnpuList(const YAML::Node& node, const std::string& path, std::vector<VendorSpec>& out) {
  if (node.IsNull()) return Status();
  if (!node.IsSequence()) return FieldError(path, node, "expected a list");
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string item = fmt::format("{}[{}]", path, i);
    VendorSpec v;
    v.section = "vnpus";
    Status s = ReadMap(
        node[i], item,
        {{"chipName", String(v.chip_name)},
         {"commonWord", String(v.common_word)},
         {"resourceName", String(v.count_resource)},
         {"resourceMemoryName", String(v.memory_resource)},
         {"resourceCoreName", String(v.core_resource)},
         {"memoryAllocatable", Int(v.memory_allocatable)},
         {"memoryCapacity", Int(v.memory_capacity)},
         {"memoryFactor", Int(v.memory_factor)},
         {"aiCore", Int(v.ai_core)},
         {"aiCPU", Int(v.ai_cpu)},
         {"templates", [&v](const YAML::Node& n,
                            const std::string& p) { return ReadTemplates(n, p, v.templates); }},
         {"superPod", Ignored()},
         {"runtimeClassName", Ignored()},
         {"overwriteEnv", Ignored()}});
    if (!s.ok()) return s;
    if (v.common_word.empty()) return FieldError(item + ".commonWord", node[i], "required");
    SetAscendKeys(v);
    out.push_back(std::move(v));
  }
  return Status();
}

// `vnpus` is a list of chips (older charts) or a mapping with `configs`.
Status ReadVnpus(const YAML::Node& node, std::vector<VendorSpec>& out) {
  if (node.IsSequence()) return ReadVnpuList(node, "vnpus", out);
  return ReadMap(node, "vnpus",
                 {{"hamiVnpuMode", Ignored()},
                  {"hamiVnpuCore", Ignored()},
                  {"enpuPolicy", Ignored()},
                  {"overwriteEnv", Ignored()},
                  {"runtimeClassName", Ignored()},
                  {"configs", [&out](const YAML::Node& n, const std::string& p) {
                     return ReadVnpuList(n, p, out);
                   }}});
}

bool IsEmptySection(const YAML::Node& node) {
  return node.IsNull() || ((node.IsMap() || node.IsSequence()) && node.size() == 0);
}

}  // namespace

DeviceConfig DefaultDeviceConfig() {
  DeviceConfig config;
  config.vendors.push_back(NvidiaDefaults());
  return config;
}

namespace {

void SetVolcanoPodKeys(DeviceConfig& config) {
  config.assigned_node_annotation = "volcano.sh/vgpu-node";
  config.assigned_time_annotation = "volcano.sh/vgpu-time";
  config.use_uuid_annotation = "volcano.sh/vgpu-use-gpuuuid";
  config.nouse_uuid_annotation = "volcano.sh/vgpu-nouse-gpuuuid";
}

}  // namespace

DeviceConfig VolcanoDeviceConfig() {
  DeviceConfig config;
  config.vendors.push_back(VolcanoDefaults());
  SetVolcanoPodKeys(config);
  return config;
}

namespace {

// A reading error, named as the device config's.
Status InDeviceConfig(const Status& s) {
  return Status::InvalidConfig(fmt::format("device config: {}", s.message()),
                               std::string(s.field()));
}

}  // namespace

Result<DeviceConfig> ParseDeviceConfig(std::string_view yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Status::InvalidConfig(fmt::format("device config: invalid YAML: {}", e.what()));
  }
  if (!root.IsMap()) {
    return Status::InvalidConfig("device config: expected a mapping of vendor sections");
  }
  DeviceConfig config;
  bool any_vendor = false;
  bool volcano = false;
  YAML::Node volcano_key;  // where a `volcano` section is, for an error
  try {
    for (const auto& entry : root) {
      const std::string section = entry.first.IsScalar() ? entry.first.Scalar() : "";
      const YAML::Node& body = entry.second;
      const bool empty = IsEmptySection(body);
      Status s;
      if (section == "nvidia") {
        VendorSpec v = NvidiaDefaults();
        s = ReadNvidia(body, v, config.nvidia);
        if (s.ok() && !empty) config.vendors.push_back(std::move(v));
      } else if (section == "hygon") {
        VendorSpec v = HygonDefaults();
        s = ReadMap(body, section,
                    {{"resourceCountName", String(v.count_resource)},
                     {"resourceMemoryName", String(v.memory_resource)},
                     {"resourceCoreName", String(v.core_resource)},
                     {"memoryFactor", Int(v.memory_factor)}});
        if (s.ok() && !empty) config.vendors.push_back(std::move(v));
      } else if (section == "cambricon") {
        VendorSpec v = CambriconDefaults();
        s = ReadMap(body, section,
                    {{"resourceCountName", String(v.count_resource)},
                     {"resourceMemoryName", String(v.memory_resource)},
                     {"resourceCoreName", String(v.core_resource)}});
        if (s.ok() && !empty) config.vendors.push_back(std::move(v));
      } else if (section == "metax") {
        VendorSpec v = MetaxDefaults();
        s = ReadMap(body, section,
                    {{"resourceCountName", String(v.count_resource)},
                     {"resourceVCountName", Ignored()},
                     {"resourceVMemoryName", Ignored()},
                     {"resourceVCoreName", Ignored()},
                     {"sgpuTopologyAware", Ignored()}});
        if (s.ok() && !empty) config.vendors.push_back(std::move(v));
      } else if (section == "volcano") {
        // The keys of Volcano's device config (its `nvidia` section); those
        // for the node side, MIG and request defaults do not change what
        // Volcano's scheduler decides for vGPU requests.
        VendorSpec v = VolcanoDefaults();
        s = ReadMap(body, section,
                    {{"resourceCountName", String(v.count_resource)},
                     {"resourceMemoryName", String(v.memory_resource)},
                     {"resourceCoreName", String(v.core_resource)},
                     {"resourceMemoryPercentageName", String(v.memory_percentage_resource)},
                     {"resourcePriorityName", String(v.priority_resource)},
                     {"overwriteEnv", Ignored()},
                     {"defaultMemory", Ignored()},
                     {"defaultCores", Ignored()},
                     {"defaultGPUNum", Ignored()},
                     {"deviceSplitCount", Ignored()},
                     {"deviceMemoryScaling", Ignored()},
                     {"deviceCoreScaling", Ignored()},
                     {"disableCoreLimit", Ignored()},
                     {"knownMigGeometries", Ignored()},
                     {"gpuMemoryFactor", Ignored()}});
        if (s.ok()) {
          volcano = true;
          volcano_key = entry.first;
          config.vendors.push_back(std::move(v));
          SetVolcanoPodKeys(config);
        }
        any_vendor = true;
      } else if (section == "iluvatars") {
        s = ReadIluvatars(body, config.vendors);
      } else if (section == "vnpus") {
        s = ReadVnpus(body, config.vendors);
      } else if (section == "mthreads" || section == "enflame" || section == "kunlun" ||
                 section == "awsneuron" || section == "amd" || section == "vastai" ||
                 section == "biren") {
        config.ignored_sections.push_back(section);
        continue;
      } else {
        return InDeviceConfig(
            FieldError(section.empty() ? "<key>" : section, entry.first, "unknown vendor section"));
      }
      if (!s.ok()) return InDeviceConfig(s);
      any_vendor = any_vendor || !empty;
    }
    if (volcano && config.vendors.size() > 1) {
      return InDeviceConfig(FieldError("volcano", volcano_key,
                                       "Volcano's vGPU cannot be configured beside other vendors"));
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidConfig(fmt::format("device config: {}", e.what()));
  }
  if (!any_vendor) {
    return Status::InvalidConfig("device config: every vendor section is empty");
  }
  for (std::size_t i = 0; i < config.vendors.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (config.vendors[i].common_word == config.vendors[j].common_word) {
        return Status::InvalidConfig(
            fmt::format("device config: two vendors share the common word {}",
                        internal::Quote(config.vendors[i].common_word)),
            config.vendors[i].section);
      }
    }
    if (config.vendors[i].memory_factor < 1) config.vendors[i].memory_factor = 1;
  }
  return config;
}

}  // namespace devshare
