// The simulator: determinism, the scheduling loop, NodeResourcesFit, the
// API model, and the openb scenario reader.
#include <doctest/doctest.h>

#include <algorithm>

#include "devshare/sim/simulator.hpp"
#include "testutil.hpp"

using namespace devshare;
using namespace devshare::sim;

namespace {
Scenario Small(int pods, std::int32_t gpus_per_pod = 1) {
  Scenario s;
  s.nodes = {NodeSpec{"n1", 2, 16384, "T4", 0, 0}, NodeSpec{"n2", 2, 16384, "T4", 0, 0}};
  for (int i = 0; i < pods; ++i) {
    s.pods.push_back(PodSpec{"p" + std::to_string(i), gpus_per_pod, 1000, "", 0, 0, 1000 * i, 0});
  }
  return s;
}
}  // namespace

TEST_CASE("sim: pods are placed until the GPUs run out") {
  Result<Report> r = Run(Small(5), 1);
  REQUIRE(r.ok());
  CHECK(r->pods == 5);
  CHECK(r->bound == 4);
  CHECK(r->unschedulable == 1);
  CHECK(r->gpu_capacity == 4);
  CHECK(r->allocation_percent == doctest::Approx(100));
  CHECK(r->latency_p50_ms > 0);
  // Every bind went through the node lock: lock, bind-phase, Binding per pod.
  CHECK(r->api_calls.at("binding") == 4);
  CHECK(r->api_calls.at("patch-node") == 4);
}

TEST_CASE("sim: progress counts every handled pod up to the total") {
  std::vector<std::uint64_t> seen;
  Result<Report> r = Run(Small(250), 1, [&](std::uint64_t handled, std::uint64_t total) {
    CHECK(total == 250);
    seen.push_back(handled);
  });
  REQUIRE(r.ok());
  REQUIRE(!seen.empty());
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(seen.front() == 2);  // every 1 % of 250 pods
  CHECK(seen.back() == 250);
  CHECK(seen.size() == 125);
}

TEST_CASE("sim: the same seed gives the same report") {
  Scenario s = Small(6);
  s.pods.push_back(PodSpec{"share", 1, 300, "", 0, 0, 500, 0});
  Result<Report> a = Run(s, 42);
  Result<Report> b = Run(s, 42);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
}

TEST_CASE("sim: NodeResourcesFit on CPU and memory, and departures free capacity") {
  Scenario s;
  s.nodes = {NodeSpec{"n1", 1, 16384, "T4", 4000, 8192}};
  s.pods = {PodSpec{"big", 1, 100, "", 8000, 0, 0, 0},          // more CPU than the node
            PodSpec{"a", 1, 1000, "", 1000, 1024, 1000, 5000},  // leaves at 6 s
            PodSpec{"b", 1, 1000, "", 1000, 1024, 2000, 0},     // GPU busy: unschedulable
            PodSpec{"c", 1, 1000, "", 1000, 1024, 10000, 0}};   // after a left: placed
  Result<Report> r = Run(s, 7);
  REQUIRE(r.ok());
  CHECK(r->bound == 2);
  CHECK(r->unschedulable == 2);
  CHECK(r->allocation_percent == doctest::Approx(100));
}

TEST_CASE("sim: fgd places pods without devices too, and sees the CPU they take") {
  // a: 2 GPUs, 12 cores; b: 1 GPU, 14 cores. A 12-core pod without devices
  // fits both; on a it would strand both GPUs. Then a 1-core GPU pod and two
  // 6-core ones: all three GPUs can be used only if the 1-core pod takes b's
  // GPU, the one the 12-core pod left 2 cores for.
  Scenario s;
  s.nodes = {NodeSpec{"a", 2, 16384, "T4", 12000, 0}, NodeSpec{"b", 1, 16384, "T4", 14000, 0}};
  s.pods = {PodSpec{"cpu", 0, 0, "", 12000, 0, 0, 0}, PodSpec{"small", 1, 1000, "", 1000, 0, 1000, 0},
            PodSpec{"big1", 1, 1000, "", 6000, 0, 2000, 0}, PodSpec{"big2", 1, 1000, "", 6000, 0, 3000, 0}};
  s.engine.filter.node_policy = "fgd";
  s.engine.filter.gpu_policy = "fgd";
  Result<Report> fgd = Run(s, 1);
  REQUIRE(fgd.ok());
  CHECK(fgd->bound == 4);
  CHECK(fgd->allocation_percent == doctest::Approx(100));
  // kube-scheduler's first fitting node for the CPU pod (a) strands a's GPUs.
  s.engine.filter.node_policy = "binpack";
  s.engine.filter.gpu_policy = "binpack";
  Result<Report> binpack = Run(s, 1);
  REQUIRE(binpack.ok());
  CHECK(binpack->bound == 2);
  CHECK(binpack->allocation_percent == doctest::Approx(100.0 / 3));
}

TEST_CASE("sim: HAMi's handshake writes to nodes, the change-only protocol does not") {
  Scenario s = Small(2);
  s.end_ms = 120000;
  s.engine.registration = engine::RegistrationProtocol::kHami;
  Result<Report> hami = Run(s, 3);
  s.engine.registration = engine::RegistrationProtocol::kChangeOnly;
  Result<Report> quiet = Run(s, 3);
  REQUIRE(hami.ok());
  REQUIRE(quiet.ok());
  CHECK(hami->api_calls.at("patch-node") > quiet->api_calls.at("patch-node"));
  CHECK(hami->bound == quiet->bound);
}

TEST_CASE("sim: the openb scenario reader") {
  constexpr std::string_view kNodes = "sn,cpu_milli,memory_mib,gpu,model\nn-0,64000,262144,2,P100\nn-1,96000,393216,8,V100M32\n";
  constexpr std::string_view kPods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
      "p-0,12000,16384,1,1000,,LS,Running,0,100,0\n"
      "p-1,6000,12288,1,460,,LS,Running,0,100,0\n"
      "p-2,4000,8192,0,0,,BE,Running,0,100,0\n";
  Result<Scenario> s = OpenbScenario(kNodes, kPods, 1.3, 5);
  REQUIRE(s.ok());
  REQUIRE(s->nodes.size() == 2);
  CHECK(s->nodes[1].gpu_memory_mib == 32768);
  double requested = 0;
  for (const PodSpec& p : s->pods) requested += p.gpus == 1 ? p.gpu_milli / 1000.0 : p.gpus;
  CHECK(requested >= 1.3 * 10);
  Result<Report> r = Run(*s, 5);
  REQUIRE(r.ok());
  CHECK(r->allocation_percent > 50);
  CHECK(OpenbScenario(kNodes, "name,num_gpu,gpu_milli\np,1,2000\n", 1.3, 5).status().message().find("row 1") !=
        std::string_view::npos);
  CHECK(OpenbScenario("sn,gpu\nn,x\n", kPods, 1.3, 5).status().code() == StatusCode::kMalformed);
}

TEST_CASE("sim: the placement invariant catches what a faulty scheduler would do") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(testing::MakeNode("n1").Gpus(2, 10, 8000, 100)).ok());
  REQUIRE(s.AddNode(testing::MakeNode("n2").Gpus(1, 10, 8000, 100)).ok());
  REQUIRE(s.AddPod(testing::MakePod("ok").Container(1).Holding("n1", "n1-gpu0,NVIDIA,3000,30:;")).ok());
  CHECK(CheckPlacement(s, "n1", "uid-ok").ok());

  auto violation = [&](std::string_view node, std::string_view uid) {
    Status st = CheckPlacement(s, node, uid);
    CHECK(st.code() == StatusCode::kInternal);
    return std::string(st.message());
  };
  SUBCASE("a device beyond its memory") {
    REQUIRE(s.AddPod(testing::MakePod("big").Container(1).Holding("n1", "n1-gpu0,NVIDIA,6000,10:;")).ok());
    CHECK(violation("n1", "uid-big") == "device n1-gpu0 is over capacity (2/10 slots, 9000/8000 MiB, 40/100 cores)");
  }
  SUBCASE("a device beyond its cores") {
    REQUIRE(s.AddPod(testing::MakePod("hot").Container(1).Holding("n1", "n1-gpu0,NVIDIA,10,80:;")).ok());
    CHECK(violation("n1", "uid-hot").find("110/100 cores") != std::string::npos);
  }
  SUBCASE("devices of another node") {
    REQUIRE(s.AddPod(testing::MakePod("far").Container(1).Holding("n1", "n2-gpu0,NVIDIA,10,1:;")).ok());
    CHECK(violation("n1", "uid-far") == "device n2-gpu0 is not on node n1");
  }
  SUBCASE("a pod the snapshot does not hold, a node it does not know") {
    CHECK(violation("n1", "uid-ghost") == "the snapshot holds no devices for the pod");
    CHECK(violation("n9", "uid-ok") == "node n9 is not in the snapshot");
  }
}
