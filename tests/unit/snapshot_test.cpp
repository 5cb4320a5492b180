// The incremental cluster snapshot (spec/hami-behaviour.md §4.3, §4.8, §9).
#include <doctest/doctest.h>

#include "devshare/snapshot.hpp"
#include "testutil.hpp"

using namespace devshare;
using testing::MakeNode;
using testing::MakePod;

namespace {
DeviceUsage UsageOf(const ClusterSnapshot& s, const std::string& node, std::size_t device) {
  auto devices = s.NodeDevices(node);
  REQUIRE(devices.ok());
  return (*devices)[device].usage;
}
}  // namespace

TEST_CASE("collapse: init containers peak, app containers add up (spec §4.8)") {
  auto dev = [](std::string uuid, int mem, int cores) {
    return ContainerDevice{std::move(uuid), "NVIDIA", mem, cores};
  };
  // init: A(100,10), A(300,5)  app: A(200,20), A(50,5), B(10,1)
  PodSingleDevice pod = {{dev("A", 100, 10)}, {dev("A", 300, 5)}, {dev("A", 200, 20), dev("B", 10, 1)}, {dev("A", 50, 5)}, {}};
  std::vector<PodUsage> got = CollapseUsage(pod, "NVIDIA", 2);
  // A: max(init 300/10, app 250/25) per component -> 300 MiB, 25 cores; slots max(1, 2) = 2.
  CHECK(got == std::vector<PodUsage>{{"NVIDIA", "A", 300, 25, 2}, {"NVIDIA", "B", 10, 1, 1}});
  CHECK(AppOnlyUsage(pod, "NVIDIA", 2) ==
        std::vector<PodUsage>{{"NVIDIA", "A", 250, 25, 2}, {"NVIDIA", "B", 10, 1, 1}});
  CHECK(CollapseUsage({}, "NVIDIA", 0).empty());
}

TEST_CASE("snapshot: a pod's usage comes and goes exactly") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(2)).ok());
  const DeviceUsage zero{};
  Pod pod = MakePod("p").Container(1).Holding("n1", "n1-gpu1,NVIDIA,3000,30:;");
  REQUIRE(s.AddPod(pod).ok());
  CHECK(UsageOf(s, "n1", 1) == DeviceUsage{1, 3000, 30});
  CHECK(UsageOf(s, "n1", 0) == zero);
  SUBCASE("adding the same pod again counts it once") {
    REQUIRE(s.AddPod(pod).ok());
    CHECK(UsageOf(s, "n1", 1) == DeviceUsage{1, 3000, 30});
    CHECK(s.pod_count() == 1);
  }
  SUBCASE("removing restores the snapshot") {
    CHECK(s.RemovePod("uid-p"));
    CHECK(UsageOf(s, "n1", 1) == zero);
    CHECK_FALSE(s.RemovePod("uid-p"));
  }
  SUBCASE("a finished pod is dropped; a terminating pod keeps its usage") {
    Pod terminating = pod;
    terminating.terminating = true;
    terminating.annotations.Set("hami.io/vgpu-devices-allocated", "n1-gpu0,NVIDIA,1,1:;");
    REQUIRE(s.AddPod(terminating).ok());
    CHECK(UsageOf(s, "n1", 1) == DeviceUsage{1, 3000, 30});
    Pod done = pod;
    done.phase = "Succeeded";
    REQUIRE(s.AddPod(done).ok());
    CHECK(UsageOf(s, "n1", 1) == zero);
    CHECK(s.pod_count() == 0);
  }
  SUBCASE("a pod without hami.io/vgpu-node is not cached") {
    REQUIRE(s.AddPod(MakePod("q").Container(1)).ok());
    CHECK(s.pod_count() == 1);
  }
  SUBCASE("a stale update without the annotation keeps the cached usage") {
    REQUIRE(s.AddPod(MakePod("p").Container(1)).ok());
    CHECK(UsageOf(s, "n1", 1) == DeviceUsage{1, 3000, 30});
  }
}

TEST_CASE("snapshot: a pod may arrive before its node, and survive node updates") {
  ClusterSnapshot s;
  REQUIRE(s.AddPod(MakePod("p").Container(1).Holding("n1", "n1-gpu0,NVIDIA,1000,10:;")).ok());
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(1)).ok());
  CHECK(UsageOf(s, "n1", 0) == DeviceUsage{1, 1000, 10});
  // Re-registration (a new device) keeps the usage.
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(2)).ok());
  CHECK(UsageOf(s, "n1", 0) == DeviceUsage{1, 1000, 10});
  CHECK(s.RemoveNode("n1"));
  CHECK(s.NodeDevices("n1").status().code() == StatusCode::kNotFound);
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(1)).ok());
  CHECK(UsageOf(s, "n1", 0) == DeviceUsage{1, 1000, 10});
  CHECK(s.RemovePod("uid-p"));
  CHECK(UsageOf(s, "n1", 0) == DeviceUsage{});
}

TEST_CASE("snapshot: the init-container shrink replaces usage by app-only sums") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(1)).ok());
  Pod pod = MakePod("p").Init(1, 5000).Container(1, 1000)
                .Holding("n1", "n1-gpu0,NVIDIA,5000,0:;n1-gpu0,NVIDIA,1000,0:;");
  REQUIRE(s.AddPod(pod).ok());
  CHECK(UsageOf(s, "n1", 0) == DeviceUsage{1, 5000, 0});
  pod.init_containers_done = true;
  REQUIRE(s.AddPod(pod).ok());
  CHECK(UsageOf(s, "n1", 0) == DeviceUsage{1, 1000, 0});
  // Once shrunk, it stays shrunk.
  pod.init_containers_done = false;
  REQUIRE(s.AddPod(pod).ok());
  CHECK(UsageOf(s, "n1", 0) == DeviceUsage{1, 1000, 0});
}

TEST_CASE("snapshot: bad annotations are errors, not silent usage") {
  ClusterSnapshot s;
  Status st = s.AddNode(MakeNode("n1").Annotation("hami.io/node-nvidia-register", "[{\"devmem\":\"x\"}]"));
  // The builder overwrites the register key, so build one by hand.
  Node bad;
  bad.name = "n2";
  bad.annotations.Set("hami.io/node-nvidia-register", "[{\"devmem\":\"x\"}]");
  st = s.AddNode(bad);
  CHECK(st.code() == StatusCode::kMalformed);
  CHECK(st.message().find("node n2: hami.io/node-nvidia-register") != std::string_view::npos);
  CHECK(s.NodeDevices("n2")->empty());  // the node is known, with no devices
  Status pod = s.AddPod(MakePod("p").Container(1).Holding("n1", "n1-gpu0,NVIDIA,lots,0:;"));
  CHECK(pod.code() == StatusCode::kMalformed);
  CHECK(s.pod_count() == 0);
}

TEST_CASE("snapshot: several quotas for one resource combine, the tightest wins (W13)") {
  ClusterSnapshot s;
  s.SetQuota("ml", "q1", StringMap{{"limits.nvidia.com/gpumem", "10000"}, {"requests.cpu", "4"}});
  s.SetQuota("ml", "q2", StringMap{{"limits.nvidia.com/gpumem", "6000"}});
  CHECK(s.QuotaLimit("ml", "nvidia.com/gpumem") == 6000);
  CHECK(s.RemoveQuota("ml", "q2"));
  CHECK(s.QuotaLimit("ml", "nvidia.com/gpumem") == 10000);  // deleting one does not unset the other
  CHECK(s.QuotaLimit("ml", "cpu") == -1);
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(1)).ok());
  REQUIRE(s.AddPod(MakePod("p", "ml").Container(1).Holding("n1", "n1-gpu0,NVIDIA,2500,20:;")).ok());
  CHECK(s.QuotaUsed("ml", "nvidia.com/gpumem") == 2500);
  CHECK(s.QuotaUsed("ml", "nvidia.com/gpucores") == 20);
  s.RemovePod("uid-p");
  CHECK(s.QuotaUsed("ml", "nvidia.com/gpumem") == 0);
}

TEST_CASE("snapshot: a copy is independent of the original") {
  auto copy = std::make_unique<ClusterSnapshot>();
  {
    ClusterSnapshot original;
    REQUIRE(original.AddNode(MakeNode("n1").Gpus(1)).ok());
    REQUIRE(original.AddPod(MakePod("p").Container(1).Holding("n1", "n1-gpu0,NVIDIA,1000,10:;")).ok());
    *copy = original;
    REQUIRE(original.RemovePod("uid-p"));
  }  // the original is gone
  // Re-registering the node re-applies the copy's own pods.
  REQUIRE(copy->AddNode(MakeNode("n1").Gpus(2)).ok());
  CHECK(UsageOf(*copy, "n1", 0) == DeviceUsage{1, 1000, 10});
  CHECK(copy->RemovePod("uid-p"));
  CHECK(UsageOf(*copy, "n1", 0) == DeviceUsage{});
}
