// Filter, the extender's /filter path and snapshot maintenance on synthetic
// clusters: N nodes x 8 GPUs, about half of the devices in use, a mix of
// request shapes.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "devshare/engine/engine.hpp"
#include "devshare/filter.hpp"
#include "devshare/kube/extender.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/preemption.hpp"
#include "devshare/snapshot.hpp"

namespace {

using namespace devshare;

Node MakeNode(int n) {
  Node node;
  node.name = fmt::format("node-{:05}", n);
  std::vector<Device> devices;
  for (int g = 0; g < 8; ++g) {
    Device d;
    d.id = fmt::format("GPU-{:05}-{}-7c3b1f52-0b1e-4a49-9e1f", n, g);
    d.index = static_cast<std::uint32_t>(g);
    d.count = 10;
    d.devmem = 40960;
    d.devcore = 100;
    d.type = "NVIDIA A100-SXM4-40GB";
    d.numa = g / 4;
    d.mode = "hami-core";
    d.health = true;
    devices.push_back(d);
  }
  node.annotations.Set("hami.io/node-nvidia-register",
                       EncodeNodeDevices(devices, RegisterFormat::kJson));
  node.allocatable.Set("nvidia.com/gpu", "80");  // the device plugin's count: 8 x 10 slots
  return node;
}

Pod MakeRequest(const std::string& name, int gpus, int mem, int cores, int pct) {
  Pod pod;
  pod.name = name;
  pod.pod_namespace = "bench";
  pod.uid = "uid-" + name;
  Container c;
  c.name = "main";
  c.limits.Set("nvidia.com/gpu", std::to_string(gpus));
  if (mem > 0) c.limits.Set("nvidia.com/gpumem", std::to_string(mem));
  if (cores > 0) c.limits.Set("nvidia.com/gpucores", std::to_string(cores));
  if (pct > 0) c.limits.Set("nvidia.com/gpumem-percentage", std::to_string(pct));
  pod.containers.push_back(c);
  return pod;
}

// The objects of a cluster of `nodes` nodes where a share `busy` (in 1/8)
// of the GPUs carry a pod.
struct ClusterObjects {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
};

ClusterObjects MakeObjects(int nodes, unsigned busy = 4) {
  ClusterObjects c;
  std::mt19937 rng(7);
  for (int n = 0; n < nodes; ++n) {
    c.nodes.push_back(MakeNode(n));
    for (int g = 0; g < 8; ++g) {
      if (rng() % 8 >= busy) continue;
      const int mem = 4096 * static_cast<int>(1 + rng() % 6);
      const int cores = 10 * static_cast<int>(1 + rng() % 6);
      Pod pod = MakeRequest(fmt::format("load-{}-{}", n, g), 1, mem, cores, 0);
      pod.annotations.Set("hami.io/vgpu-node", c.nodes.back().name);
      pod.node_name = c.nodes.back().name;  // bound: priority 0, a preemption's possible victim
      pod.annotations.Set(
          "hami.io/vgpu-devices-allocated",
          fmt::format("GPU-{:05}-{}-7c3b1f52-0b1e-4a49-9e1f,NVIDIA,{},{}:;", n, g, mem, cores));
      c.pods.push_back(std::move(pod));
    }
  }
  return c;
}

ClusterSnapshot MakeCluster(int nodes, unsigned busy = 4) {
  ClusterSnapshot s;
  ClusterObjects c = MakeObjects(nodes, busy);
  auto must = [](const Status& status) {  // the generated objects always decode
    if (!status.ok()) {
      std::fprintf(stderr, "filter_bench: %s\n", status.ToString().c_str());
      std::abort();
    }
  };
  for (const Node& node : c.nodes) must(s.AddNode(node));
  for (const Pod& pod : c.pods) must(s.AddPod(pod));
  return s;
}

std::vector<Pod> MixedRequests() {
  return {
      MakeRequest("a", 1, 4096, 20, 0), MakeRequest("b", 1, 0, 30, 50),
      MakeRequest("c", 2, 8192, 30, 0), MakeRequest("d", 1, 16384, 0, 0),
      MakeRequest("e", 4, 0, 0, 0),     MakeRequest("f", 1, 2048, 10, 0),
  };
}

// Pods of two GPU containers each: every node evaluated fits one container
// after the other, the second on the device order the first one's sort left.
std::vector<Pod> TwoContainerRequests() {
  std::vector<Pod> pods = MixedRequests();
  for (Pod& pod : pods) {
    Container second = pod.containers.front();
    second.name = "second";
    pod.containers.push_back(std::move(second));
  }
  return pods;
}

// `keep_measure`: the snapshot keeps fgd's measure of each node for the
// default workload (SetFragmentationWorkload), as the engine's does.
void BM_Filter(benchmark::State& state, int nodes, const char* node_policy, const char* gpu_policy,
               unsigned busy = 4, std::vector<Pod> (*requests)() = MixedRequests,
               bool keep_measure = false) {
  ClusterSnapshot snapshot = MakeCluster(nodes, busy);
  if (keep_measure && !snapshot.SetFragmentationWorkload({}).ok()) std::abort();
  const std::vector<Pod> pods = requests();
  FilterOptions options;
  options.node_policy = node_policy;
  options.gpu_policy = gpu_policy;
  std::size_t i = 0;
  for (auto _ : state) {
    Result<FilterResult> r = Filter(snapshot, pods[i++ % pods.size()], {}, 1787300439, options);
    benchmark::DoNotOptimize(r);
  }
  state.counters["nodes"] = nodes;
  state.counters["ns_per_node"] =
      benchmark::Counter(static_cast<double>(nodes) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Filter_100Nodes(benchmark::State& s) { BM_Filter(s, 100, "binpack", "spread"); }
void BM_Filter_1000Nodes(benchmark::State& s) { BM_Filter(s, 1000, "binpack", "spread"); }
void BM_Filter_5000Nodes(benchmark::State& s) { BM_Filter(s, 5000, "binpack", "spread"); }
void BM_Filter_10000Nodes(benchmark::State& s) { BM_Filter(s, 10000, "binpack", "spread"); }
void BM_Filter_5000NodesFgd(benchmark::State& s) { BM_Filter(s, 5000, "fgd", "fgd"); }
void BM_Filter_5000NodesFgdKept(benchmark::State& s) {
  BM_Filter(s, 5000, "fgd", "fgd", 4, MixedRequests, /*keep_measure=*/true);
}
// Every GPU in use: most requests fail on most nodes, so every rejection's
// reasons are built.
void BM_Filter_5000NodesFull(benchmark::State& s) { BM_Filter(s, 5000, "binpack", "spread", 8); }
void BM_Filter_5000NodesTwoContainers(benchmark::State& s) {
  BM_Filter(s, 5000, "binpack", "spread", 4, TwoContainerRequests);
}
BENCHMARK(BM_Filter_100Nodes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter_1000Nodes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter_5000Nodes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter_10000Nodes)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter_5000NodesFgd)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter_5000NodesFgdKept)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter_5000NodesFull)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter_5000NodesTwoContainers)->Unit(benchmark::kMicrosecond);

// The cluster's fragmentation for the default workload (what the simulator
// measures at every 10 % of demand): 5000 nodes x 8 GPUs, half in use.
void BM_Fragmentation_5000Nodes(benchmark::State& state) {
  const ClusterSnapshot snapshot = MakeCluster(5000);
  for (auto _ : state) {
    Result<ClusterFragmentation> f = MeasureFragmentation(snapshot);
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(BM_Fragmentation_5000Nodes)->Unit(benchmark::kMicrosecond);

// PlanPreemption for a pod of higher priority asking a whole GPU on a
// cluster where every GPU carries a pod of priority 0: on every node (or,
// `limited`, on as many as the engine asks: max(100, 10 %), as
// kube-scheduler) the victims are chosen (8 pods set aside, given back one
// by one) and the nodes ranked.
void BM_Preempt(benchmark::State& state, bool limited) {
  const int nodes = static_cast<int>(state.range(0));
  ClusterObjects objects = MakeObjects(nodes, 8);
  ClusterSnapshot snapshot = MakeCluster(nodes, 8);
  Pod urgent = MakeRequest("urgent", 1, 0, 0, 100);
  urgent.priority = 1000;
  for (auto _ : state) {
    Result<PreemptionPlan> plan = PlanPreemption(
        snapshot, urgent, objects.pods, {}, {}, 1787300439, {},
        limited ? std::max<std::size_t>(100, static_cast<std::size_t>(nodes) / 10) : 0);
    if (!plan.ok() || plan->chosen() == nullptr) std::abort();
    benchmark::DoNotOptimize(plan);
  }
  state.counters["nodes"] = nodes;
}
void BM_Preempt_FullNodes(benchmark::State& s) { BM_Preempt(s, false); }
void BM_Preempt_FullNodesLimited(benchmark::State& s) { BM_Preempt(s, true); }
BENCHMARK(BM_Preempt_FullNodes)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Preempt_FullNodesLimited)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);
// The same on a snapshot that keeps each node's measure: O(nodes).
void BM_Fragmentation_5000NodesKept(benchmark::State& state) {
  ClusterSnapshot snapshot = MakeCluster(5000);
  if (!snapshot.SetFragmentationWorkload({}).ok()) std::abort();
  for (auto _ : state) {
    Result<ClusterFragmentation> f = MeasureFragmentation(snapshot);
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(BM_Fragmentation_5000NodesKept)->Unit(benchmark::kMicrosecond);

// The extender's /filter without the network (what `make load` drives over
// HTTP): the ExtenderArgs of a quarter-GPU pod with 5,000 NodeNames decoded,
// the engine's Filter, and the ExtenderFilterResult encoded. With the
// engine's default pod writes (PodWrites::kWithBinding) Filter answers from
// memory and the reply keeps the chosen node alone; with HAMi's
// (PodWrites::kHami) it PATCHes the pod first (reported done here) and the
// reply also lists the 4,999 other nodes as FailedNodes.
void BM_Extender_Filter(benchmark::State& state, engine::PodWrites pod_writes) {
  engine::EngineOptions options;
  options.pod_writes = pod_writes;
  engine::Engine engine{options};
  std::vector<engine::Command> out;
  ClusterObjects c = MakeObjects(5000);
  for (const Node& node : c.nodes) engine.NodeObserved(node, 0, out);
  for (const Pod& pod : c.pods) engine.PodObserved(pod);
  engine.Tick(0, out);
  if (!engine.Ready(0)) return state.SkipWithError("the engine is not ready");
  std::string names;
  for (const Node& node : c.nodes)
    names += fmt::format("{}\"{}\"", names.empty() ? "" : ",", node.name);
  const std::string body = fmt::format(
      R"({{"Pod":{{"metadata":{{"name":"load","namespace":"default","uid":"load-uid"}},"spec":{{"containers":)"
      R"([{{"name":"c","resources":{{"limits":{{"nvidia.com/gpu":"1","nvidia.com/gpumem-percentage":"25",)"
      R"("nvidia.com/gpucores":"25"}}}}}}]}}}},"Nodes":null,"NodeNames":[{}]}})",
      names);
  std::uint64_t request = 0;
  std::size_t reply_bytes = 0;
  for (auto _ : state) {
    Result<kube::ExtenderArgs> args = kube::DecodeExtenderArgs(body);
    if (!args.ok()) return state.SkipWithError(std::string(args.status().message()).c_str());
    out.clear();
    engine.Filter(++request, args->pod, args->nodes, 0, out);
    if (pod_writes == engine::PodWrites::kHami) {
      const auto* patch = out.empty() ? nullptr : std::get_if<engine::PatchPod>(&out.front());
      if (patch == nullptr) return state.SkipWithError("Filter wrote no pod PATCH");
      const std::uint64_t id = patch->id;
      out.clear();
      engine.ApiResult(id, true, 0, out);
    }
    const auto* reply = out.empty() ? nullptr : std::get_if<engine::FilterReply>(&out.front());
    if (reply == nullptr) return state.SkipWithError("Filter gave no reply");
    if (!reply->error.empty()) return state.SkipWithError(reply->error.c_str());
    if (reply->nodes.size() != 1) return state.SkipWithError("the reply keeps no single node");
    const std::string encoded = kube::EncodeFilterResult(*args, *reply);
    reply_bytes = encoded.size();
    benchmark::DoNotOptimize(encoded);
  }
  state.counters["request_kB"] = static_cast<double>(body.size()) / 1000;
  state.counters["reply_kB"] = static_cast<double>(reply_bytes) / 1000;
}
void BM_Extender_Filter5000Nodes(benchmark::State& s) {
  BM_Extender_Filter(s, engine::PodWrites::kWithBinding);
}
void BM_Extender_Filter5000NodesHamiWrites(benchmark::State& s) {
  BM_Extender_Filter(s, engine::PodWrites::kHami);
}
BENCHMARK(BM_Extender_Filter5000Nodes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Extender_Filter5000NodesHamiWrites)->Unit(benchmark::kMillisecond);

// Adding and then removing one pod (a 2-GPU allocation) on a 1000-node cluster.
void BM_Snapshot_AddRemovePod(benchmark::State& state) {
  ClusterSnapshot snapshot = MakeCluster(1000);
  Pod pod = MakeRequest("churn", 2, 4096, 20, 0);
  pod.annotations.Set("hami.io/vgpu-node", "node-00500");
  pod.annotations.Set("hami.io/vgpu-devices-allocated",
                      "GPU-00500-0-7c3b1f52-0b1e-4a49-9e1f,NVIDIA,4096,20:"
                      "GPU-00500-1-7c3b1f52-0b1e-4a49-9e1f,NVIDIA,4096,20:;");
  for (auto _ : state) {
    Status added = snapshot.AddPod(pod);
    bool removed = snapshot.RemovePod(pod.uid);
    benchmark::DoNotOptimize(added);
    benchmark::DoNotOptimize(removed);
  }
}
BENCHMARK(BM_Snapshot_AddRemovePod);

}  // namespace
BENCHMARK_MAIN();
