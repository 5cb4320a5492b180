// devshare/testing.hpp: the fixtures other projects' tests build on.
#include "devshare/testing.hpp"

#include <doctest/doctest.h>

#include "devshare/filter.hpp"

using namespace devshare;
using namespace devshare::testing;

TEST_CASE("testing: a node's register annotation decodes in every format") {
  const Node json = NodeBuilder("gpu-1").Gpus(2, 40960);
  REQUIRE(json.annotations.Find("hami.io/node-nvidia-register") != nullptr);
  Result<std::vector<Device>> devices =
      DecodeNodeDevices(*json.annotations.Find("hami.io/node-nvidia-register"));
  REQUIRE(devices.ok());
  REQUIRE(devices->size() == 2);
  CHECK((*devices)[1].id == "GPU-gpu-1-1");
  CHECK((*devices)[1].devmem == 40960);
  CHECK(*json.allocatable.Find("nvidia.com/gpu") == "20");  // 2 GPUs x 10 slots

  const Node legacy = NodeBuilder("gpu-2").Gpus(1, 16384, 4).Format(RegisterFormat::kLegacy);
  const std::string& value = *legacy.annotations.Find("hami.io/node-nvidia-register");
  CHECK(value.front() != '[');
  Result<std::vector<Device>> read = DecodeNodeDevices(value, RegisterFormat::kLegacy);
  REQUIRE(read.ok());
  CHECK((*read)[0].count == 4);

  const DeviceConfig volcano = VolcanoDeviceConfig();
  const Node v = NodeBuilder("v-1", volcano, volcano.vendors.front().common_word).Gpus(2, 15360);
  REQUIRE(v.annotations.Find("volcano.sh/node-vgpu-register") != nullptr);
  CHECK(DecodeNodeDevices(*v.annotations.Find("volcano.sh/node-vgpu-register"),
                          RegisterFormat::kVolcano)
            .ok());
  ClusterSnapshot snapshot(volcano);
  CHECK(snapshot.AddNode(v).ok());
  CHECK(snapshot.NodeDevices("v-1")->size() == 2);
}

TEST_CASE("testing: a snapshot of nodes and pods holding devices, ready for Filter") {
  const Pod held = PodBuilder("a").Gpus(1, 30000).Allocated("gpu-1", {{Use("gpu-1", 0, 30000, 0)}});
  CHECK(*held.annotations.Find("hami.io/vgpu-node") == "gpu-1");
  Result<ClusterSnapshot> snapshot = SnapshotOf(
      {NodeBuilder("gpu-1").Gpus(1, 40960), NodeBuilder("gpu-2").Gpus(1, 40960)}, {held});
  REQUIRE(snapshot.ok());
  CHECK(snapshot->NodeDevices("gpu-1")->front().usage.usedmem == 30000);
  // 20,000 MiB fits only on the GPU nobody holds.
  Result<FilterResult> placed = Filter(*snapshot, PodBuilder("b").Gpus(1, 20000), {}, 0);
  REQUIRE(placed.ok());
  REQUIRE(placed->node.has_value());
  CHECK(*placed->node == "gpu-2");
  // A fixture that does not decode is an error, not a silent empty node.
  CHECK_FALSE(
      SnapshotOf({NodeBuilder("bad").Annotation("hami.io/node-nvidia-register", "x")}).ok());
}

TEST_CASE("testing: requests by the vendor's resource names, init containers first") {
  const Pod pod = PodBuilder("p", "team").InitGpus(1, 1000).Gpus(2, -1, 50, 25).Requests(500, 1024);
  REQUIRE(pod.init_containers.size() == 1);
  CHECK(*pod.init_containers[0].limits.Find("nvidia.com/gpumem") == "1000");
  const Container& app = pod.containers.at(0);
  CHECK(*app.limits.Find("nvidia.com/gpu") == "2");
  CHECK(app.limits.Find("nvidia.com/gpumem") == nullptr);
  CHECK(*app.limits.Find("nvidia.com/gpucores") == "50");
  CHECK(*app.limits.Find("nvidia.com/gpumem-percentage") == "25");
  CHECK(pod.pod_namespace == "team");
  CHECK(pod.uid == "uid-p");
  CHECK(pod.memory_bytes == 1024LL * 1024 * 1024);
}
