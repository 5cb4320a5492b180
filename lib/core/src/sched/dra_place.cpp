// Choosing a node and devices for ResourceClaims (devshare/dra_place.hpp).
#include "devshare/dra_place.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "devshare/dra_allocate.hpp"
#include "sched/filter_plan.hpp"
#include "sched/fragmentation.hpp"
#include "state/snapshot_state.hpp"

namespace devshare::dra {

// The core's private units (fragmentation, the snapshot's state); dra has
// an `internal` of its own.
namespace core = ::devshare::internal;

namespace {

using Capacities = std::map<std::string, Quantity>;

// The free share of a device: 1 less the largest share of a capacity that
// `consumed` and `extra` (either may be null) take, 0 when held whole.
float FreeShare(const Device& device, bool held_whole, const Capacities* consumed,
                const Capacities* extra) {
  if (held_whole) return 0;
  return static_cast<float>(std::clamp(1.0 - ConsumedShare(device, consumed, extra), 0.0, 1.0));
}

// A node's DRA devices as fgd and the used-share scores see them.
struct NodeDevices {
  std::vector<DeviceId> ids;
  std::vector<const Device*> devices;
  std::vector<float> free;
};

void Collect(const std::vector<GatheredPool>& pools, const AllocatedState& allocated,
             NodeDevices& out) {
  out.ids.clear();
  out.devices.clear();
  out.free.clear();
  for (const GatheredPool& pool : pools) {
    if (pool.incomplete || pool.invalid) continue;
    for (const ResourceSlice* slice : pool.device_slices) {
      for (const Device& device : slice->devices) {
        DeviceId id{pool.driver, pool.pool, device.name};
        auto consumed = allocated.consumed_capacity.find(id);
        const bool whole = allocated.devices.contains(id) ||
                           (!device.allow_multiple_allocations && allocated.Holds(id));
        out.free.push_back(FreeShare(
            device, whole,
            consumed == allocated.consumed_capacity.end() ? nullptr : &consumed->second, nullptr));
        out.ids.push_back(std::move(id));
        out.devices.push_back(&device);
      }
    }
  }
}

// The free shares once `allocations` are placed too.
std::vector<float> After(const NodeDevices& node, const AllocatedState& allocated,
                         const std::vector<Allocation>& allocations) {
  std::vector<float> free = node.free;
  std::map<std::size_t, Capacities> extra;
  std::set<std::size_t> whole;
  for (const Allocation& allocation : allocations) {
    for (const AllocatedDevice& d : allocation.devices) {
      if (d.admin_access) continue;
      auto at = std::find(node.ids.begin(), node.ids.end(), DeviceId{d.driver, d.pool, d.device});
      if (at == node.ids.end()) continue;
      const std::size_t i = static_cast<std::size_t>(at - node.ids.begin());
      if (!d.share_id) {
        whole.insert(i);
        continue;
      }
      for (const auto& [name, q] : d.consumed_capacity) extra[i][name].milli += q.milli;
    }
  }
  for (std::size_t i : whole) free[i] = 0;
  for (const auto& [i, capacities] : extra) {
    if (whole.contains(i)) continue;
    auto consumed = allocated.consumed_capacity.find(node.ids[i]);
    free[i] = FreeShare(*node.devices[i], false,
                        consumed == allocated.consumed_capacity.end() ? nullptr : &consumed->second,
                        &capacities);
  }
  return free;
}

double MeanUsed(const std::vector<float>& free) {
  if (free.empty()) return 0;
  double used = 0;
  for (float f : free) used += 1.0 - f;
  return used / static_cast<double>(free.size());
}

// The capacity the claims' first request asks (what fgd's device order
// foresees a device giving up), or null.
const Capacities* FirstRequestCapacity(const std::vector<ResourceClaim>& claims) {
  for (const ResourceClaim& claim : claims) {
    for (const DeviceRequest& request : claim.spec.requests) {
      if (request.exactly) return &request.exactly->capacity_requests;
      if (!request.first_available.empty())
        return &request.first_available.front().selection.capacity_requests;
    }
  }
  return nullptr;
}

bool Fits(core::Room room, const PodResources& pod);

// A node that the pod's CPU and memory fit, with its free CPU and memory.
struct RoomyNode {
  const core::NodeState* state = nullptr;
  core::Room room;
};

// The node when the pod's CPU and memory fit it, nullopt when they do not;
// NotFound for a node the snapshot does not hold (a registered node always
// has a DRA view).
Result<std::optional<RoomyNode>> RoomyNodeOf(const ClusterSnapshot& snapshot, std::string_view node,
                                             const PodResources& pod) {
  const core::SnapshotState& s = snapshot.state();
  const core::NodeState* state = s.FindNode(node);
  if (state == nullptr || !s.dra.nodes.contains(node))
    return Status::NotFound(fmt::format("node {} is not in the snapshot", node));
  const core::Room room = core::FreeRoom(*state);
  if (!Fits(room, pod)) return std::optional<RoomyNode>();
  return std::optional<RoomyNode>(RoomyNode{state, room});
}

bool Fits(core::Room room, const PodResources& pod) {
  return room.cpu >= pod.cpu_milli && room.memory >= pod.memory_bytes;
}

core::Room Less(core::Room room, const PodResources& pod) {
  if (room.cpu != core::kUnlimited) room.cpu -= pod.cpu_milli;
  if (room.memory != core::kUnlimited) room.memory -= pod.memory_bytes;
  return room;
}

}  // namespace

// What Score found for claims alike on a node at one version.
struct Verdict {
  bool fits = false;
  FitScore score;
};

struct NodeVerdicts {
  std::uint64_t version = 0;
  std::unordered_map<std::string, Verdict> by_claims;
};

struct Placer::Impl {
  PlacerOptions options;
  core::FgdModel model;
  core::FitMemo fits;
  SelectorCache selectors;
  NodeDevices node;
  // Score's verdicts for one snapshot, by node; a node's are dropped when
  // its DRA version moves on.
  const ClusterSnapshot* verdicts_of = nullptr;
  std::unordered_map<std::string, NodeVerdicts> verdicts;
  // The claims whose key was made last, and the key.
  std::vector<ResourceClaim> keyed_claims;
  std::string claims_key;

  // The claims as Score's verdicts know them: their requests and
  // constraints, not their names.
  const std::string& ClaimsKey(const std::vector<ResourceClaim>& claims) {
    if (claims == keyed_claims && !claims_key.empty()) return claims_key;
    keyed_claims = claims;
    claims_key = "claims:";
    for (const ResourceClaim& claim : claims) {
      ResourceClaim spec_only;
      spec_only.spec = claim.spec;
      claims_key += EncodeResourceClaim(spec_only);
      claims_key += '\n';
    }
    return claims_key;
  }
};

Placer::Placer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Placer::~Placer() = default;
Placer::Placer(Placer&&) noexcept = default;
Placer& Placer::operator=(Placer&&) noexcept = default;

Result<Placer> Placer::Make(PlacerOptions options) {
  if (Status valid = core::ValidateWorkload(options.workload); !valid.ok()) return valid;
  auto impl = std::make_unique<Impl>();
  impl->model = core::MakeFgdModel(options.workload);
  core::TabulateCells(impl->model);
  impl->options = std::move(options);
  return Placer(std::move(impl));
}

const PlacerOptions& Placer::options() const { return impl_->options; }

Result<std::optional<NodeFit>> Placer::Fit(const ClusterSnapshot& snapshot,
                                           const std::vector<ResourceClaim>& claims,
                                           const PodResources& pod, std::string_view node) {
  Result<std::optional<RoomyNode>> found = RoomyNodeOf(snapshot, node, pod);
  if (!found.ok()) return found.status();
  if (!*found) return std::optional<NodeFit>();
  const auto [state, room] = **found;
  Impl& impl = *impl_;
  Result<const std::vector<GatheredPool>*> pools = snapshot.DraPools(node);
  if (!pools.ok()) return pools.status();
  const AllocatedState& allocated = snapshot.dra_allocated();
  const Policy policy = impl.options.policy;

  AllocatorOptions allocator;
  allocator.fractional_capacity_range = impl.options.fractional_capacity_range;
  allocator.selector_cache = &impl.selectors;
  core::FragState sums;
  core::FitWeights weights_after;
  const Capacities* const asked = FirstRequestCapacity(claims);  // fgd's device cost reads it
  impl.node.free.clear();
  if (policy != Policy::kUpstream) Collect(**pools, allocated, impl.node);
  allocator.device_order = DeviceOrderOf(policy);
  if (policy == Policy::kFgd) {
    core::Measure(impl.node.free, impl.model, sums);
    weights_after = core::FitFor(impl.model, Less(room, pod), impl.fits);
    allocator.device_cost = [&](const DeviceId& id, const Device& device) {
      auto at = std::find(impl.node.ids.begin(), impl.node.ids.end(), id);
      if (at == impl.node.ids.end()) return 0.0;
      const float before = impl.node.free[static_cast<std::size_t>(at - impl.node.ids.begin())];
      float after = 0;
      if (device.allow_multiple_allocations && asked != nullptr) {
        Result<Capacities> taken =
            ConsumedCapacity(*asked, device, impl.options.fractional_capacity_range);
        auto consumed = allocated.consumed_capacity.find(id);
        if (taken.ok())
          after = FreeShare(
              device, false,
              consumed == allocated.consumed_capacity.end() ? nullptr : &consumed->second, &*taken);
      }
      return core::FragmentationAfterMove(sums, before, after, impl.model, weights_after);
    };
  }
  Result<std::optional<std::vector<Allocation>>> allocations =
      Allocate(claims, state->object, **pools, snapshot.device_classes(), allocated, allocator);
  if (!allocations.ok()) return allocations.status();
  if (!*allocations) return std::optional<NodeFit>();

  NodeFit fit{state->name, std::move(**allocations), 0, 0};
  for (float f : impl.node.free) fit.free_gpus += f;
  if (policy == Policy::kBinpack || policy == Policy::kSpread) {
    const double used = MeanUsed(After(impl.node, allocated, fit.allocations));
    fit.score = policy == Policy::kBinpack ? used : -used;
  } else if (policy == Policy::kFgd) {
    const double before =
        core::Fragmentation(sums, impl.model, core::FitFor(impl.model, room, impl.fits));
    core::FragState after;
    core::Measure(After(impl.node, allocated, fit.allocations), impl.model, after);
    fit.score = core::FgdNodeScore(before - core::Fragmentation(after, impl.model, weights_after));
  }
  return std::optional<NodeFit>(std::move(fit));
}

Result<std::optional<FitScore>> Placer::Score(const ClusterSnapshot& snapshot,
                                              const std::vector<ResourceClaim>& claims,
                                              const PodResources& pod, std::string_view node) {
  Result<std::optional<RoomyNode>> found = RoomyNodeOf(snapshot, node, pod);
  if (!found.ok()) return found.status();
  if (!*found) return std::optional<FitScore>();
  const auto [state, room] = **found;
  Impl& impl = *impl_;
  const core::SnapshotState& s = snapshot.state();
  const auto view = s.dra.nodes.find(node);
  if (impl.verdicts_of != &snapshot) {
    impl.verdicts.clear();
    impl.verdicts_of = &snapshot;
  }
  std::string key = impl.ClaimsKey(claims);
  if (impl.options.policy == Policy::kFgd) {
    // fgd's score also depends on which workload classes the node's free
    // CPU and memory fit, before and after.
    key += fmt::format("{}/{}", core::FitFor(impl.model, room, impl.fits).cell,
                       core::FitFor(impl.model, Less(room, pod), impl.fits).cell);
  }
  NodeVerdicts& verdicts = impl.verdicts[state->name];
  if (verdicts.version != view->second.version) {
    verdicts.by_claims.clear();
    verdicts.version = view->second.version;
  }
  if (auto known = verdicts.by_claims.find(key); known != verdicts.by_claims.end())
    return known->second.fits ? std::optional<FitScore>(known->second.score) : std::nullopt;
  Result<std::optional<NodeFit>> fit = Fit(snapshot, claims, pod, node);
  if (!fit.ok()) return fit.status();
  Verdict verdict;
  if (*fit) verdict = Verdict{true, FitScore{(*fit)->score, (*fit)->free_gpus}};
  verdicts.by_claims.emplace(std::move(key), verdict);
  return verdict.fits ? std::optional<FitScore>(verdict.score) : std::nullopt;
}

Result<Placement> Placer::Place(const ClusterSnapshot& snapshot,
                                const std::vector<ResourceClaim>& claims, const PodResources& pod,
                                const Pod* constraints, const std::vector<std::string>* among) {
  if (impl_->options.policy == Policy::kUpstream)
    return Status::InvalidArgument(
        "policy upstream: kube-scheduler chooses the node; use Fit on each node");
  const core::SnapshotState& s = snapshot.state();
  Placement placement;
  const core::NodeState* best = nullptr;
  FitScore best_score;
  auto consider = [&](const core::NodeState& node) -> Status {
    if (!node.present) return {};
    if (constraints != nullptr && NodeExcludes(*constraints, node.object)) {
      ++placement.excluded;
      return {};
    }
    if (!Fits(core::FreeRoom(node), pod)) {
      ++placement.short_of_cpu_or_memory;
      return {};
    }
    Result<std::optional<FitScore>> score = Score(snapshot, claims, pod, node.name);
    if (!score.ok()) return score.status();
    if (!*score) {
      ++placement.short_of_devices;
      return {};
    }
    ++placement.feasible;
    const bool better = best == nullptr || (*score)->score > best_score.score ||
                        (claims.empty() && (*score)->score == best_score.score &&
                         (*score)->free_gpus < best_score.free_gpus);
    if (better) {
      best = &node;
      best_score = **score;
    }
    return {};
  };
  if (among != nullptr) {
    for (const std::string& name : *among) {
      const core::NodeState* node = s.FindNode(name);
      if (node == nullptr) continue;
      if (Status status = consider(*node); !status.ok()) return status;
    }
  } else {
    for (std::uint32_t i : s.by_name) {
      if (Status status = consider(s.nodes[i]); !status.ok()) return status;
    }
  }
  if (best != nullptr) {
    Result<std::optional<NodeFit>> fit = Fit(snapshot, claims, pod, best->name);
    if (!fit.ok()) return fit.status();
    placement.chosen = std::move(*fit);
  }
  return placement;
}

ClusterFragmentation Placer::MeasureFragmentation(const ClusterSnapshot& snapshot) {
  Impl& impl = *impl_;
  const core::SnapshotState& s = snapshot.state();
  ClusterFragmentation result;
  core::FragState sums;
  for (std::uint32_t i : s.by_name) {
    const core::NodeState& node = s.nodes[i];
    if (!node.present) continue;
    Result<const std::vector<GatheredPool>*> pools = snapshot.DraPools(node.name);
    if (!pools.ok()) continue;
    Collect(**pools, snapshot.dra_allocated(), impl.node);
    core::Measure(impl.node.free, impl.model, sums);
    const double fragmented = core::Fragmentation(
        sums, impl.model, core::FitFor(impl.model, core::FreeRoom(node), impl.fits));
    result.nodes.push_back(NodeFragmentation{node.name, sums.all, fragmented});
    result.free_gpus += sums.all;
    result.fragmented_gpus += fragmented;
  }
  return result;
}

}  // namespace devshare::dra
