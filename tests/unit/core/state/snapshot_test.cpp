// The incremental cluster snapshot (spec/hami-behaviour.md §4.3, §4.8, §9).
#include "devshare/snapshot.hpp"

#include <doctest/doctest.h>

#include <map>

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
  PodSingleDevice pod = {{dev("A", 100, 10)},
                         {dev("A", 300, 5)},
                         {dev("A", 200, 20), dev("B", 10, 1)},
                         {dev("A", 50, 5)},
                         {}};
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
  Pod pod = MakePod("p").Init(1, 5000).Container(1, 1000).Holding(
      "n1", "n1-gpu0,NVIDIA,5000,0:;n1-gpu0,NVIDIA,1000,0:;");
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
  Status st =
      s.AddNode(MakeNode("n1").Annotation("hami.io/node-nvidia-register", "[{\"devmem\":\"x\"}]"));
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
  REQUIRE(s.SetQuota("ml", "q1",
                     StringMap{{"limits.nvidia.com/gpumem", "10000"}, {"requests.cpu", "4"}})
              .ok());
  REQUIRE(s.SetQuota("ml", "q2", StringMap{{"limits.nvidia.com/gpumem", "6000"}}).ok());
  CHECK(s.Quotas() == std::vector<QuotaUse>{{"ml", "nvidia.com/gpumem", 6000, 0}});
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

TEST_CASE("snapshot: a device limit that is not a whole number limits nothing, and says so") {
  ClusterSnapshot s;
  REQUIRE(s.SetQuota("ml", "tight", StringMap{{"limits.nvidia.com/gpumem", "4000"}}).ok());
  // Another quota on the same resource, unreadable: the tight one still holds.
  const Status bad = s.SetQuota("ml", "bad",
                                StringMap{{"limits.nvidia.com/gpumem", "1.5"},
                                          {"limits.nvidia.com/gpucores", "50"},
                                          {"limits.cpu", "half"}});  // not a device key: ignored
  CHECK(bad.code() == StatusCode::kMalformed);
  CHECK(bad.message() ==
        "resource quota ml/bad: spec.hard: limits.nvidia.com/gpumem is \"1.5\", not a whole "
        "number within int64; it does not limit that here");
  CHECK(s.QuotaLimit("ml", "nvidia.com/gpumem") == 4000);
  CHECK(s.QuotaLimit("ml", "nvidia.com/gpucores") == 50);  // its valid key is set
  CHECK(s.Quotas() == std::vector<QuotaUse>{{"ml", "nvidia.com/gpucores", 50, 0},
                                            {"ml", "nvidia.com/gpumem", 4000, 0}});
  // Replaced by a readable version: the error goes, the new limit applies.
  REQUIRE(s.SetQuota("ml", "bad", StringMap{{"limits.nvidia.com/gpumem", "3000"}}).ok());
  CHECK(s.QuotaLimit("ml", "nvidia.com/gpumem") == 3000);
  CHECK(s.QuotaLimit("ml", "nvidia.com/gpucores") == -1);
  CHECK(s.SetQuota("ml", "empty", StringMap{{"limits.", "1"}}).ok());
}

TEST_CASE("snapshot: a copy is independent of the original") {
  auto copy = std::make_unique<ClusterSnapshot>();
  {
    ClusterSnapshot original;
    REQUIRE(original.AddNode(MakeNode("n1").Gpus(1)).ok());
    REQUIRE(
        original.AddPod(MakePod("p").Container(1).Holding("n1", "n1-gpu0,NVIDIA,1000,10:;")).ok());
    *copy = original;
    REQUIRE(original.RemovePod("uid-p"));
  }  // the original is gone
  // Re-registering the node re-applies the copy's own pods.
  REQUIRE(copy->AddNode(MakeNode("n1").Gpus(2)).ok());
  CHECK(UsageOf(*copy, "n1", 0) == DeviceUsage{1, 1000, 10});
  CHECK(copy->RemovePod("uid-p"));
  CHECK(UsageOf(*copy, "n1", 0) == DeviceUsage{});
}

namespace {
NodeCpuMemory CpuMemoryOf(const ClusterSnapshot& s, const std::string& node) {
  Result<NodeCpuMemory> r = s.NodeCpuMemoryOf(node);
  REQUIRE(r.ok());
  return *r;
}
constexpr std::int64_t kMiB = 1024 * 1024;
constexpr std::int64_t kGiB = 1024 * kMiB;
}  // namespace

TEST_CASE("snapshot: CPU and memory capacity come from allocatable; unknown when absent") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(1).Cpu("8").Memory("16Gi")).ok());
  REQUIRE(s.AddNode(MakeNode("n2").Gpus(1).Cpu("7500m").Memory("1024Mi")).ok());
  REQUIRE(s.AddNode(MakeNode("n3").Gpus(1)).ok());
  REQUIRE(s.AddNode(MakeNode("n4").Gpus(1).Cpu("lots").Memory("-1")).ok());
  CHECK(CpuMemoryOf(s, "n1") == NodeCpuMemory{8000, 16 * kGiB, 0, 0});
  CHECK(CpuMemoryOf(s, "n2") == NodeCpuMemory{7500, 1024 * kMiB, 0, 0});
  CHECK(CpuMemoryOf(s, "n3") ==
        NodeCpuMemory{NodeCpuMemory::kUnknown, NodeCpuMemory::kUnknown, 0, 0});
  CHECK(CpuMemoryOf(s, "n4") ==
        NodeCpuMemory{NodeCpuMemory::kUnknown, NodeCpuMemory::kUnknown, 0, 0});
  CHECK(s.NodeCpuMemoryOf("ghost").status().code() == StatusCode::kNotFound);
  // Re-registration reads the new capacity.
  REQUIRE(s.AddNode(MakeNode("n3").Gpus(1).Cpu("2")).ok());
  CHECK(CpuMemoryOf(s, "n3").cpu_milli == 2000);
  CHECK(CpuMemoryOf(s, "n3").memory_bytes == NodeCpuMemory::kUnknown);
}

TEST_CASE("snapshot: placed pods count their CPU and memory, with devices or without") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(2).Cpu("16").Memory("64Gi")).ok());
  REQUIRE(s.AddNode(MakeNode("n2").Gpus(2).Cpu("16").Memory("64Gi")).ok());
  // Without devices: bound by spec.nodeName only; not cached for devices.
  Pod cpu_only = MakePod("cpu").Requests(2000, 4096).BoundTo("n1");
  REQUIRE(s.AddPod(cpu_only).ok());
  CHECK(CpuMemoryOf(s, "n1") == NodeCpuMemory{16000, 64 * kGiB, 2000, 4 * kGiB});
  CHECK(s.pod_count() == 0);
  // With devices: counted once however often it is observed.
  Pod gpu =
      MakePod("gpu").Container(1).Requests(1000, 1024).Holding("n1", "n1-gpu0,NVIDIA,1000,10:;");
  REQUIRE(s.AddPod(gpu).ok());
  REQUIRE(s.AddPod(gpu).ok());
  CHECK(CpuMemoryOf(s, "n1") == NodeCpuMemory{16000, 64 * kGiB, 3000, 5 * kGiB});
  CHECK(s.pod_count() == 1);
  CHECK(CpuMemoryOf(s, "n2").cpu_requested_milli == 0);

  SUBCASE("a pod only reserved (hami.io/vgpu-node, no spec.nodeName) counts on its reserved node") {
    Pod reserved = MakePod("r").Container(1).Requests(500, 0).Annotation("hami.io/vgpu-node", "n2");
    REQUIRE(s.AddPod(reserved).ok());
    CHECK(CpuMemoryOf(s, "n2").cpu_requested_milli == 500);
    reserved.node_name = "n2";  // then bound there: still once
    REQUIRE(s.AddPod(reserved).ok());
    CHECK(CpuMemoryOf(s, "n2").cpu_requested_milli == 500);
  }
  SUBCASE("an update moves or changes what is counted") {
    Pod moved = cpu_only;
    moved.node_name = "n2";
    moved.cpu_milli = 3000;
    REQUIRE(s.AddPod(moved).ok());
    CHECK(CpuMemoryOf(s, "n1") == NodeCpuMemory{16000, 64 * kGiB, 1000, 1 * kGiB});
    CHECK(CpuMemoryOf(s, "n2") == NodeCpuMemory{16000, 64 * kGiB, 3000, 4 * kGiB});
  }
  SUBCASE("a stale update without a node keeps what is counted") {
    REQUIRE(s.AddPod(MakePod("cpu").Requests(2000, 4096)).ok());
    CHECK(CpuMemoryOf(s, "n1").cpu_requested_milli == 3000);
  }
  SUBCASE("removing restores the counts; a finished pod is dropped") {
    CHECK(s.RemovePod("uid-cpu"));
    CHECK_FALSE(s.RemovePod("uid-cpu"));
    CHECK(CpuMemoryOf(s, "n1") == NodeCpuMemory{16000, 64 * kGiB, 1000, 1 * kGiB});
    Pod done = gpu;
    done.phase = "Succeeded";
    REQUIRE(s.AddPod(done).ok());
    CHECK(CpuMemoryOf(s, "n1") == NodeCpuMemory{16000, 64 * kGiB, 0, 0});
    CHECK(s.pod_count() == 0);
  }
  SUBCASE("a pod whose devices do not decode still counts its CPU and memory") {
    Pod bad = MakePod("bad").Container(1).Requests(700, 0).Holding("n2", "n2-gpu0,NVIDIA,lots,0:;");
    CHECK(s.AddPod(bad).code() == StatusCode::kMalformed);
    CHECK(CpuMemoryOf(s, "n2").cpu_requested_milli == 700);
  }
}

TEST_CASE("snapshot: CPU and memory of a pod may arrive before its node and survive node updates") {
  ClusterSnapshot s;
  REQUIRE(s.AddPod(MakePod("p").Requests(1500, 2048).BoundTo("n1")).ok());
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(1).Cpu("4")).ok());
  CHECK(CpuMemoryOf(s, "n1") == NodeCpuMemory{4000, NodeCpuMemory::kUnknown, 1500, 2 * kGiB});
  CHECK(s.RemoveNode("n1"));
  REQUIRE(s.AddPod(MakePod("q").Requests(500, 0).BoundTo("n1")).ok());  // while the node is away
  REQUIRE(s.AddNode(MakeNode("n1").Gpus(2).Cpu("8")).ok());
  CHECK(CpuMemoryOf(s, "n1") == NodeCpuMemory{8000, NodeCpuMemory::kUnknown, 2000, 2 * kGiB});
  ClusterSnapshot copy = s;
  CHECK(s.RemovePod("uid-p"));
  CHECK(s.RemovePod("uid-q"));
  CHECK(CpuMemoryOf(s, "n1").cpu_requested_milli == 0);
  CHECK(CpuMemoryOf(copy, "n1").cpu_requested_milli == 2000);  // the copy is independent
}

TEST_CASE("snapshot: CPU and memory sums match a recount over random adds, updates and removals") {
  testing::Gen gen(5);
  ClusterSnapshot s;
  const std::vector<std::string> nodes = {"n0", "n1", "n2", "n3"};
  for (const std::string& n : nodes)
    REQUIRE(s.AddNode(MakeNode(n).Gpus(1).Cpu("64").Memory("256Gi")).ok());
  struct Live {
    std::string node;
    std::int64_t cpu = 0, memory = 0;
  };
  std::map<std::string, Live> live;  // by UID: what the snapshot should count
  for (int step = 0; step < 400; ++step) {
    const std::string name = "p" + std::to_string(gen.Int(0, 30));
    MakePod pod(name);
    const std::int64_t cpu = gen.Int(0, 4) * 250;
    const std::int64_t memory_mib = gen.Int(0, 4) * 512;
    pod.Requests(cpu, memory_mib);
    const int what = static_cast<int>(gen.Int(0, 4));
    if (what == 0) {
      s.RemovePod("uid-" + name);
      live.erase("uid-" + name);
    } else if (what == 1) {  // finished
      Pod done = pod.BoundTo(nodes[static_cast<std::size_t>(gen.Int(0, 3))]);
      done.phase = "Failed";
      REQUIRE(s.AddPod(done).ok());
      live.erase("uid-" + name);
    } else if (what == 2) {  // unplaced update: keeps what is counted
      REQUIRE(s.AddPod(pod).ok());
    } else {  // placed, bound or only reserved
      const std::string node = nodes[static_cast<std::size_t>(gen.Int(0, 3))];
      if (what == 3) {
        pod.BoundTo(node);
      } else {
        pod.Annotation("hami.io/vgpu-node", node);
      }
      REQUIRE(s.AddPod(pod).ok());
      if (cpu == 0 && memory_mib == 0) {
        live.erase("uid-" + name);
      } else {
        live["uid-" + name] = Live{node, cpu, memory_mib * kMiB};
      }
    }
    for (const std::string& n : nodes) {
      std::int64_t cpu_sum = 0, memory_sum = 0;
      for (const auto& [uid, l] : live) {
        if (l.node != n) continue;
        cpu_sum += l.cpu;
        memory_sum += l.memory;
      }
      const NodeCpuMemory got = CpuMemoryOf(s, n);
      CHECK(got.cpu_requested_milli == cpu_sum);
      CHECK(got.memory_requested_bytes == memory_sum);
    }
  }
  for (const auto& [uid, l] : live) CHECK(s.RemovePod(uid));
  for (const std::string& n : nodes)
    CHECK(CpuMemoryOf(s, n) == NodeCpuMemory{64000, 256 * kGiB, 0, 0});
}
