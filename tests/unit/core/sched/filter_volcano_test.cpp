// Volcano's vGPU: its device config, annotations, device orders and node
// score (Volcano ed72c7c8, pkg/scheduler/api/devices/nvidia/vgpu; the
// expected values are worked out from its checkNodeGPUSharingPredicateAndScore).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "devshare/filter.hpp"
#include "devshare/pod_codec.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/vendor.hpp"

using namespace devshare;

namespace {

constexpr std::int64_t kNow = 1787300439;

// A node registering `devices` 16 GiB T4s through Volcano's
// annotation, with Volcano's allocatable resources.
Node VolcanoNode(const std::string& name, std::size_t devices) {
  Node n;
  n.name = name;
  std::string value;
  for (std::size_t i = 0; i < devices; ++i) {
    value += fmt::format("{}-gpu{},10,16384,NVIDIA-Tesla T4,true,hami-core:", name, i);
  }
  n.annotations.Set("volcano.sh/node-vgpu-register", value);
  n.allocatable.Set("volcano.sh/vgpu-number", std::to_string(devices * 10));
  n.allocatable.Set("volcano.sh/vgpu-memory", std::to_string(devices * 16384));
  n.allocatable.Set("volcano.sh/vgpu-cores", std::to_string(devices * 100));
  return n;
}

// A pod Volcano placed on `node` holding `ids` (volcano.sh/vgpu-ids-new).
Pod Holding(const std::string& uid, const std::string& node, const std::string& ids) {
  Pod p;
  p.name = uid;
  p.pod_namespace = "default";
  p.uid = uid;
  p.phase = "Running";
  p.node_name = node;
  p.annotations.Set("volcano.sh/vgpu-node", node);
  p.annotations.Set("volcano.sh/vgpu-ids-new", ids);
  p.containers.push_back(Container{"c", {}, {}, false});
  return p;
}

// A pending pod with one container per entry of `gpus`, each asking that
// many GPUs of `mem` MiB.
Pod Asking(std::vector<int> gpus, int mem) {
  Pod p;
  p.name = "p";
  p.pod_namespace = "default";
  p.uid = "uid-p";
  p.phase = "Pending";
  for (int n : gpus) {
    Container c;
    c.name = fmt::format("c{}", p.containers.size());
    c.limits.Set("volcano.sh/vgpu-number", std::to_string(n));
    c.limits.Set("volcano.sh/vgpu-memory", std::to_string(mem));
    p.containers.push_back(std::move(c));
  }
  return p;
}

// n1: gpu0 holds 2000 MiB (one pod), gpu1 6000 MiB (one pod), gpu2 and
// gpu3 are empty.
ClusterSnapshot Cluster() {
  ClusterSnapshot s(VolcanoDeviceConfig());
  REQUIRE(s.AddNode(VolcanoNode("n1", 4)).ok());
  REQUIRE(s.AddPod(Holding("a", "n1", "n1-gpu0,NVIDIA,2000,0:")).ok());
  REQUIRE(s.AddPod(Holding("b", "n1", "n1-gpu1,NVIDIA,6000,0:")).ok());
  return s;
}

FilterResult MustFilter(const ClusterSnapshot& s, const Pod& pod, const FilterOptions& o) {
  Result<FilterResult> r = Filter(s, pod, {}, kNow, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

std::vector<std::string> Uuids(const FilterResult& r) {
  std::vector<std::string> out;
  for (const auto& [vendor, containers] : r.devices) {
    for (const ContainerDevices& c : containers) {
      for (const ContainerDevice& d : c) out.push_back(d.uuid);
    }
  }
  return out;
}

FilterOptions Volcano(std::string gpu_policy) {
  FilterOptions o;
  o.node_policy = "volcano";
  o.gpu_policy = std::move(gpu_policy);
  return o;
}

}  // namespace

TEST_CASE("Volcano config: its resource names and annotations, alone") {
  const DeviceConfig config = VolcanoDeviceConfig();
  REQUIRE(config.vendors.size() == 1);
  const VendorSpec& v = config.vendors[0];
  CHECK(v.common_word == "NVIDIA");
  CHECK(v.count_resource == "volcano.sh/vgpu-number");
  CHECK(v.memory_resource == "volcano.sh/vgpu-memory");
  CHECK(v.core_resource == "volcano.sh/vgpu-cores");
  CHECK(v.memory_percentage_resource.empty());  // Volcano's default config names none
  CHECK(v.register_annotation == "volcano.sh/node-vgpu-register");
  CHECK(v.register_format == RegisterFormat::kVolcano);
  CHECK(v.allocated_annotation == "volcano.sh/vgpu-ids-new");
  CHECK(v.to_allocate_annotation == "volcano.sh/devices-to-allocate");
  CHECK(config.assigned_node_annotation == "volcano.sh/vgpu-node");
  CHECK(config.assigned_time_annotation == "volcano.sh/vgpu-time");
  CHECK(DefaultDeviceConfig().assigned_node_annotation == "hami.io/vgpu-node");

  for (const char* yaml : {"volcano:\n", "volcano: {}\n"}) {
    Result<DeviceConfig> parsed = ParseDeviceConfig(yaml);
    REQUIRE(parsed.ok());
    CHECK(parsed->vendors == config.vendors);
    CHECK(parsed->assigned_node_annotation == "volcano.sh/vgpu-node");
  }
  Result<DeviceConfig> named = ParseDeviceConfig(
      "volcano:\n  resourceMemoryPercentageName: volcano.sh/vgpu-memory-percentage\n"
      "  deviceSplitCount: 10\n");
  REQUIRE(named.ok());
  CHECK(named->vendors[0].memory_percentage_resource == "volcano.sh/vgpu-memory-percentage");

  Result<DeviceConfig> beside = ParseDeviceConfig("nvidia:\n  deviceSplitCount: 10\nvolcano: {}\n");
  CHECK(beside.status().code() == StatusCode::kInvalidConfig);
  CHECK(beside.status().message().find("cannot be configured beside other vendors") !=
        std::string::npos);
  Result<DeviceConfig> unknown = ParseDeviceConfig("volcano:\n  resourceNumberName: x\n");
  CHECK(unknown.status().code() == StatusCode::kInvalidConfig);
  CHECK(unknown.status().message().find("resourceNumberName") != std::string::npos);
}

TEST_CASE("Volcano pod devices: containers joined by ';'") {
  const PodSingleDevice two{{ContainerDevice{"GPU-a", "NVIDIA", 1000, 30}}, {}};
  CHECK(EncodePodDevices(two, PodDevicesFormat::kVolcano) == "GPU-a,NVIDIA,1000,30:;");
  CHECK(EncodePodDevices(two, PodDevicesFormat::kHami) == "GPU-a,NVIDIA,1000,30:;;");
  CHECK(EncodePodDevices({}, PodDevicesFormat::kVolcano).empty());
  Result<PodSingleDevice> back =
      DecodePodDevices(EncodePodDevices(two, PodDevicesFormat::kVolcano));
  REQUIRE(back.ok());
  CHECK(*back == two);
}

TEST_CASE("Volcano snapshot: devices from its register annotation, usage of the pods it placed") {
  ClusterSnapshot s = Cluster();
  Result<std::vector<DeviceView>> devices = s.NodeDevices("n1");
  REQUIRE(devices.ok());
  REQUIRE(devices->size() == 4);
  CHECK((*devices)[0].device.type == "NVIDIA-Tesla T4");
  CHECK((*devices)[0].device.devcore == 100);
  CHECK((*devices)[0].usage == DeviceUsage{1, 2000, 0});
  CHECK((*devices)[1].usage == DeviceUsage{1, 6000, 0});
  // HAMi's keys mean nothing under Volcano's config.
  Pod hami = Holding("h", "n1", "n1-gpu2,NVIDIA,1000,0:");
  hami.annotations = {};
  hami.annotations.Set("hami.io/vgpu-node", "n1");
  hami.annotations.Set("hami.io/vgpu-devices-allocated", "n1-gpu2,NVIDIA,1000,0:;");
  REQUIRE(s.AddPod(hami).ok());
  CHECK(s.pod_count() == 2);
}

TEST_CASE(
    "Volcano device orders: binpack the most memory used, spread the fewest slots, then the lowest "
    "index") {
  const ClusterSnapshot s = Cluster();
  // binpack: gpu1 (6000 used), then gpu0 (2000), then gpu2 before gpu3.
  CHECK(Uuids(MustFilter(s, Asking({1}, 1000), Volcano("volcano-binpack"))) ==
        std::vector<std::string>{"n1-gpu1"});
  CHECK(Uuids(MustFilter(s, Asking({3}, 1000), Volcano("volcano-binpack"))) ==
        std::vector<std::string>{"n1-gpu1", "n1-gpu0", "n1-gpu2"});
  // spread: gpu2 and gpu3 hold nothing; the lower index first.
  CHECK(Uuids(MustFilter(s, Asking({1}, 1000), Volcano("volcano-spread"))) ==
        std::vector<std::string>{"n1-gpu2"});
  CHECK(Uuids(MustFilter(s, Asking({3}, 1000), Volcano("volcano-spread"))) ==
        std::vector<std::string>{"n1-gpu2", "n1-gpu3", "n1-gpu0"});
  // The next container is ordered after the previous one's picks: under
  // spread gpu2 now holds a slot, so gpu3 is next.
  CHECK(Uuids(MustFilter(s, Asking({1, 1}, 1000), Volcano("volcano-spread"))) ==
        std::vector<std::string>{"n1-gpu2", "n1-gpu3"});
  CHECK(Uuids(MustFilter(s, Asking({1, 1}, 1000), Volcano("volcano-binpack"))) ==
        std::vector<std::string>{"n1-gpu1", "n1-gpu1"});
  // A device without room is passed over: 12000 MiB do not fit on gpu1
  // (10384 free), so the next in binpack order, gpu0 (14384 free), takes them.
  CHECK(Uuids(MustFilter(s, Asking({1}, 12000), Volcano("volcano-binpack"))) ==
        std::vector<std::string>{"n1-gpu0"});
}

TEST_CASE("Volcano node score: binpack sums 100 x used/total after each pick; spread is 0") {
  const ClusterSnapshot s = Cluster();
  FilterResult one = MustFilter(s, Asking({1}, 1000), Volcano("volcano-binpack"));
  REQUIRE(one.scores.size() == 1);
  CHECK(one.scores[0].score == 100 * (7000.0 / 16384.0));
  FilterResult two = MustFilter(s, Asking({1, 1}, 1000), Volcano("volcano-binpack"));
  CHECK(two.scores[0].score == 100 * (7000.0 / 16384.0) + 100 * (8000.0 / 16384.0));
  FilterResult three =
      MustFilter(s, Asking({2}, 1000), Volcano("binpack"));  // HAMi's order, Volcano's score
  CHECK(three.scores[0].score > 0);
  CHECK(MustFilter(s, Asking({1}, 1000), Volcano("volcano-spread")).scores[0].score == 0);

  // The highest score wins: n2's busier card beats n1's.
  ClusterSnapshot c = Cluster();
  REQUIRE(c.AddNode(VolcanoNode("n2", 1)).ok());
  REQUIRE(c.AddPod(Holding("z", "n2", "n2-gpu0,NVIDIA,9000,0:")).ok());
  FilterResult r = MustFilter(c, Asking({1}, 1000), Volcano("volcano-binpack"));
  CHECK(r.node == "n2");
  CHECK(*r.annotations.Find("volcano.sh/vgpu-node") == "n2");
  CHECK(*r.annotations.Find("volcano.sh/vgpu-time") == std::to_string(kNow));
  CHECK(*r.annotations.Find("volcano.sh/vgpu-ids-new") == "n2-gpu0,NVIDIA,1000,0:");
  CHECK(*r.annotations.Find("volcano.sh/devices-to-allocate") == "n2-gpu0,NVIDIA,1000,0:");
  CHECK(!r.annotations.Contains("hami.io/vgpu-node"));
}

TEST_CASE("Volcano UUID selectors: volcano.sh/vgpu-use-gpuuuid and -nouse-gpuuuid") {
  const ClusterSnapshot s = Cluster();
  Pod allow = Asking({1}, 1000);
  allow.annotations.Set("volcano.sh/vgpu-use-gpuuuid", "n1-gpu3, n1-gpu2");
  CHECK(Uuids(MustFilter(s, allow, Volcano("volcano-binpack"))) ==
        std::vector<std::string>{"n1-gpu2"});
  Pod deny = Asking({1}, 1000);
  deny.annotations.Set("volcano.sh/vgpu-nouse-gpuuuid", "n1-gpu1");
  CHECK(Uuids(MustFilter(s, deny, Volcano("volcano-binpack"))) ==
        std::vector<std::string>{"n1-gpu0"});
  Pod hami = Asking({1}, 1000);
  hami.annotations.Set("nvidia.com/use-gpuuuid", "n1-gpu3");  // HAMi's key: not Volcano's
  CHECK(Uuids(MustFilter(s, hami, Volcano("volcano-binpack"))) ==
        std::vector<std::string>{"n1-gpu1"});
}

TEST_CASE("Volcano policies are validated") {
  const ClusterSnapshot s = Cluster();
  FilterOptions o = Volcano("volcano-binpack,numa");
  Result<FilterResult> chained = Filter(s, Asking({1}, 1000), {}, kNow, o);
  CHECK(chained.status().code() == StatusCode::kInvalidArgument);
  CHECK(chained.status().message().find("cannot be part of a chain") != std::string::npos);
  o.gpu_policy = "volcano-first";
  CHECK(Filter(s, Asking({1}, 1000), {}, kNow, o).status().code() == StatusCode::kInvalidArgument);
}
