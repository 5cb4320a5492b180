// The scenario's objects: pods and nodes as the simulator builds them.
#include <doctest/doctest.h>

#include "sim_fixtures.hpp"

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;
using namespace devshare::sim::fixtures;

TEST_CASE("sim units: the scenario's objects") {
  const Pod quarter = MakePod(PodSpec{"p", 1, 250, "T4|A10", 4000, 1024, 0, 0}, 7);
  CHECK(quarter.uid == "uid-7");
  CHECK(quarter.pod_namespace == "sim");
  CHECK(*quarter.containers.at(0).limits.Find("nvidia.com/gpu") == "1");
  CHECK(*quarter.containers.at(0).limits.Find("nvidia.com/gpucores") == "25");
  CHECK(*quarter.containers.at(0).limits.Find("nvidia.com/gpumem-percentage") == "25");
  CHECK(*quarter.annotations.Find(keys::kUseGpuType) == "T4,A10");
  CHECK(quarter.memory_bytes == 1024LL * 1024 * 1024);
  CHECK(GpusOf(PodOf("p", 1, 250)) == 0.25);
  CHECK(GpusOf(PodOf("p", 4, 1000)) == 4);

  const Node node = StartNode(NodeSpec{"n", 2, 16384, "T4", 8000, 1024});
  CHECK(*node.allocatable.Find("nvidia.com/gpu") == "200");  // 100 slots a GPU
  CHECK(*node.allocatable.Find("cpu") == "8000m");
  CHECK(*node.allocatable.Find("memory") == "1024Mi");

  Scenario s;
  s.pods = {PodOf("a", 1, 500), PodOf("b", 1, 500), PodOf("c", 2, 1000), PodOf("cpu", 0, 0)};
  const std::vector<WorkloadClass> workload = ReplicaEngineOptions(s).filter.workload;
  REQUIRE(workload.size() ==
          2);  // half a GPU (as 0 GPUs, 500 milli), then 2 GPUs; no CPU-only class
  CHECK(workload[0].gpus == 0);
  CHECK(workload[0].gpu_milli == 500);
  CHECK(workload[0].weight == 2);
  CHECK(workload[1].gpus == 2);
  CHECK(workload[1].weight == 1);
}
