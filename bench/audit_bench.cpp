// The drift auditor: Engine::Audit comparing a cache of N nodes x 8 GPUs and
// 2N pods holding devices with a listing that agrees (the steady state of
// every audit), and DecodeMetadataPage on a page of 500 pods as the API
// server sends it.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "devshare/engine/engine.hpp"
#include "devshare/kube/audit_wire.hpp"
#include "devshare/testing.hpp"

namespace {

using namespace devshare;

struct Cluster {
  explicit Cluster(int nodes) {
    std::vector<engine::Command> out;
    for (int n = 0; n < nodes; ++n) {
      Node node = testing::NodeBuilder(fmt::format("node-{:05}", n)).Gpus(8, 40960);
      node.uid = fmt::format("uid-node-{:05}", n);
      node.resource_version = "1";  // as listed: the steady state skips the annotations
      engine.NodeObserved(node, 0, out);
      listing.nodes.push_back({"", node.name, node.uid, node.resource_version, node.annotations});
      for (int p = 0; p < 2; ++p) {
        const std::string name = fmt::format("pod-{:05}-{}", n, p);
        Pod pod = testing::PodBuilder(name)
                      .Gpus(1, 8000)
                      .Uid("uid-" + name)
                      .Allocated(node.name, {{testing::Use(node.name, p, 8000, 0)}});
        engine.PodObserved(pod);
        listing.pods.push_back({pod.pod_namespace, pod.name, pod.uid, {}, pod.annotations});
      }
    }
    engine.Tick(0, out);
  }
  engine::Engine engine{engine::EngineOptions{}};
  engine::AuditListing listing;
};

void BM_Audit_Agreeing(benchmark::State& state) {
  Cluster c(static_cast<int>(state.range(0)));
  std::vector<engine::Command> out;
  std::int64_t now = 1000;
  for (auto _ : state) {
    engine::AuditReport r = c.engine.Audit(c.listing, now += 60000, out);
    benchmark::DoNotOptimize(r);
  }
  state.counters["objects"] = static_cast<double>(c.listing.nodes.size() + c.listing.pods.size());
}
BENCHMARK(BM_Audit_Agreeing)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

void BM_Audit_DecodePage(benchmark::State& state) {
  std::string page = R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",)"
                     R"("metadata":{"resourceVersion":"9","continue":"x"},"items":[)";
  for (int i = 0; i < 500; ++i) {
    if (i > 0) page += ',';
    page += fmt::format(
        R"({{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{{)"
        R"("name":"pod-{0:05}","namespace":"default","uid":"6f1c2d3e-{0:04}-4a5b-8c9d-0e1f2a3b4c5d",)"
        R"("resourceVersion":"{0}","creationTimestamp":"2026-11-26T10:00:00Z",)"
        R"("annotations":{{"hami.io/vgpu-node":"node-{1:05}","hami.io/bind-phase":"success",)"
        R"("hami.io/vgpu-devices-allocated":"GPU-node-{1:05}-0,NVIDIA,8000,0:;",)"
        R"("hami.io/vgpu-devices-to-allocate":"GPU-node-{1:05}-0,NVIDIA,8000,0:;"}}}}}})",
        i, i / 2);
  }
  page += "]}";
  for (auto _ : state) {
    auto decoded = kube::DecodeMetadataPage(page);
    benchmark::DoNotOptimize(decoded);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * page.size()));
}
BENCHMARK(BM_Audit_DecodePage)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
