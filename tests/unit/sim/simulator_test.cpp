// The simulator: determinism, the scheduling loop, NodeResourcesFit, the
// API model, and the openb scenario reader.
#include "devshare/sim/simulator.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "src/report.hpp"
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
  CHECK(r->pending == 1);
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
  CHECK(r->pending == 2);
  CHECK(r->allocation_percent == doctest::Approx(100));
}

TEST_CASE("sim: the report counts the devices left free by their free share") {
  // Three GPUs: a 0.81 share and a 0.47 share spread on two, the third left
  // whole (binpack's GPU order fills one device of a node, spread's nodes).
  Scenario s;
  s.nodes = {NodeSpec{"a", 2, 16384, "T4", 0, 0}, NodeSpec{"b", 1, 16384, "T4", 0, 0}};
  s.pods = {PodSpec{"big", 1, 810, "", 0, 0, 0, 0}, PodSpec{"half", 1, 470, "", 0, 0, 1000, 0}};
  s.engine.filter.node_policy = "spread";
  s.engine.filter.gpu_policy = "binpack";
  Result<Report> r = Run(s, 1);
  REQUIRE(r.ok());
  REQUIRE(r->bound == 2);
  CHECK(r->free_by_share == std::vector<FreeShareCount>{{190, 1}, {530, 1}, {1000, 1}});
}

TEST_CASE("sim: fgd places pods without devices too, and sees the CPU they take") {
  // a: 2 GPUs, 12 cores; b: 1 GPU, 14 cores. A 12-core pod without devices
  // fits both; on a it would strand both GPUs. Then a 1-core GPU pod and two
  // 6-core ones: all three GPUs can be used only if the 1-core pod takes b's
  // GPU, the one the 12-core pod left 2 cores for.
  Scenario s;
  s.nodes = {NodeSpec{"a", 2, 16384, "T4", 12000, 0}, NodeSpec{"b", 1, 16384, "T4", 14000, 0}};
  s.pods = {PodSpec{"cpu", 0, 0, "", 12000, 0, 0, 0},
            PodSpec{"small", 1, 1000, "", 1000, 0, 1000, 0},
            PodSpec{"big1", 1, 1000, "", 6000, 0, 2000, 0},
            PodSpec{"big2", 1, 1000, "", 6000, 0, 3000, 0}};
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

  // Fragmentation for the scenario's mix (1-core and 6-core one-GPU pods,
  // 1:2): binpack ends with a's two GPUs free and stranded by its CPU.
  CHECK(binpack->gpu_free == doctest::Approx(2));
  CHECK(binpack->gpu_fragmented == doctest::Approx(2));
  CHECK(binpack->fragmentation_percent == doctest::Approx(100));
  CHECK(fgd->gpu_free == doctest::Approx(0));
  CHECK(fgd->fragmentation_percent == 0);
  // The curve: a point per 10 % of the 3 GPUs asked, taken as the pod that
  // reaches it arrives (small: 10-30 %, big1: 40-60 %, big2: 70-100 %).
  auto point = [](const Report& r, double demand) {
    for (const FragmentationSample& f : r.fragmentation_curve) {
      if (f.demand_percent == demand) return f;
    }
    FAIL("no point at " << demand);
    return FragmentationSample{};
  };
  REQUIRE(binpack->fragmentation_curve.size() == 10);
  CHECK(binpack->fragmentation_curve.back().demand_percent == 100);
  // small arrives: the CPU pod alone, on a (binpack) or on b (fgd, where
  // its 2 cores left serve the 1-core class only: 2/3 of b's GPU).
  CHECK(point(*binpack, 30) == FragmentationSample{30, 0, 3, 2});
  CHECK(point(*fgd, 30).gpu_fragmented == doctest::Approx(2.0 / 3));
  // big1 arrives: small holds b's GPU under binpack.
  CHECK(point(*binpack, 60).allocation_percent == doctest::Approx(100.0 / 3));
  CHECK(point(*binpack, 60).gpu_fragmented == doctest::Approx(2));
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
  constexpr std::string_view kNodes =
      "sn,cpu_milli,memory_mib,gpu,model\nn-0,64000,262144,2,P100\nn-1,96000,393216,8,V100M32\n";
  constexpr std::string_view kPods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
      "time,scheduled_time\n"
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
  CHECK(OpenbScenario(kNodes, "name,num_gpu,gpu_milli\np,1,2000\n", 1.3, 5)
            .status()
            .message()
            .find("row 1") != std::string_view::npos);
  CHECK(OpenbScenario("sn,gpu\nn,x\n", kPods, 1.3, 5).status().code() == StatusCode::kMalformed);
  // A GPU model without a memory in the table is an error naming it; a node
  // without GPUs needs no model.
  CHECK(OpenbScenario("sn,gpu,model\nn,2,H100\n", kPods, 1.3, 5).status().message() ==
        "node list: row 1: GPU model 'H100' has no known memory (V100M16, V100M32, P100, T4, A10, "
        "G1, G2, G3)");
  CHECK(OpenbScenario("sn,gpu,model\nn,2,T4\ncpu,0,\n", kPods, 1.3, 5).ok());
}

TEST_CASE("sim: the placement invariant catches what a faulty scheduler would do") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(testing::MakeNode("n1").Gpus(2, 10, 8000, 100)).ok());
  REQUIRE(s.AddNode(testing::MakeNode("n2").Gpus(1, 10, 8000, 100)).ok());
  REQUIRE(
      s.AddPod(testing::MakePod("ok").Container(1).Holding("n1", "n1-gpu0,NVIDIA,3000,30:;")).ok());
  CHECK(CheckPlacement(s, "n1", "uid-ok").ok());

  auto violation = [&](std::string_view node, std::string_view uid) {
    Status st = CheckPlacement(s, node, uid);
    CHECK(st.code() == StatusCode::kInternal);
    return std::string(st.message());
  };
  SUBCASE("a device beyond its memory") {
    REQUIRE(s.AddPod(testing::MakePod("big").Container(1).Holding("n1", "n1-gpu0,NVIDIA,6000,10:;"))
                .ok());
    CHECK(violation("n1", "uid-big") ==
          "device n1-gpu0 is over capacity (2/10 slots, 9000/8000 MiB, 40/100 cores)");
  }
  SUBCASE("a device beyond its cores") {
    REQUIRE(s.AddPod(testing::MakePod("hot").Container(1).Holding("n1", "n1-gpu0,NVIDIA,10,80:;"))
                .ok());
    CHECK(violation("n1", "uid-hot").find("110/100 cores") != std::string::npos);
  }
  SUBCASE("devices of another node") {
    REQUIRE(
        s.AddPod(testing::MakePod("far").Container(1).Holding("n1", "n2-gpu0,NVIDIA,10,1:;")).ok());
    CHECK(violation("n1", "uid-far") == "device n2-gpu0 is not on node n1");
  }
  SUBCASE("a pod the snapshot does not hold, a node it does not know") {
    CHECK(violation("n1", "uid-ghost") == "the snapshot holds no devices for the pod");
    CHECK(violation("n9", "uid-ok") == "node n9 is not in the snapshot");
  }
}

namespace {

// n nodes of 8 GPUs and a pod every `every_ms` for `end_ms`, each running
// `duration_ms`, retried while unschedulable.
Scenario Stream(int nodes, std::int64_t every_ms, std::int64_t end_ms, std::int64_t duration_ms) {
  Scenario s;
  for (int n = 0; n < nodes; ++n)
    s.nodes.push_back(NodeSpec{"node-" + std::to_string(n), 8, 40960, "A100", 0, 0});
  for (std::int64_t t = 0, i = 0; t < end_ms; t += every_ms, ++i) {
    s.pods.push_back(PodSpec{"p" + std::to_string(i), 1, 500, "", 0, 0, t, duration_ms});
  }
  s.end_ms = end_ms;
  s.scheduler.retry_unschedulable = true;
  return s;
}

// The same scenario with legacy plugins and `protocol`'s handshake.
Scenario Legacy(Scenario s, engine::RegistrationProtocol protocol) {
  s.plugins.mode = PluginModel::Mode::kLegacy;
  s.engine.registration = protocol;
  return s;
}

std::uint64_t Reasons(const Report& r) {
  std::uint64_t n = 0;
  for (const auto& [reason, count] : r.pending_reasons) n += count;
  return n;
}

}  // namespace

TEST_CASE("sim: a legacy handshake storm throttles the scheduler's client; change-only does not") {
  Scenario quiet = Stream(60, 2000, 10 * 60000, 5 * 60000);
  quiet.api.qps = 2;  // 60 nodes answering every 30 s outrun 2 writes a second
  const Scenario legacy = Legacy(quiet, engine::RegistrationProtocol::kVolcano);
  Result<Report> storm = Run(legacy, 1);
  Result<Report> calm = Run(quiet, 1);
  REQUIRE(storm.ok());
  REQUIRE(calm.ok());
  CHECK(storm->registration_writes > 200);
  CHECK(calm->registration_writes == 0);
  CHECK(storm->throttled_ms > 60000);
  CHECK(storm->latency_p99_ms > 10 * calm->latency_p99_ms);
  CHECK(calm->latency_p99_ms < 1000);
  CHECK(calm->pending <= 1);
  CHECK(Reasons(*storm) == storm->pending);  // every pending pod says why
}

namespace {

// A burst under binpack: `pods` quarter-GPU pods 10 ms apart for `nodes`
// 8-GPU nodes, the client at 50 QPS, pods retried until bound (5 min).
Scenario LockBurst(int nodes, int pods) {
  Scenario s;
  for (int i = 0; i < nodes; ++i)
    s.nodes.push_back(NodeSpec{"n" + std::to_string(i), 8, 40960, "A100", 0, 0});
  for (int i = 0; i < pods; ++i)
    s.pods.push_back(PodSpec{"p" + std::to_string(i), 1, 250, "", 0, 0, i * 10, 0});
  s.api.qps = 50;
  s.api.burst = 100;
  s.engine.filter.node_policy = "binpack";
  s.end_ms = 5 * 60000;
  s.scheduler.retry_unschedulable = true;
  return s;
}

}  // namespace

TEST_CASE("sim: lock-free binding takes no lock; jittered backoff retries less than a fixed poll") {
  const Scenario s = LockBurst(2, 40);
  auto with = [&](engine::LockRetry retry, engine::BindMode mode) {
    Scenario v = s;
    v.engine.lock_retry = retry;
    v.engine.bind_mode = mode;
    Result<Report> r = Run(v, 2);
    REQUIRE(r.ok());
    CHECK(r->bound == 40);
    return *r;
  };
  const Report fixed = with(engine::LockRetry::kFixed, engine::BindMode::kNodeLock);
  const Report backoff = with(engine::LockRetry::kBackoff, engine::BindMode::kNodeLock);
  const Report free = with(engine::LockRetry::kOnce, engine::BindMode::kLockFree);
  CHECK(fixed.lock_contention > 0);
  CHECK(fixed.lock_retries > backoff.lock_retries);
  CHECK(free.lock_contention == 0);
  CHECK(free.api_calls.count("patch-node") == 0);
  CHECK(free.latency_p50_ms < backoff.latency_p50_ms);
}

TEST_CASE("sim: a burst under binpack spreads over unlocked nodes instead of failing binds") {
  const Scenario s = LockBurst(20, 60);
  auto with = [&](bool hami) {
    Scenario v = s;
    v.engine.avoid_locked_nodes = !hami;
    v.engine.pod_writes = hami ? engine::PodWrites::kHami : engine::PodWrites::kWithBinding;
    v.engine.lock_retry = hami ? engine::LockRetry::kOnce : engine::LockRetry::kRelease;
    Result<Report> r = Run(v, 3);
    REQUIRE(r.ok());
    CHECK(r->bound == 60);
    return *r;
  };
  const Report hami = with(true);
  const Report devshare = with(false);
  CHECK(hami.binds_failed > 20);
  CHECK(devshare.binds_failed * 4 < hami.binds_failed);
  CHECK(devshare.latency_p50_ms * 4 < hami.latency_p50_ms);
}

TEST_CASE("sim: the leader dies; a follower takes over after the lease, with no double writes") {
  Scenario s = Stream(10, 1000, 4 * 60000, 60000);
  s.scheduler.replicas = 3;
  s.faults = {Fault{Fault::Kind::kLeaderCrash, 60000, 60000, ""}};
  Result<Report> r = Run(s, 4);
  REQUIRE(r.ok());  // the invariants held: no placement before a pass, nothing allocated twice
  CHECK(r->duplicate_registration_writes == 0);
  CHECK(r->unavailable_ms >= 15000);  // the lease must expire first
  CHECK(r->unavailable_ms < 30000);
  CHECK(r->api_calls.at("lease") > 0);
  CHECK(r->bound + 5 >= r->pods);  // the last arrivals may still be binding
  Result<Report> hami = Run(Legacy(s, engine::RegistrationProtocol::kHami), 4);
  REQUIRE(hami.ok());
  CHECK(hami->registration_writes > 0);
  CHECK(hami->duplicate_registration_writes == 0);
}

TEST_CASE("sim: plugin faults, as each protocol notices them") {
  Scenario s = Stream(4, 3000, 10 * 60000, 60000);
  s.faults = {Fault{Fault::Kind::kPluginCrash, 120000, 120000, "node-1"},
              Fault{Fault::Kind::kPluginHang, 120000, 240000, "node-2"}};
  Result<Report> change_only = Run(s, 5);
  Result<Report> legacy = Run(Legacy(s, engine::RegistrationProtocol::kHami), 5);
  REQUIRE(change_only.ok());
  REQUIRE(legacy.ok());
  // The crash only: the kubelet reports no devices. A hung plugin whose
  // devices the kubelet still reports stays in under both: HAMi falls back
  // on the count when the handshake expires (spec §7).
  CHECK(change_only->nodes_dropped == 1);
  CHECK(legacy->nodes_dropped == 1);
  CHECK(legacy->registration_writes > 0);
  CHECK(change_only->registration_writes == 0);
  CHECK(change_only->api_calls.at("kubelet-patch-node") == 2);
}

TEST_CASE("sim: the API server answers 429 beyond its concurrency and the clients retry") {
  Scenario s = Stream(4, 100, 20000, 0);
  s.api.qps = 1000;
  s.api.burst = 1000;
  Result<Report> open = Run(s, 6);
  s.api.max_inflight = 1;
  Result<Report> r = Run(s, 6);
  REQUIRE(open.ok());
  REQUIRE(r.ok());
  CHECK(open->rejected_429 == 0);
  CHECK(r->rejected_429 > 0);
  CHECK(r->bound > 0);
  CHECK(r->bound < open->bound);  // the retries cost time
  CHECK(r->bound == r->pods - r->pending);
}

TEST_CASE("sim: scenarios that cannot run are refused with the reason") {
  Scenario s = Small(1);
  s.scheduler.retry_unschedulable = true;
  CHECK(Run(s, 0).status().message().find("needs an end time") != std::string_view::npos);
  s = Small(1);
  s.nodes.push_back(s.nodes.front());
  CHECK(Run(s, 0).status().message().find("named twice") != std::string_view::npos);
  s = Small(1);
  s.faults = {Fault{Fault::Kind::kPluginHang, 0, 0, "ghost"}};
  CHECK(Run(s, 0).status().message().find("unknown node 'ghost'") != std::string_view::npos);
  s = Small(1);
  s.pods[0].cpu_milli = -1;
  CHECK(Run(s, 0).status().message().find("pod p0 has a negative size") != std::string_view::npos);
}

TEST_CASE("sim: openb replay follows creation and deletion times") {
  constexpr std::string_view kNodes =
      "sn,cpu_milli,memory_mib,gpu,model\nn-0,64000,262144,2,P100\n";
  constexpr std::string_view kPods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
      "time,scheduled_time\n"
      "a,1000,1024,1,1000,,LS,Running,100,200,100\n"
      "b,1000,1024,2,1000,,LS,Running,150,400,150\n"
      "c,1000,1024,0,0,,BE,Running,300,300,300\n";
  Result<Scenario> s = OpenbReplay(kNodes, kPods);
  REQUIRE(s.ok());
  REQUIRE(s->pods.size() == 3);
  CHECK(s->pods[0].arrive_ms == 0);
  CHECK(s->pods[0].duration_ms == 100000);
  CHECK(s->pods[1].arrive_ms == 50000);
  CHECK(s->pods[2].duration_ms == 1);
  Result<Report> r = Run(*s, 0);
  REQUIRE(r.ok());
  CHECK(r->bound == 2);  // b asks both GPUs while a holds one: given up
  CHECK(r->pending_reasons.at("no device fits") == 1);
  CHECK(OpenbReplay(kNodes, "name,num_gpu,creation_time,deletion_time\nx,1,50,10\n")
            .status()
            .message()
            .find("deleted (10) before created (50)") != std::string_view::npos);
}

TEST_CASE(
    "sim: openb churn draws the inflated pods, with their lifetimes stretched to the demand") {
  constexpr std::string_view kNodes =
      "sn,cpu_milli,memory_mib,gpu,model\nn-0,64000,262144,4,P100\nn-1,64000,262144,4,P100\n";
  constexpr std::string_view kPods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
      "short,1000,1024,1,1000,100,102\n"
      "long,1000,1024,2,1000,100,110\n"
      "half,1000,1024,1,500,0,1\n";
  Result<Scenario> churn = OpenbChurn(kNodes, kPods, 0.9, 6, 3);
  Result<Scenario> inflate = OpenbScenario(kNodes, kPods, 6, 3);
  REQUIRE(churn.ok());
  REQUIRE(inflate.ok());
  // The same draw as inflating to 6 clusters' GPUs, one a second.
  REQUIRE(churn->pods.size() == inflate->pods.size());
  double gpu_ms = 0;
  const double span = 1000.0 * static_cast<double>(churn->pods.size());
  std::optional<double> stretch;
  for (std::size_t i = 0; i < churn->pods.size(); ++i) {
    const PodSpec& c = churn->pods[i];
    CHECK(c.name == inflate->pods[i].name);
    CHECK(c.arrive_ms == static_cast<std::int64_t>(i) * 1000);
    const std::string_view row = std::string_view(c.name).substr(0, c.name.find('-'));
    const double trace_ms = row == "short" ? 2000 : row == "long" ? 10000 : 1000;
    // One factor for every lifetime (each rounded to the millisecond).
    if (!stretch) stretch = static_cast<double>(c.duration_ms) / trace_ms;
    CHECK(std::abs(static_cast<double>(c.duration_ms) - *stretch * trace_ms) <= 10);
    const double gpus = c.gpus == 1 ? c.gpu_milli / 1000.0 : c.gpus;
    gpu_ms +=
        gpus * std::min(span - 1000.0 * static_cast<double>(i), static_cast<double>(c.duration_ms));
  }
  // The pods alive ask 0.9 of the cluster's 8 GPUs on average over the span.
  CHECK(gpu_ms / span / 8 == doctest::Approx(0.9).epsilon(1e-3));
  // Deterministic; departures free GPUs: more pods bound than without them.
  Result<Scenario> again = OpenbChurn(kNodes, kPods, 0.9, 6, 3);
  REQUIRE(again.ok());
  CHECK(again->pods.back().duration_ms == churn->pods.back().duration_ms);
  Result<Report> with = Run(*churn, 0);
  Result<Report> without = Run(*inflate, 0);
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  CHECK(with->bound > without->bound);
  // What it cannot do, said.
  CHECK(OpenbChurn(kNodes, kPods, 4, 6, 3).status().message().find("raise the turnover") !=
        std::string_view::npos);
  CHECK(OpenbChurn(kNodes, kPods, 0, 6, 3).status().code() == StatusCode::kInvalidArgument);
  CHECK(OpenbChurn(kNodes, "name,num_gpu\nx,1\n", 0.9, 6, 3).status().message() ==
        "pod list: row 1: no creation_time");
}

TEST_CASE("sim: the drift auditor finds and heals every injected kind of drift") {
  // Pods arrive every 2 s and run 2 min on 4 nodes of 8 GPUs: a busy
  // cluster. Watch events are missed for 2 min (deletes, bindings, lock
  // releases), a pod is deleted while its bind is in flight, and a node is
  // re-created under its name with its pods gone, each unheard.
  Scenario s = Stream(4, 2000, 20 * 60000, 120000);
  s.faults = {Fault{Fault::Kind::kPodDeletedInBind, 60000, 0, ""},
              Fault{Fault::Kind::kMissedEvents, 180000, 120000, ""},
              Fault{Fault::Kind::kNodeReplaced, 480000, 0, "node-2"}};
  Scenario audited = s;
  audited.audit_period_ms = 60000;
  audited.engine.audit_grace_ms = 30000;
  Result<Report> r = Run(audited, 9);
  REQUIRE(r.ok());  // no invariant broken: nothing over-allocated, nothing bound twice
  CHECK(r->drift_injected == std::map<std::string, std::uint64_t>{{"missed-events", 1},
                                                                  {"node-replaced", 1},
                                                                  {"pod-deleted-in-bind", 1}});
  // The missed deletes leave phantom pods, the missed bindings allocations
  // the cache does not count as the pods say, the missed lock releases
  // stale nodes; the re-created node is another node.
  CHECK(r->drift_found.at("pod-gone") > 0);
  CHECK(r->drift_found.at("allocation-missed") > 0);
  CHECK(r->drift_found.at("node-replaced") == 1);
  for (const auto& found : r->drift_found) {
    INFO(found.first);  // clang 14 cannot capture a structured binding in INFO's lambda
    CHECK(r->drift_healed.at(found.first) == found.second);
  }
  CHECK(r->cache_mismatched_devices == 0);  // healed: the cache is the cluster again
  Result<Report> unaudited = Run(s, 9);
  REQUIRE(unaudited.ok());
  CHECK(unaudited->drift_found.empty());
  CHECK(unaudited->cache_mismatched_devices > 0);  // without the auditor the drift stays
}

TEST_CASE("sim: audits of a cluster without faults find nothing") {
  Scenario s = Stream(4, 2000, 10 * 60000, 120000);
  s.audit_period_ms = 30000;
  s.engine.audit_grace_ms = 10000;
  Result<Report> r = Run(s, 10);
  REQUIRE(r.ok());
  CHECK(r->drift_found.empty());
  CHECK(r->cache_mismatched_devices == 0);
}

TEST_CASE("sim: DRA mode places claims by policy, the same for the same seed") {
  // Two nodes of two T4s; shares of 60 % and 40 %, then whole GPUs. binpack
  // and fgd pair the shares on one GPU and leave the rest whole.
  Scenario s;
  s.nodes = {NodeSpec{"n1", 2, 16384, "T4", 8000, 65536},
             NodeSpec{"n2", 2, 16384, "T4", 8000, 65536}};
  const std::int32_t shares[] = {600, 400, 600, 400};
  for (int i = 0; i < 4; ++i)
    s.pods.push_back(
        PodSpec{"share" + std::to_string(i), 1, shares[i], "", 1000, 1024, 1000 * i, 0});
  for (int i = 0; i < 3; ++i)
    s.pods.push_back(
        PodSpec{"whole" + std::to_string(i), 1, 1000, "T4", 1000, 1024, 5000 + 1000 * i, 0});
  s.dra.enabled = true;
  std::map<std::string, std::uint64_t> bound;
  for (const auto& [name, policy] : dra::kPolicyNames) {
    s.dra.policy = policy;
    Result<Report> r = Run(s, 3);
    REQUIRE(r.ok());
    Result<Report> again = Run(s, 3);
    REQUIRE(again.ok());
    CHECK(*r == *again);
    CHECK(r->pods == 7);
    CHECK(r->bound + r->pending == 7);
    CHECK(r->gpu_capacity == 4);
    bound[std::string(name)] = r->bound;
  }
  CHECK(bound.at("binpack") == 6);  // two GPUs shared 60/40, two whole pods
  CHECK(bound.at("fgd") == 6);
  CHECK(bound.at("spread") == 4);  // every GPU opened by a share: no whole GPU left
}

TEST_CASE("sim: DRA mode models no faults, and a claim's model selector counts") {
  Scenario s;
  s.nodes = {NodeSpec{"n1", 1, 16384, "T4", 0, 0}, NodeSpec{"n2", 1, 24576, "A10", 0, 0}};
  s.pods = {PodSpec{"a10-only", 1, 1000, "A10", 0, 0, 0, 0},
            PodSpec{"a10-again", 1, 500, "A10", 0, 0, 1000, 0}};
  s.dra.enabled = true;
  s.dra.policy = dra::Policy::kBinpack;
  Result<Report> r = Run(s, 1);
  REQUIRE(r.ok());
  CHECK(r->bound == 1);
  CHECK(r->pending_reasons.at("no node fits") == 1);
  s.faults.push_back(Fault{Fault::Kind::kLeaderCrash, 10, 10, ""});
  CHECK(Run(s, 1).status().message() == "scenario: DRA mode models no faults");
}

namespace {
// Two teams on 2 nodes of 4 T4s: team-a asks 8 half GPUs (8192 MiB each)
// under a gpumem quota of 4 of them; team-b, later, 4 whole GPUs under a
// quota that covers them. kube-scheduler retries until the end.
Scenario Teams() {
  Scenario s;
  s.nodes = {NodeSpec{"n1", 4, 16384, "T4", 0, 0}, NodeSpec{"n2", 4, 16384, "T4", 0, 0}};
  for (int i = 0; i < 8; ++i) {
    PodSpec p{"a" + std::to_string(i), 1, 500, "", 0, 0, 1000 * i, 0};
    p.pod_namespace = "team-a";
    s.pods.push_back(p);
  }
  for (int i = 0; i < 4; ++i) {
    PodSpec p{"b" + std::to_string(i), 1, 1000, "", 0, 0, 20000 + 1000 * i, 0};
    p.pod_namespace = "team-b";
    s.pods.push_back(p);
  }
  s.quotas = {ResourceQuota{"team-a", "gpu", "", "", {}},
              ResourceQuota{"team-b", "gpu", "", "", {}}};
  s.quotas[0].hard.Set("limits.nvidia.com/gpumem", "32768");
  s.quotas[1].hard.Set("limits.nvidia.com/gpumem", "65536");
  s.quotas[1].hard.Set("limits.nvidia.com/gpucores", "400");
  s.scheduler.retry_unschedulable = true;
  s.end_ms = 60000;
  return s;
}

const QuotaReport& Row(const Report& r, std::string_view ns, std::string_view resource) {
  auto it = std::find_if(r.quotas.begin(), r.quotas.end(), [&](const QuotaReport& q) {
    return q.pod_namespace == ns && q.resource == resource;
  });
  REQUIRE(it != r.quotas.end());
  return *it;
}
}  // namespace

TEST_CASE("sim: no namespace holds more than its quota, and the other team still binds") {
  for (int replicas : {1, 3}) {
    CAPTURE(replicas);
    Scenario s = Teams();
    s.scheduler.replicas = replicas;
    s.audit_period_ms = 10000;  // the engines' audits find no quota drift
    Result<Report> r = Run(s, 5);
    REQUIRE(r.ok());
    REQUIRE(r->quotas.size() == 3);  // team-a's gpumem, team-b's gpucores and gpumem
    for (const QuotaReport& q : r->quotas) {
      CAPTURE(q.pod_namespace);
      CHECK(q.limit >= 0);
      CHECK(q.peak_used <= q.limit);
    }
    const QuotaReport& a = Row(*r, "team-a", "nvidia.com/gpumem");
    CHECK(a.peak_used == 32768);  // the quota is used up, not exceeded
    CHECK(a.bound == 4);
    CHECK(a.pending == 4);
    CHECK(a.pending_quota == 4);
    const QuotaReport& b = Row(*r, "team-b", "nvidia.com/gpumem");
    CHECK(b.bound == 4);
    CHECK(b.pending == 0);
    CHECK(b.peak_used == 65536);
    CHECK(Row(*r, "team-b", "nvidia.com/gpucores").peak_used == 400);
    CHECK(r->pending_reasons.at(std::string(sim::internal::kQuotaReason)) == 4);
    CHECK(r->quota_warnings.empty());
    CHECK(r->drift_found.empty());
  }
  // Without the quota, team-a takes all it asks.
  Scenario s = Teams();
  s.quotas.erase(s.quotas.begin());
  Result<Report> r = Run(s, 5);
  REQUIRE(r.ok());
  CHECK(r->bound == 12);
  const QuotaReport& a = Row(*r, "team-a", "");  // a namespace without a device quota
  CHECK(a.limit == -1);
  CHECK(a.bound == 8);
}

TEST_CASE("sim: a quota limit that is not a whole number is reported and limits nothing") {
  Scenario s = Teams();
  s.quotas[0].hard.Set("limits.nvidia.com/gpumem", "7.5");
  s.quotas[0].hard.Set("limits.nvidia.com/gpucores", "300");
  Result<Report> r = Run(s, 5);
  REQUIRE(r.ok());
  REQUIRE(r->quota_warnings.size() == 1);
  CHECK(r->quota_warnings[0].find("team-a/gpu") != std::string::npos);
  CHECK(r->quota_warnings[0].find("limits.nvidia.com/gpumem is \"7.5\"") != std::string::npos);
  // The cores limit still holds: 300 % of a GPU is 6 half GPUs.
  const QuotaReport& cores = Row(*r, "team-a", "nvidia.com/gpucores");
  CHECK(cores.bound == 6);
  CHECK(cores.peak_used == 300);
  CHECK(std::none_of(r->quotas.begin(), r->quotas.end(), [](const QuotaReport& q) {
    return q.pod_namespace == "team-a" && q.resource == "nvidia.com/gpumem";
  }));
}

TEST_CASE("sim: quotas without a namespace, named twice or in DRA mode are refused") {
  Scenario s = Teams();
  s.quotas[0].quota_namespace.clear();
  CHECK(Run(s, 0).status().message() == "scenario: a quota has no namespace or no name");
  s = Teams();
  s.quotas[1].quota_namespace = "team-a";
  CHECK(Run(s, 0).status().message() == "scenario: quota team-a/gpu is named twice");
  s = Teams();
  s.dra.enabled = true;
  CHECK(Run(s, 0).status().message() == "scenario: DRA mode models no quotas");
}

namespace {
// One T4 held by a low-priority pod from the start, and a high-priority pod
// asking a quarter of it 10 s in.
Scenario PreemptionScenario() {
  Scenario s;
  s.nodes = {NodeSpec{"n1", 1, 16384, "T4", 0, 0}};
  PodSpec low{"low", 1, 1000, "", 0, 0, 0, 0};
  low.labels.Set("app", "train");
  PodSpec high{"high", 1, 250, "", 0, 0, 10000, 0};
  high.priority = 100;
  s.pods = {low, high};
  s.scheduler.retry_unschedulable = true;
  s.end_ms = 120000;
  return s;
}
}  // namespace

TEST_CASE("sim preemption: the victim keeps its GPU for its grace period, then the pod binds") {
  Result<Report> r = Run(PreemptionScenario(), 1);
  REQUIRE(r.ok());
  const PreemptionReport& p = r->preemption;
  CHECK(r->bound == 2);
  CHECK(r->pending == 0);
  CHECK(p.high_priority_pods == 1);
  CHECK(p.high_priority_bound == 1);
  CHECK(p.preemptions == 1);
  CHECK(p.victims == 1);
  CHECK(p.victims_terminating == 0);
  CHECK(p.evicted_not_helped == 0);
  CHECK(p.evictions_refused == 0);
  CHECK(p.memory_freed_beyond_mib == 16384 - 4096);  // a whole T4 freed for a quarter of one
  // Not before the 30 s of grace; then kube-scheduler's backoff (at most 10 s).
  CHECK(p.high_priority_p50_ms >= 30000);
  CHECK(p.high_priority_p50_ms < 42000);
  // The victim ran from its binding (its writes' latency in) to its
  // deletion, 30 s after its eviction (10 s in, and the API's latency):
  // about 40 GPU-seconds.
  CHECK(p.work_lost_gpu_seconds > 39.5);
  CHECK(p.work_lost_gpu_seconds < 40.5);
  CHECK(r->api_calls.at("eviction") == 1);
  CHECK(r->api_calls.at("patch-pod-status") == 1);
  // A shorter grace period, a shorter wait.
  Scenario s = PreemptionScenario();
  s.pods[0].termination_grace_seconds = 5;
  Result<Report> quick = Run(s, 1);
  REQUIRE(quick.ok());
  CHECK(quick->preemption.high_priority_p50_ms >= 5000);
  CHECK(quick->preemption.high_priority_p50_ms < 17000);
  CHECK(quick->preemption.work_lost_gpu_seconds < 16);
}

TEST_CASE("sim preemption: a budget that allows no disruption protects the victim") {
  Scenario s = PreemptionScenario();
  DisruptionBudget budget;
  budget.name = "train";
  budget.selector.match_labels.Set("app", "train");
  budget.min_available = "1";
  s.budgets = {budget};
  Result<Report> r = Run(s, 1);
  REQUIRE(r.ok());
  CHECK(r->preemption.preemptions == 0);
  CHECK(r->preemption.victims == 0);
  CHECK(r->preemption.high_priority_bound == 0);
  CHECK(r->pending == 1);
  // maxUnavailable 1: the budget allows it.
  s.budgets[0].min_available.clear();
  s.budgets[0].max_unavailable = "1";
  Result<Report> allowed = Run(s, 1);
  REQUIRE(allowed.ok());
  CHECK(allowed->preemption.victims == 1);
  CHECK(allowed->preemption.high_priority_bound == 1);
}

TEST_CASE("sim preemption: no victim of equal priority, none for Never, none with preemption off") {
  Scenario equal = PreemptionScenario();
  equal.pods[0].priority = 100;
  Scenario never = PreemptionScenario();
  never.pods[1].preemption_policy = "Never";
  Scenario off = PreemptionScenario();
  off.engine.preemption = false;
  for (const Scenario& s : {equal, never, off}) {
    Result<Report> r = Run(s, 1);
    REQUIRE(r.ok());
    CHECK(r->preemption.preemptions == 0);
    CHECK(r->pending == 1);
    CHECK(r->api_calls.count("eviction") == 0);
  }
}

TEST_CASE("sim preemption: the queue takes the higher priority first") {
  // Both arrive at once: the high-priority pod is scheduled first and takes
  // the GPU; the low one waits, and nothing is evicted.
  Scenario s = PreemptionScenario();
  s.pods[1].arrive_ms = 0;
  s.pods[1].gpu_milli = 1000;
  Result<Report> r = Run(s, 1);
  REQUIRE(r.ok());
  CHECK(r->preemption.high_priority_bound == 1);
  CHECK(r->preemption.preemptions == 0);
  CHECK(r->pending == 1);
  CHECK(r->pending_reasons.at("no device fits") == 1);
}

TEST_CASE("sim preemption: refused scenarios") {
  Scenario s = PreemptionScenario();
  s.budgets = {DisruptionBudget{}};
  CHECK(Run(s, 1).status().message() == "scenario: a budget has no name");
  s.budgets[0].name = "b";
  s.budgets[0].min_available = "1";
  s.budgets.push_back(s.budgets[0]);
  CHECK(Run(s, 1).status().message() == "scenario: budget sim/b is named twice");
  s = PreemptionScenario();
  s.pods[0].termination_grace_seconds = -1;
  CHECK(Run(s, 1).status().message() == "scenario: pod low has a negative grace period");
  s = PreemptionScenario();
  s.dra.enabled = true;
  s.scheduler.retry_unschedulable = false;
  CHECK(Run(s, 1).status().message() == "scenario: DRA mode models no priorities or budgets");
}
