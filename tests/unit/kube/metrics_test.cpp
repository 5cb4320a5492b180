// The Prometheus metrics and the GPU gauges (devshare/kube/metrics.hpp).
#include "devshare/kube/metrics.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "testutil.hpp"

using namespace devshare;
using namespace devshare::kube;

TEST_CASE("kube: metrics render as Prometheus text") {
  Metrics m;
  m.ObserveFilter("placed", 0.002);
  m.CountApiRequest("patch-pod", 200);
  m.SetState(true, 3, 24, 5);
  m.SetApiConnections(ApiConnectionStats{2, 40, 1});
  const std::string text = m.Render();
  CHECK(
      text.find("devshare_filter_duration_seconds_bucket{outcome=\"placed\",le=\"0.0025\"} 1\n") !=
      std::string::npos);
  CHECK(text.find("devshare_filter_duration_seconds_bucket{outcome=\"placed\",le=\"0.001\"} 0\n") !=
        std::string::npos);
  CHECK(text.find("devshare_api_requests_total{verb=\"patch-pod\",code=\"200\"} 1\n") !=
        std::string::npos);
  CHECK(text.find("devshare_leader 1\n") != std::string::npos);
  CHECK(text.find("devshare_devices 24\n") != std::string::npos);
  CHECK(text.find("# TYPE devshare_api_connections_opened_total counter\n"
                  "devshare_api_connections_opened_total 2\n") != std::string::npos);
  CHECK(text.find("devshare_api_connection_reuses_total 40\n") != std::string::npos);
  CHECK(text.find("devshare_api_tls_resumptions_total 1\n") != std::string::npos);
}

TEST_CASE("kube: metrics gauges of GPU allocation and fragmentation, from the snapshot") {
  using testing::MakeDevice;
  using testing::MakeNode;
  using testing::MakePod;
  ClusterSnapshot s;
  // a: two GPUs of 10 slots, 1000 MiB, 100 cores; a-gpu0 holds 250 MiB and
  // 50 cores (share 0.5, cores are the tighter), a-gpu1 is idle.
  REQUIRE(s.AddNode(MakeNode("a").Gpus(2, 10, 1000, 100)).ok());
  // b: one slot, 2000 MiB, held 1500 MiB and 10 cores (share 0.75; no free
  // slot, so nothing of it is free).
  REQUIRE(s.AddNode(MakeNode("b").Gpu(1, 2000, 100)).ok());
  // c: an unhealthy 4000 MiB GPU (allocated 0, free 0).
  REQUIRE(s.AddNode(MakeNode("c").With(MakeDevice("c-gpu0").Mem(4000).Health(false))).ok());
  REQUIRE(s.AddPod(MakePod("p").Container(1).Holding("a", "a-gpu0,NVIDIA,250,50:;")).ok());
  REQUIRE(s.AddPod(MakePod("q").Container(1).Holding("b", "b-gpu0,NVIDIA,1500,10:;")).ok());

  const std::vector<WorkloadClass> whole = {
      {1, 1, 0, 0, 0}};  // fragmented: free share of partly used GPUs
  const GpuGauges g = MeasureGpus(s, whole);
  CHECK(g.gpus == 4);
  CHECK(g.allocated == doctest::Approx(1.25));
  CHECK(g.memory_bytes == 8000ULL * 1024 * 1024);
  CHECK(g.memory_allocated_bytes == 1750ULL * 1024 * 1024);
  CHECK(g.free == doctest::Approx(1.5));
  CHECK(g.fragmented == doctest::Approx(0.5));

  Metrics m;
  m.SetCluster(true, s, whole);
  const std::string text = m.Render();
  for (const char* line :
       {"devshare_leader 1\n", "devshare_nodes 3\n", "devshare_devices 4\n", "devshare_pods 2\n",
        "devshare_gpus 4\n", "devshare_gpu_allocated 1.25\n",
        "devshare_gpu_memory_bytes 8388608000\n",
        "devshare_gpu_memory_allocated_bytes 1835008000\n", "devshare_gpu_free 1.5\n",
        "devshare_gpu_fragmented 0.5\n", "# TYPE devshare_gpu_allocated gauge\n",
        "# TYPE devshare_gpu_fragmented gauge\n"}) {
    CAPTURE(line);
    CHECK(text.find(line) != std::string::npos);
  }

  // The default workload (what serve measures) agrees with the core's measure.
  Result<ClusterFragmentation> f = MeasureFragmentation(s);
  REQUIRE(f.ok());
  const GpuGauges d = MeasureGpus(s);
  CHECK(d.free == doctest::Approx(1.5));
  CHECK(d.fragmented == f->fragmented_gpus);
  CHECK(d.fragmented <= d.free);

  // A workload the core refuses: the fragmentation gauges read NaN, the rest stand.
  const std::vector<WorkloadClass> invalid = {{1, 0, 0, 0, 0}};
  m.SetCluster(false, s, invalid);
  const std::string refused = m.Render();
  CHECK(refused.find("devshare_gpu_free NaN\n") != std::string::npos);
  CHECK(refused.find("devshare_gpu_fragmented NaN\n") != std::string::npos);
  CHECK(refused.find("devshare_gpu_allocated 1.25\n") != std::string::npos);
  CHECK(refused.find("devshare_leader 0\n") != std::string::npos);

  // An empty cluster renders zeros.
  m.SetCluster(false, ClusterSnapshot{});
  const std::string empty = m.Render();
  CHECK(empty.find("devshare_gpus 0\n") != std::string::npos);
  CHECK(empty.find("devshare_gpu_allocated 0\n") != std::string::npos);
  CHECK(empty.find("devshare_gpu_fragmented 0\n") != std::string::npos);
}

TEST_CASE("kube: metrics of device quotas: objects, unreadable ones, limit and use by namespace") {
  using testing::MakeNode;
  using testing::MakePod;
  ClusterSnapshot s;
  REQUIRE(s.AddNode(MakeNode("a").Gpus(2)).ok());
  REQUIRE(s.SetQuota("ml", "q", StringMap{{"limits.nvidia.com/gpumem", "8000"}}).ok());
  REQUIRE(s.SetQuota("ml", "tight", StringMap{{"limits.nvidia.com/gpumem", "6000"}}).ok());
  REQUIRE(s.AddPod(MakePod("p", "ml").Container(1).Holding("a", "a-gpu0,NVIDIA,2500,20:;")).ok());
  Metrics m;
  CHECK(m.Render().find("devshare_quota_limit") == std::string::npos);  // no quota: no series
  m.SetCluster(true, s);
  m.SetQuotaObjects(3, 1);
  engine::Counters preemption;
  preemption.preemptions = 2;
  preemption.preemption_victims = 5;
  m.SetPreemption(preemption, 1);
  const std::string text = m.Render();
  CHECK(text.find("devshare_preemptions_total 2\n") != std::string::npos);
  CHECK(text.find("devshare_preemption_victims_total 5\n") != std::string::npos);
  CHECK(text.find("devshare_preemptions_in_progress 1\n") != std::string::npos);
  CHECK(text.find("devshare_quotas 3\n") != std::string::npos);
  CHECK(text.find("devshare_quotas_undecodable 1\n") != std::string::npos);
  CHECK(text.find("# TYPE devshare_quota_limit gauge\n"
                  "devshare_quota_limit{namespace=\"ml\",resource=\"nvidia.com/gpumem\"} 6000\n") !=
        std::string::npos);
  CHECK(text.find("devshare_quota_used{namespace=\"ml\",resource=\"nvidia.com/gpumem\"} 2500\n") !=
        std::string::npos);
}
