// Vendors as data and HAMi's device-config YAML (spec/hami-behaviour.md §10.2).
#include "devshare/vendor.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace devshare;

namespace {
DeviceConfig MustParse(std::string_view yaml) {
  Result<DeviceConfig> r = ParseDeviceConfig(yaml);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}
Status ParseError(std::string_view yaml) {
  Result<DeviceConfig> r = ParseDeviceConfig(yaml);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidConfig);
  return r.status();
}
}  // namespace

TEST_CASE("default config: HAMi's InitDefaultDevices") {
  DeviceConfig c = DefaultDeviceConfig();
  REQUIRE(c.vendors.size() == 1);
  const VendorSpec& v = c.vendors[0];
  CHECK(v.common_word == "NVIDIA");
  CHECK(v.count_resource == "nvidia.com/gpu");
  CHECK(v.memory_resource == "nvidia.com/gpumem");
  CHECK(v.memory_percentage_resource == "nvidia.com/gpumem-percentage");
  CHECK(v.core_resource == "nvidia.com/gpucores");
  CHECK(v.priority_resource == "nvidia.com/priority");
  CHECK(v.default_memory == 0);
  CHECK(v.default_cores == 0);
  CHECK(v.default_gpu_num == 1);
  CHECK(v.memory_factor == 1);
  CHECK(v.register_annotation == "hami.io/node-nvidia-register");
  CHECK(v.register_format == RegisterFormat::kJson);
  CHECK(v.handshake_annotation == "hami.io/node-handshake");
  CHECK(v.to_allocate_annotation == "hami.io/vgpu-devices-to-allocate");
  CHECK(v.allocated_annotation == "hami.io/vgpu-devices-allocated");
  CHECK_FALSE(c.nvidia.overwrite_env);
  CHECK(c.nvidia.gpu_core_policy == "default");
  CHECK(c.FindVendor("NVIDIA") == &c.vendors[0]);
  CHECK(c.FindVendor("DCU") == nullptr);
}

// The shape of the HAMi chart's device-config.yaml.
constexpr std::string_view kChartConfig = R"(
nvidia:
  resourceCountName: nvidia.com/gpu
  resourceMemoryName: nvidia.com/gpumem
  resourceMemoryPercentageName: nvidia.com/gpumem-percentage
  resourceCoreName: nvidia.com/gpucores
  resourcePriorityName: nvidia.com/priority
  overwriteEnv: false
  defaultMemory: 0
  defaultCores: 0
  defaultGPUNum: 1
  preConfiguredDeviceMemory: 0
  memoryFactor: 1
  deviceSplitCount: 10
  deviceMemoryScaling: 1
  deviceCoreScaling: 1.5
  enableNumaTopology: false
  gpuCorePolicy: default
  libCudaLogLevel: "1"
  runtimeClassName: ""
  migProfileAllowlist:
  - models: [ "A30" ]
    profiles: [ "1g.6gb", "2g.12gb", "4g.24gb" ]
  - models: [ "A100-SXM4-40GB", "A100-40GB-PCIe" ]
    profiles: [ "1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb" ]
cambricon:
  resourceCountName: cambricon.com/vmlu
  resourceMemoryName: cambricon.com/mlu.smlu.vmemory
  resourceCoreName: cambricon.com/mlu.smlu.vcore
hygon:
  resourceCountName: hygon.com/dcunum
  resourceMemoryName: hygon.com/dcumem
  resourceCoreName: hygon.com/dcucores
  memoryFactor: 2
metax:
  resourceCountName: "metax-tech.com/gpu"
  resourceVCountName: metax-tech.com/sgpu
  resourceVMemoryName: metax-tech.com/vmemory
  resourceVCoreName: metax-tech.com/vcore
  sgpuTopologyAware: "false"
mthreads:
  resourceCountName: "mthreads.com/vgpu"
iluvatars:
- chipName: MR-V100
  commonWord: MR-V100
  resourceCountName: iluvatar.ai/MR-V100-vgpu
  resourceMemoryName: iluvatar.ai/MR-V100.vMem
  resourceCoreName: iluvatar.ai/MR-V100.vCore
vnpus:
  hamiVnpuCore: false
  configs:
  - chipName: 910B3
    commonWord: Ascend910B3
    resourceName: huawei.com/Ascend910B3
    resourceMemoryName: huawei.com/Ascend910B3-memory
    resourceCoreName: huawei.com/Ascend910B3-core
    memoryAllocatable: 65536
    memoryCapacity: 65536
    memoryFactor: 1
    aiCore: 20
    aiCPU: 7
    runtimeClassName: ""
    overwriteEnv: false
    templates:
      - name: vir05_1c_16g
        memory: 16384
        aiCore: 5
        aiCPU: 1
      - name: vir10_3c_32g
        memory: 32768
        aiCore: 10
        aiCPU: 3
)";

TEST_CASE("device config: the chart's file") {
  DeviceConfig c = MustParse(kChartConfig);
  std::vector<std::string> words;
  for (const VendorSpec& v : c.vendors) words.push_back(v.common_word);
  CHECK(words ==
        std::vector<std::string>{"NVIDIA", "MLU", "DCU", "Metax-GPU", "MR-V100", "Ascend910B3"});
  CHECK(c.ignored_sections == std::vector<std::string>{"mthreads"});

  CHECK(c.nvidia.device_split_count == 10u);
  CHECK(c.nvidia.device_core_scaling == 1.5);
  CHECK(c.nvidia.lib_cuda_log_level == "1");
  CHECK(c.nvidia.enable_numa_topology == false);
  REQUIRE(c.nvidia.mig_profile_allowlist.size() == 2);
  CHECK(c.nvidia.mig_profile_allowlist[1].profiles[3] == "7g.40gb");

  const VendorSpec* dcu = c.FindVendor("DCU");
  REQUIRE(dcu != nullptr);
  CHECK(dcu->memory_factor == 2);
  CHECK(dcu->register_annotation == "hami.io/node-dcu-register");
  CHECK(dcu->register_format == RegisterFormat::kLegacy);
  CHECK(dcu->handshake_annotation == "hami.io/node-handshake-dcu");
  CHECK(dcu->to_allocate_annotation == "hami.io/dcu-devices-to-allocate");

  const VendorSpec* mlu = c.FindVendor("MLU");
  REQUIRE(mlu != nullptr);
  CHECK(mlu->registration == Registration::kCapacity);
  CHECK(mlu->memory_factor == 256);

  const VendorSpec* iluvatar = c.FindVendor("MR-V100");
  REQUIRE(iluvatar != nullptr);
  CHECK(iluvatar->chip_name == "MR-V100");
  CHECK(iluvatar->register_annotation == "hami.io/node-MR-V100-register");
  CHECK(iluvatar->allocated_annotation == "hami.io/MR-V100-devices-allocated");

  const VendorSpec* ascend = c.FindVendor("Ascend910B3");
  REQUIRE(ascend != nullptr);
  CHECK(ascend->count_resource == "huawei.com/Ascend910B3");
  CHECK(ascend->register_annotation == "hami.io/node-register-Ascend910B3");
  CHECK(ascend->register_format == RegisterFormat::kJson);
  CHECK(ascend->memory_capacity == 65536);
  REQUIRE(ascend->templates.size() == 2);
  CHECK(ascend->templates[1] == MemoryTemplate{"vir10_3c_32g", 32768, 10, 3});
}

TEST_CASE("device config: defaults fill what a section leaves out") {
  CHECK(MustParse("nvidia:\n  defaultCores: -1\n").vendors[0].default_cores == -1);
  DeviceConfig c = MustParse("nvidia:\n  defaultMemory: 4096\n");
  REQUIRE(c.vendors.size() == 1);
  CHECK(c.vendors[0].default_memory == 4096);
  CHECK(c.vendors[0].count_resource == "nvidia.com/gpu");
  // A list-shaped vnpus (older charts) is read too.
  c = MustParse("vnpus:\n- commonWord: Ascend310P\n  resourceName: huawei.com/Ascend310P\n");
  CHECK(c.vendors[0].common_word == "Ascend310P");
}

TEST_CASE("device config: errors name the key and its line") {
  struct Row {
    std::string_view yaml;
    std::string_view field;
    std::string_view message;
  };
  const Row rows[] = {
      {"nvidia:\n  resourceCountName: a\n  defaultMemroy: 1\n", "nvidia.defaultMemroy",
       "nvidia.defaultMemroy: unknown key (line 3, column 3)"},
      {"nvidia:\n  defaultMemory: lots\n", "nvidia.defaultMemory",
       "expected an integer in [-2147483648, 2147483647], got \"lots\" (line 2"},
      {"nvidia:\n  defaultMemory: \"10\"\n", "nvidia.defaultMemory", "expected an integer"},
      {"nvidia:\n  defaultGPUNum: 4294967296\n", "nvidia.defaultGPUNum", "expected an integer"},
      {"nvidia:\n  overwriteEnv: maybe\n", "nvidia.overwriteEnv", "expected true or false"},
      {"nvidia:\n  deviceSplitCount: -1\n", "nvidia.deviceSplitCount", "[0, 4294967295]"},
      {"nvidia:\n  deviceMemoryScaling: fast\n", "nvidia.deviceMemoryScaling",
       "non-negative finite number"},
      {"nvidia:\n  deviceMemoryScaling: nan\n", "nvidia.deviceMemoryScaling",
       "non-negative finite number"},
      {"nvidia:\n  deviceCoreScaling: inf\n", "nvidia.deviceCoreScaling",
       "non-negative finite number"},
      {"nvidia:\n  resourceCountName: [a, b]\n", "nvidia.resourceCountName", "expected a string"},
      {"nvidia:\n  gpuCorePolicy: always\n", "nvidia.gpuCorePolicy",
       "not one of default, force, disable"},
      {"nvidia:\n  libCudaLogLevel: \"2\"\n", "nvidia.libCudaLogLevel", "0, 1, 3, 4"},
      {"nvidia:\n  migProfileAllowlist:\n  - models: [A30]\n    profiles: [big]\n",
       "nvidia.migProfileAllowlist[0].profiles[0]", "does not look like <n>g.<memory>"},
      {"nvidia:\n  migProfileAllowlist:\n  - model: [A30]\n", "nvidia.migProfileAllowlist[0].model",
       "unknown key"},
      {"gaudi:\n  resourceCountName: habana.ai/gaudi\n", "gaudi", "unknown vendor section"},
      {"iluvatars:\n- chipName: X\n", "iluvatars[0].commonWord", "required"},
      {"iluvatars:\n  chipName: X\n", "iluvatars", "expected a list"},
      {"vnpus:\n  configs:\n  - commonWord: A\n    templates:\n    - name: t\n      memory: x\n",
       "vnpus.configs[0].templates[0].memory", "expected an integer"},
      {"iluvatars:\n- commonWord: X\n- commonWord: X\n", "iluvatars", "share the common word"},
      {"nvidia: {}\nhygon:\n", "", "every vendor section is empty"},
      {"- nvidia\n", "", "expected a mapping of vendor sections"},
      {"nvidia: [unclosed\n", "", "invalid YAML"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.yaml);
    Status s = ParseError(row.yaml);
    CHECK(s.field() == row.field);
    CHECK(s.message().find(row.message) != std::string_view::npos);
  }
}
