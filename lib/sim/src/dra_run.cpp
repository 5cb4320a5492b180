#include "dra_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include "devshare/dra_place.hpp"
#include "devshare/snapshot.hpp"
#include "event_queue.hpp"
#include "report.hpp"
#include "scenario_objects.hpp"

namespace devshare::sim::internal {

namespace {

constexpr std::int64_t kMib = 1024 * 1024;

dra::Quantity Whole(std::int64_t units) { return dra::Quantity{units * 1000}; }

dra::Capacity Consumable(dra::Quantity value, dra::Quantity min, dra::Quantity step) {
  dra::CapacityRequestPolicy policy;
  policy.default_value = value;
  policy.valid_range = dra::CapacityRange{min, value, step};
  return dra::Capacity{value, policy};
}

std::string Quoted(std::string_view text) { return fmt::format("\"{}\"", text); }

// kube-scheduler v1.37's numFeasibleNodesToFind with percentageOfNodesToScore unset.
std::size_t FeasibleNodesToFind(std::size_t nodes) {
  constexpr std::size_t kMinFeasibleNodes = 100, kMinPercentage = 5;
  if (nodes < kMinFeasibleNodes) return nodes;
  const std::int64_t adaptive = 50 - static_cast<std::int64_t>(nodes) / 125;
  const std::size_t percentage =
      std::max<std::int64_t>(adaptive, static_cast<std::int64_t>(kMinPercentage));
  return std::max(nodes * percentage / 100, kMinFeasibleNodes);
}

// NodeResourcesFit (LeastAllocated, cpu and memory weighted 1) plus
// NodeResourcesBalancedAllocation, as kube-scheduler scores a node for a
// pod: `requested` already counts the pod (its non-zero requests).
std::int64_t UpstreamScore(const NodeCpuMemory& node, std::int64_t cpu, std::int64_t memory) {
  auto least = [](std::int64_t capacity, std::int64_t requested) -> std::int64_t {
    if (capacity <= 0 || requested > capacity) return 0;
    return (capacity - requested) * 100 / capacity;
  };
  auto fraction = [](std::int64_t capacity, std::int64_t requested) {
    if (capacity <= 0) return 1.0;
    return std::min(1.0, static_cast<double>(requested) / static_cast<double>(capacity));
  };
  const std::int64_t cpu_requested = node.cpu_requested_milli + cpu;
  const std::int64_t memory_requested = node.memory_requested_bytes + memory;
  const std::int64_t fit =
      (least(node.cpu_milli, cpu_requested) + least(node.memory_bytes, memory_requested)) / 2;
  const double deviation = std::abs(fraction(node.cpu_milli, cpu_requested) -
                                    fraction(node.memory_bytes, memory_requested)) /
                           2;
  return fit + static_cast<std::int64_t>((1 - deviation) * 100);
}

// kube-scheduler's node choice for one pod (see DraMode): the nodes in
// the scenario's order from a start that moves on by the nodes visited.
class UpstreamScheduler {
 public:
  UpstreamScheduler(std::vector<std::string> nodes, std::uint64_t seed)
      : nodes_(std::move(nodes)), rng_(seed) {}

  Result<std::optional<dra::NodeFit>> Choose(const ClusterSnapshot& snapshot, dra::Placer& placer,
                                             const std::vector<dra::ResourceClaim>& claims,
                                             const dra::PodResources& pod) {
    const std::size_t n = nodes_.size();
    const std::size_t wanted = FeasibleNodesToFind(n);
    std::vector<const std::string*> feasible;
    std::size_t visited = 0;
    for (; visited < n && feasible.size() < wanted; ++visited) {
      const std::string& node = nodes_[(next_start_ + visited) % n];
      Result<std::optional<dra::FitScore>> fits = placer.Score(snapshot, claims, pod, node);
      if (!fits.ok()) return fits.status();
      if (*fits) feasible.push_back(&node);
    }
    if (n > 0) next_start_ = (next_start_ + visited) % n;
    // The scores count a pod asking nothing as 100m CPU and 200 MB.
    const std::int64_t cpu = pod.cpu_milli > 0 ? pod.cpu_milli : 100;
    const std::int64_t memory = pod.memory_bytes > 0 ? pod.memory_bytes : 200 * 1000 * 1000;
    std::optional<std::size_t> chosen;
    std::int64_t best = std::numeric_limits<std::int64_t>::min();
    std::uint64_t ties = 0;
    for (std::size_t i = 0; i < feasible.size(); ++i) {
      Result<NodeCpuMemory> node = snapshot.NodeCpuMemoryOf(*feasible[i]);
      if (!node.ok()) return node.status();
      const std::int64_t score = UpstreamScore(*node, cpu, memory);
      if (score > best) {
        best = score;
        ties = 1;
        chosen = i;
      } else if (score == best && rng_() % ++ties == 0) {
        chosen = i;  // reservoir sampling, as selectHost
      }
    }
    if (!chosen) return std::optional<dra::NodeFit>();
    return placer.Fit(snapshot, claims, pod, *feasible[*chosen]);
  }

 private:
  std::vector<std::string> nodes_;
  std::size_t next_start_ = 0;
  std::mt19937_64 rng_;
};

// No device the placement touches holds more than its capacity, or is
// held whole and shared at once.
Status CheckDevices(const ClusterSnapshot& snapshot, const dra::NodeFit& fit,
                    std::string_view pod) {
  Result<const std::vector<dra::GatheredPool>*> pools = snapshot.DraPools(fit.node);
  if (!pools.ok()) return pools.status();
  const dra::AllocatedState& held = snapshot.dra_allocated();
  for (const dra::Allocation& allocation : fit.allocations) {
    for (const dra::AllocatedDevice& d : allocation.devices) {
      const dra::DeviceId id{d.driver, d.pool, d.device};
      if (held.devices.contains(id) && held.Shared(id))
        return Status::Internal(
            fmt::format("pod {}: device {} held whole and shared", pod, d.device));
      auto consumed = held.consumed_capacity.find(id);
      if (consumed == held.consumed_capacity.end()) continue;
      for (const dra::GatheredPool& p : **pools) {
        for (const dra::ResourceSlice* slice : p.device_slices) {
          for (const dra::Device& device : slice->devices) {
            if (p.driver != id.driver || p.pool != id.pool || device.name != id.device) continue;
            for (const auto& [name, q] : consumed->second) {
              auto capacity = device.capacity.find(name);
              if (capacity == device.capacity.end() || q > capacity->second.value)
                return Status::Internal(
                    fmt::format("pod {}: device {} over its {}", pod, d.device, name));
            }
          }
        }
      }
    }
  }
  return Status();
}

}  // namespace

dra::ResourceSlice GpuSlice(const NodeSpec& spec) {
  dra::ResourceSlice slice;
  slice.name = spec.name + "-" + std::string(kDraDriver);
  slice.driver = std::string(kDraDriver);
  slice.pool = dra::Pool{spec.name, 1, 1};
  slice.node_scope.node_name = spec.name;
  for (std::int32_t i = 0; i < spec.gpus; ++i) {
    dra::Device& device = slice.devices.emplace_back();
    device.name = fmt::format("hami-gpu-{}", i);
    device.attributes["type"] = std::string("hami-gpu");
    device.attributes["minor"] = std::int64_t{i};
    device.attributes["productName"] = spec.model;
    device.attributes["uuid"] = fmt::format("GPU-{}-{}", spec.name, i);
    device.capacity["cores"] = Consumable(Whole(100), Whole(0), Whole(1));
    device.capacity["memory"] =
        Consumable(Whole(std::int64_t{spec.gpu_memory_mib} * kMib), Whole(kMib), Whole(kMib));
    device.allow_multiple_allocations = true;
  }
  return slice;
}

dra::DeviceClass GpuClass() {
  dra::DeviceClass device_class;
  device_class.name = std::string(kDraClass);
  device_class.selectors.push_back(fmt::format("device.driver == {}", Quoted(kDraDriver)));
  return device_class;
}

dra::ResourceClaim GpuClaim(const PodSpec& spec, std::size_t index, std::int32_t smallest_gpu_mib) {
  dra::ResourceClaim claim;
  claim.claim_namespace = spec.pod_namespace;
  claim.name = spec.name + "-gpu";
  claim.uid = fmt::format("claim-uid-{}", index);
  dra::DeviceRequest& request = claim.spec.requests.emplace_back();
  request.name = "gpu";
  dra::DeviceSelection& selection = request.exactly.emplace();
  selection.device_class_name = std::string(kDraClass);
  const bool fraction = spec.gpus == 1 && spec.gpu_milli > 0 && spec.gpu_milli < 1000;
  if (fraction) {
    const std::int64_t share = std::max(1, spec.gpu_milli / 10);
    selection.capacity_requests["cores"] = Whole(share);
    const std::int64_t mib =
        std::max<std::int64_t>(1, std::int64_t{smallest_gpu_mib} * share / 100);
    selection.capacity_requests["memory"] = Whole(mib * kMib);
  } else {
    selection.count = spec.gpus;
  }
  if (!spec.gpu_spec.empty()) {
    std::vector<std::string> models;
    for (std::size_t start = 0; start <= spec.gpu_spec.size();) {
      const std::size_t bar = std::min(spec.gpu_spec.find('|', start), spec.gpu_spec.size());
      models.push_back(Quoted(spec.gpu_spec.substr(start, bar - start)));
      start = bar + 1;
    }
    selection.selectors.push_back(fmt::format("device.attributes[{}].productName in [{}]",
                                              Quoted(kDraDriver), fmt::join(models, ", ")));
  }
  return claim;
}

Result<Report> RunDra(const Scenario& scenario, std::uint64_t seed, const Progress& progress) {
  dra::PlacerOptions options;
  options.policy = scenario.dra.policy;
  options.workload = ReplicaEngineOptions(scenario).filter.workload;
  Result<dra::Placer> placer = dra::Placer::Make(options);
  if (!placer.ok()) return placer.status();
  options.policy = dra::Policy::kFgd;
  Result<dra::Placer> measurer = dra::Placer::Make(options);
  if (!measurer.ok()) return measurer.status();

  ClusterSnapshot snapshot;
  snapshot.AddDeviceClass(GpuClass());
  EventQueue events;
  ReportBuilder report(events, [&](const ClusterSnapshot& truth) {
    return Result<ClusterFragmentation>(measurer->MeasureFragmentation(truth));
  });
  std::int32_t smallest_gpu_mib = 0;
  std::vector<std::string> names;
  for (const NodeSpec& spec : scenario.nodes) {
    Node node = PlainNode(spec);
    node.labels.Set("kubernetes.io/hostname", spec.name);
    if (Status s = snapshot.AddNode(node); !s.ok()) return s;
    if (spec.gpus > 0) {
      snapshot.AddResourceSlice(GpuSlice(spec));
      smallest_gpu_mib = smallest_gpu_mib == 0 ? spec.gpu_memory_mib
                                               : std::min(smallest_gpu_mib, spec.gpu_memory_mib);
    }
    report.AddCapacity(spec.gpus);
    names.push_back(spec.name);
  }
  UpstreamScheduler upstream(std::move(names), seed);

  for (std::size_t i = 0; i < scenario.pods.size(); ++i)
    events.At(scenario.pods[i].arrive_ms, EventKind::kArrive, i);
  std::vector<PodOutcome> outcomes(scenario.pods.size());
  const std::uint64_t total = scenario.pods.size();
  std::uint64_t handled = 0, next_progress = 0;
  while (!events.empty()) {
    if (scenario.end_ms > 0 && events.next().at > scenario.end_ms) break;
    const Event event = events.Pop();
    const PodSpec& spec = scenario.pods[event.arg];
    PodOutcome& outcome = outcomes[event.arg];
    Pod pod;
    pod.pod_namespace = spec.pod_namespace;
    pod.name = spec.name;
    pod.uid = fmt::format("uid-{}", event.arg);
    if (event.kind == EventKind::kDepart) {
      snapshot.RemovePod(pod.uid);
      snapshot.RemoveResourceClaim(spec.pod_namespace, spec.name + "-gpu");
      outcome.running = false;
      report.Departed(GpusOf(spec));
      continue;
    }
    if (Status s = report.Arrived(GpusOf(spec), snapshot); !s.ok()) return s;
    std::vector<dra::ResourceClaim> claims;
    if (spec.gpus > 0) claims.push_back(GpuClaim(spec, event.arg, smallest_gpu_mib));
    const dra::PodResources resources{spec.cpu_milli, spec.memory_mib * kMib};
    Result<std::optional<dra::NodeFit>> fit = std::optional<dra::NodeFit>();
    if (scenario.dra.policy == dra::Policy::kUpstream) {
      fit = upstream.Choose(snapshot, *placer, claims, resources);
    } else {
      Result<dra::Placement> placement = placer->Place(snapshot, claims, resources);
      if (!placement.ok()) return placement.status();
      fit = std::move(placement->chosen);
    }
    if (!fit.ok()) return fit.status();
    ++handled;
    if (!*fit) {
      outcome.given_up = true;
      outcome.reason = "no node fits";
    } else {
      for (std::size_t c = 0; c < claims.size(); ++c) {
        claims[c].allocation = (*fit)->allocations[c];
        snapshot.AddResourceClaim(std::move(claims[c]));
      }
      if (Status s = CheckDevices(snapshot, **fit, spec.name); !s.ok())
        return Status::Internal(fmt::format("at {} ms: {}", events.now(), s.message()));
      pod.node_name = (*fit)->node;
      pod.phase = "Running";
      pod.cpu_milli = spec.cpu_milli;
      pod.memory_bytes = resources.memory_bytes;
      if (Status s = snapshot.AddPod(pod); !s.ok()) return s;
      outcome.bound = outcome.running = true;
      outcome.bound_at = events.now();
      report.Bound(GpusOf(spec));
      if (spec.duration_ms > 0)
        events.At(events.now() + spec.duration_ms, EventKind::kDepart, event.arg);
    }
    if (progress && total > 0 && handled * 100 / total >= next_progress) {
      progress(handled, total);
      next_progress = handled * 100 / total + 1;
    }
  }
  if (scenario.end_ms > 0) events.AdvanceTo(scenario.end_ms);
  for (std::size_t i = 0; i < scenario.pods.size(); ++i) {
    if (scenario.pods[i].arrive_ms <= events.now()) report.CountPod(scenario.pods[i], outcomes[i]);
  }
  if (progress) progress(handled, total);
  return report.Finish(snapshot);
}

}  // namespace devshare::sim::internal
