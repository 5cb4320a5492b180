// DRA on a synthetic cluster: N nodes x 8 GPUs published as HAMi's DRA
// driver publishes them (consumable cores and memory), about half of the
// GPUs shared by allocated claims. One node's allocation from the
// snapshot's pools against gathering them from the cluster's slice list
// on each call (as dra::Allocate over a slice list does); a placement over
// every node by policy, with Score's memory cold and warm; replacing one
// node's slice; the engine serving DRA, a gated pod at a time: judged,
// placed by fgd, its claim written and its gate removed; and the engine's
// cost per node heartbeat, and per room given on one node, while pods that
// fit nowhere are held.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <boost/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "devshare/dra_allocate.hpp"
#include "devshare/dra_json.hpp"
#include "devshare/dra_place.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/snapshot.hpp"

namespace {

using devshare::ClusterSnapshot;
using devshare::Node;
using devshare::Result;
namespace dra = devshare::dra;
using namespace devshare::dra;

constexpr std::string_view kDriver = "hami-core-gpu.project-hami.io";
constexpr std::int64_t kMi = 1024 * 1024;

Quantity Whole(std::int64_t units) { return Quantity{units * 1000}; }

std::string NodeName(int n) { return fmt::format("node-{:05}", n); }

ResourceSlice Slice(int n) {
  ResourceSlice slice;
  slice.name = NodeName(n) + "-gpus";
  slice.driver = std::string(kDriver);
  slice.pool = Pool{NodeName(n), 1, 1};
  slice.node_scope.node_name = NodeName(n);
  for (int g = 0; g < 8; ++g) {
    dra::Device& d = slice.devices.emplace_back();
    d.name = fmt::format("hami-gpu-{}", g);
    d.attributes["type"] = std::string("hami-gpu");
    d.attributes["minor"] = std::int64_t{g};
    d.attributes["productName"] = std::string(g % 2 == 0 ? "A100" : "A10");
    for (const auto& [name, value, step] :
         {std::tuple{"cores", Whole(100), Whole(1)}, {"memory", Whole(40960 * kMi), Whole(kMi)}}) {
      d.capacity[name] =
          Capacity{value, CapacityRequestPolicy{value, {}, CapacityRange{step, value, step}}};
    }
    d.allow_multiple_allocations = true;
  }
  return slice;
}

ResourceClaim ShareClaim(const std::string& name, std::int64_t cores, bool a100_only) {
  ResourceClaim claim;
  claim.claim_namespace = "bench";
  claim.name = name;
  claim.uid = "uid-" + name;
  DeviceRequest& r = claim.spec.requests.emplace_back();
  r.name = "gpu";
  DeviceSelection& s = r.exactly.emplace();
  s.device_class_name = "hami-gpu";
  s.capacity_requests = {{"cores", Whole(cores)}, {"memory", Whole(cores * 409 * kMi)}};
  if (a100_only)
    s.selectors.push_back(
        fmt::format("device.attributes[\"{}\"].productName == \"A100\"", kDriver));
  return claim;
}

struct Cluster {
  ClusterSnapshot snapshot;
  std::vector<ResourceSlice> slices;
  std::vector<Node> nodes;
  DeviceClasses classes;
};

// `nodes` nodes; claims of 10-90 cores placed first fit until about half
// of the GPUs hold one.
const Cluster& MakeCluster(int nodes) {
  static std::map<int, Cluster> made;
  auto [it, fresh] = made.try_emplace(nodes);
  Cluster& c = it->second;
  if (!fresh) return c;
  DeviceClass gpu{"hami-gpu", "", {fmt::format("device.driver == \"{}\"", kDriver)}, std::nullopt};
  c.classes[gpu.name] = gpu;
  c.snapshot.AddDeviceClass(gpu);
  for (int n = 0; n < nodes; ++n) {
    Node node;
    node.name = NodeName(n);
    node.allocatable.Set("cpu", "64");
    node.allocatable.Set("memory", "512Gi");
    c.nodes.push_back(node);
    (void)c.snapshot.AddNode(node);
    c.slices.push_back(Slice(n));
    c.snapshot.AddResourceSlice(c.slices.back());
  }
  std::mt19937_64 rng(1);
  for (int i = 0; i < nodes * 4; ++i) {
    ResourceClaim claim =
        ShareClaim(fmt::format("held-{}", i), 10 + static_cast<int>(rng() % 81), false);
    auto a = c.snapshot.AllocateClaims({claim}, NodeName(static_cast<int>(rng() % nodes)));
    if (!a.ok() || !a->has_value()) continue;
    claim.allocation = (**a)[0];
    c.snapshot.AddResourceClaim(std::move(claim));
  }
  return c;
}

// One node's allocation per iteration, the nodes in turn, by `allocate`.
template <typename AllocateOn>
void AllocateEach(benchmark::State& state, AllocateOn allocate) {
  const Cluster& c = MakeCluster(static_cast<int>(state.range(0)));
  const std::vector<ResourceClaim> claims = {ShareClaim("asking", 30, true)};
  SelectorCache selectors;
  AllocatorOptions options;
  options.selector_cache = &selectors;
  std::size_t n = 0;
  for (auto _ : state) {
    auto a = allocate(c, claims, n, options);
    benchmark::DoNotOptimize(a);
    n = (n + 1) % c.nodes.size();
  }
}

void BM_DraAllocate_FromSnapshot(benchmark::State& state) {
  AllocateEach(state, [](const Cluster& c, const std::vector<ResourceClaim>& claims, std::size_t n,
                         const AllocatorOptions& options) {
    return c.snapshot.AllocateClaims(claims, c.nodes[n].name, options);
  });
}
BENCHMARK(BM_DraAllocate_FromSnapshot)->Arg(1000);

void BM_DraAllocate_FromSliceList(benchmark::State& state) {
  AllocateEach(state, [](const Cluster& c, const std::vector<ResourceClaim>& claims, std::size_t n,
                         const AllocatorOptions& options) {
    return Allocate(claims, c.nodes[n], c.slices, c.classes, c.snapshot.dra_allocated(), options);
  });
}
BENCHMARK(BM_DraAllocate_FromSliceList)->Arg(1000);

// A placement over every node. Cold: a new Placer each time (every node
// allocated); warm: the same Placer, so nodes unchanged since answer from
// Score's memory.
void Place(benchmark::State& state, Policy policy, bool warm) {
  const Cluster& c = MakeCluster(static_cast<int>(state.range(0)));
  const std::vector<ResourceClaim> claims = {ShareClaim("asking", 30, true)};
  Result<Placer> kept = Placer::Make(PlacerOptions{policy, {}, false});
  for (auto _ : state) {
    if (!warm) kept = Placer::Make(PlacerOptions{policy, {}, false});
    Result<Placement> p = kept->Place(c.snapshot, claims, PodResources{4000, 16 * 1024 * kMi});
    benchmark::DoNotOptimize(p);
  }
}
void BM_DraPlace_BinpackCold(benchmark::State& state) { Place(state, Policy::kBinpack, false); }
void BM_DraPlace_FgdCold(benchmark::State& state) { Place(state, Policy::kFgd, false); }
void BM_DraPlace_FgdWarm(benchmark::State& state) { Place(state, Policy::kFgd, true); }
BENCHMARK(BM_DraPlace_BinpackCold)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DraPlace_FgdCold)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DraPlace_FgdWarm)->Arg(1000)->Unit(benchmark::kMillisecond);

// A watch event's ResourceSlice (8 GPUs), already parsed: serialised again
// and decoded from the text, as the watch did, against decoded from the
// parsed object.
void DecodeWatchedSlice(benchmark::State& state, bool reserialize) {
  const boost::json::object object = boost::json::parse(EncodeResourceSlice(Slice(0))).as_object();
  for (auto _ : state) {
    Result<ResourceSlice> slice = reserialize ? DecodeResourceSlice(boost::json::serialize(object))
                                              : DecodeResourceSlice(object);
    if (!slice.ok()) state.SkipWithError("the slice did not decode");
    benchmark::DoNotOptimize(slice);
  }
}
void BM_DraDecodeSlice_Reserialized(benchmark::State& state) { DecodeWatchedSlice(state, true); }
void BM_DraDecodeSlice_Parsed(benchmark::State& state) { DecodeWatchedSlice(state, false); }
BENCHMARK(BM_DraDecodeSlice_Reserialized);
BENCHMARK(BM_DraDecodeSlice_Parsed);

// Replacing one node's slice (a driver publishing it anew) in the snapshot.
void BM_DraReplaceSlice(benchmark::State& state) {
  Cluster& c = const_cast<Cluster&>(MakeCluster(static_cast<int>(state.range(0))));
  int n = 0;
  for (auto _ : state) {
    c.snapshot.AddResourceSlice(c.slices[static_cast<std::size_t>(n)]);
    n = (n + 1) % static_cast<int>(c.nodes.size());
  }
}
BENCHMARK(BM_DraReplaceSlice)->Arg(1000);

// The engine's DRA flow per gated pod, on the cluster above: the pod and
// its claim observed, the pass (JudgePodClaims, Place by fgd, the claim
// assumed), the claim write's and the gate removal's results, the pod seen
// ungated. Score's memory is warm but for the node each pod changes.
// A pod of namespace bench gated for devshare, using the claim `name` (of
// the same namespace) as its claim "gpu".
devshare::Pod GatedPod(const std::string& name) {
  devshare::Pod pod;
  pod.pod_namespace = "bench";
  pod.name = name;
  pod.uid = "uid-pod-" + name;
  pod.resource_claims.push_back(devshare::PodResourceClaim{"gpu", name, "", ""});
  pod.scheduling_gates = {std::string(kSchedulingGate)};
  return pod;
}

// An engine serving hami-gpu by fgd.
devshare::engine::EngineOptions ServingFgd() {
  devshare::engine::EngineOptions options;
  options.dra_device_classes = {"hami-gpu"};
  options.dra_policy = Policy::kFgd;
  return options;
}

// `c`'s nodes, slices, classes and claims observed by `engine`.
void ObserveCluster(const Cluster& c, devshare::engine::Engine& engine) {
  std::vector<devshare::engine::Command> out;
  for (const Node& node : c.nodes) engine.NodeObserved(node, 0, out);
  for (const ResourceSlice& slice : c.slices) engine.ResourceSliceObserved(slice);
  for (const auto& [name, device_class] : c.classes) engine.DeviceClassObserved(device_class);
  for (const ResourceClaim* claim : c.snapshot.ResourceClaims())
    engine.ResourceClaimObserved(*claim);
}

void BM_EngineDraPod(benchmark::State& state) {
  const Cluster& c = MakeCluster(static_cast<int>(state.range(0)));
  devshare::engine::Engine engine(ServingFgd());
  std::vector<devshare::engine::Command> out;
  ObserveCluster(c, engine);
  engine.DraSynced();
  engine.Tick(0, out);
  std::int64_t n = 0;
  std::uint64_t placed = 0;
  for (auto _ : state) {
    const std::string name = fmt::format("p-{}", n++);
    ResourceClaim claim = ShareClaim(name, 30, false);
    devshare::Pod pod = GatedPod(name);
    engine.ResourceClaimObserved(claim);
    engine.PodObserved(pod);
    out.clear();
    engine.Tick(n, out);
    for (int step = 0; step < 2 && !out.empty(); ++step) {
      std::vector<devshare::engine::Command> results;
      for (const devshare::engine::Command& command : out) {
        if (const auto* w = std::get_if<devshare::engine::WriteClaimStatus>(&command)) {
          engine.ApiResult(w->id, true, n, results);
          ++placed;
        } else if (const auto* g = std::get_if<devshare::engine::RemoveSchedulingGate>(&command)) {
          engine.ApiResult(g->id, true, n, results);
        }
      }
      out = std::move(results);
    }
    pod.scheduling_gates.clear();
    engine.PodObserved(pod);
  }
  if (placed != static_cast<std::uint64_t>(n)) state.SkipWithError("a pod was not placed");
}
BENCHMARK(BM_EngineDraPod)->Arg(1000)->Unit(benchmark::kMicrosecond);

// An engine serving DRA on the cluster of `nodes` nodes with `held` gated
// pods that fit nowhere (each asks 9 GPUs; a node has 8) and a bound pod of
// one CPU on every node.
struct HeldEngine {
  HeldEngine(int nodes, int held) : c(MakeCluster(nodes)), engine(ServingFgd()) {
    std::vector<devshare::engine::Command> out;
    ObserveCluster(c, engine);
    for (const Node& node : c.nodes) engine.PodObserved(BoundPod(node.name));
    engine.DraSynced();
    for (int i = 0; i < held; ++i) {
      const std::string name = fmt::format("wide-{}", i);
      ResourceClaim claim = ShareClaim(name, 100, false);
      claim.spec.requests[0].exactly->count = 9;
      claim.spec.requests[0].exactly->capacity_requests.clear();
      const devshare::Pod pod = GatedPod(name);
      engine.ResourceClaimObserved(std::move(claim));
      engine.PodObserved(pod);
    }
    engine.Tick(0, out);
  }
  static devshare::Pod BoundPod(const std::string& node) {
    devshare::Pod pod;
    pod.pod_namespace = "bench";
    pod.name = "bound-" + node;
    pod.uid = "uid-bound-" + node;
    pod.node_name = node;
    pod.cpu_milli = 1000;
    return pod;
  }
  const Cluster& c;
  devshare::engine::Engine engine;
};

// Events on the engine of HeldEngine(range(0) nodes, range(1) held), one
// per iteration, node after node: `event(engine, node, out)`. Reports the
// held pods judged per event.
template <typename Event>
void HeldEvents(benchmark::State& state, Event event) {
  HeldEngine h(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::vector<devshare::engine::Command> out;
  std::vector<Node> nodes = h.c.nodes;
  std::size_t n = 0;
  const std::uint64_t judged = h.engine.counters().dra_pods_judged;
  for (auto _ : state) {
    event(h.engine, nodes[n], out);
    out.clear();
    n = (n + 1) % nodes.size();
  }
  state.counters["judged_per_event"] =
      static_cast<double>(h.engine.counters().dra_pods_judged - judged) /
      static_cast<double>(state.iterations());
}

// Node heartbeats while pods are held: a node's object observed anew (its
// status and annotations changed, nothing the placement reads) and the
// engine's next pass. No held pod is concerned, whatever their number.
void BM_EngineDraHeldHeartbeat(benchmark::State& state) {
  std::uint64_t beat = 0;
  HeldEvents(state, [&](devshare::engine::Engine& engine, Node& node,
                        std::vector<devshare::engine::Command>& out) {
    node.annotations.Set("bench/heartbeat", std::to_string(beat++));
    engine.NodeObserved(node, 0, out);
    engine.Tick(0, out);
  });
}
BENCHMARK(BM_EngineDraHeldHeartbeat)
    ->Args({5000, 1000})
    ->Args({5000, 100})
    ->Unit(benchmark::kMicrosecond);

// Room on one node while pods are held: a bound pod there goes (and comes
// back, which takes room and concerns nobody); each held pod that may go
// there is judged there alone.
void BM_EngineDraHeldRoomOnOneNode(benchmark::State& state) {
  HeldEvents(state, [](devshare::engine::Engine& engine, Node& node,
                       std::vector<devshare::engine::Command>& out) {
    const devshare::Pod pod = HeldEngine::BoundPod(node.name);
    engine.PodDeleted(pod.uid);
    engine.Tick(0, out);
    engine.PodObserved(pod);
    engine.Tick(0, out);
  });
}
BENCHMARK(BM_EngineDraHeldRoomOnOneNode)
    ->Args({5000, 1000})
    ->Args({5000, 100})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
