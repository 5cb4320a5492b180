// Filter and MeasureFragmentation (devshare/filter.hpp): the plan once
// (filter_plan), every candidate node through node_fit, the best one's
// placement written as annotations.
#include "devshare/filter.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "devshare/pod_codec.hpp"
#include "sched/filter_plan.hpp"
#include "sched/fragmentation.hpp"
#include "sched/node_fit.hpp"

namespace devshare {
namespace {

// std::string_view's three-way comparison, inlined: the candidate walk does
// two per candidate.
inline int CompareNames(std::string_view a, std::string_view b) {
  const std::size_t common = std::min(a.size(), b.size());
  if (common > 0) {
    if (const int order = std::memcmp(a.data(), b.data(), common); order != 0) return order;
  }
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

}  // namespace

using namespace internal;  // NOLINT: this file drives the units of filter_plan, node_fit,
                           // fragmentation

Result<FilterResult> Filter(const ClusterSnapshot& snapshot, const Pod& pod,
                            std::span<const std::string> candidates, std::int64_t now,
                            const FilterOptions& options) {
  Status valid = ValidateOptions(options);
  if (!valid.ok()) return valid;
  const SnapshotState& s = snapshot.state();
  Result<PodPlan> made = MakePlan(s, pod, options);
  if (!made.ok()) return made.status();
  const PodPlan& plan = *made;

  FilterResult result;
  if (!HasRequests(plan.requests)) {
    result.has_requests = false;
    // fgd places a pod without devices too: its CPU and memory can leave a
    // node's GPUs unusable.
    if (!plan.node_fgd) return result;
  }

  // Candidates: the given names (deduplicated), or every node; by name.
  std::vector<const NodeState*> nodes;
  if (candidates.empty()) {
    nodes.reserve(s.by_name.size());
    for (std::uint32_t i : s.by_name) {
      if (s.nodes[i].present) nodes.push_back(&s.nodes[i]);
    }
  } else {
    std::vector<std::string_view> names(candidates.begin(), candidates.end());
    // Sorted and deduplicated, unless they already ascend strictly.
    auto descends = [](std::string_view a, std::string_view b) { return CompareNames(a, b) >= 0; };
    if (std::adjacent_find(names.begin(), names.end(), descends) != names.end()) {
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
    }
    // Both ascend: one merge walk with the snapshot's nodes by name, one
    // comparison per step; a few candidates among many nodes (a preemption
    // judging one node) are looked up instead.
    nodes.reserve(names.size());
    auto known = s.by_name.begin();
    const bool few = names.size() * 16 < s.by_name.size();
    auto before = [&s](std::uint32_t i, std::string_view name) {
      return CompareNames(s.nodes[i].name, name) < 0;
    };
    for (std::string_view name : names) {
      int order = 1;
      if (few) {
        known = std::lower_bound(known, s.by_name.end(), name, before);
        if (known != s.by_name.end()) order = CompareNames(s.nodes[*known].name, name);
      } else {
        while (known != s.by_name.end() && (order = CompareNames(s.nodes[*known].name, name)) < 0)
          ++known;
      }
      const bool found = known != s.by_name.end() && order == 0 && s.nodes[*known].present;
      if (found) {
        nodes.push_back(&s.nodes[*known]);
      } else {
        result.failed.push_back(NodeFailure{std::string(name), "node unregistered"});
      }
    }
  }

  Scratch scratch;
  const NodeState* best = nullptr;
  double best_score = 0;
  double best_free_gpus = 0;
  double min_score = std::numeric_limits<double>::infinity();  // over result.scores
  double max_score = -std::numeric_limits<double>::infinity();
  result.scores.reserve(nodes.size());
  for (const NodeState* node : nodes) {
    NodeVerdict v = EvaluateNode(s, plan, *node, scratch, /*need_devices=*/false);
    if (!v.fits) {
      NodeFailure& failure = result.failed.emplace_back();
      failure.node = node->name;
      if (plan.reasons) failure.reason = std::move(v.reason);
      continue;
    }
    min_score = std::min(min_score, v.score);
    max_score = std::max(max_score, v.score);
    NodeScore& scored = result.scores.emplace_back();  // no temporary: one copy of the name
    scored.node = node->name;
    scored.score = v.score;
    // Names ascend, so a strictly better score is needed to replace: ties go
    // to the first name.
    bool better =
        best == nullptr || (plan.node_spread ? v.score < best_score : v.score > best_score);
    // A pod without devices: among equal scores, the node with the fewest
    // free GPUs, which its CPU and memory can strand the least later.
    if (!result.has_requests && !better && v.score == best_score && v.free_gpus < best_free_gpus) {
      better = true;
    }
    if (better) {
      best = node;
      best_score = v.score;
      best_free_gpus = v.free_gpus;
    }
  }
  NormalizeScores(result.scores, min_score, max_score, plan.node_spread);
  // Unregistered candidates were listed first; merge them into name order.
  auto by_name = [](const NodeFailure& a, const NodeFailure& b) { return a.node < b.node; };
  if (!std::is_sorted(result.failed.begin(), result.failed.end(), by_name)) {
    std::stable_sort(result.failed.begin(), result.failed.end(), by_name);
  }
  if (best == nullptr) return result;
  if (!result.has_requests) {
    result.node = best->name;
    return result;
  }

  // Materialise the winner's placement.
  EvaluateNode(s, plan, *best, scratch, /*need_devices=*/true);  // fills scratch.placement
  result.node = best->name;
  const std::size_t containers = plan.requests.size();
  for (std::size_t slot = 0; slot < plan.vendors.size(); ++slot) {
    const VendorSpec& vendor = s.config.vendors[plan.vendors[slot]];
    // Which containers have an entry: all (W1 fixed), or, HAMi-exact, on a
    // node without a device typed as the vendor's word, those that ask.
    const bool every_container =
        !plan.hami_exact.container_padding_by_type ||
        std::any_of(best->devices.begin(), best->devices.end(),
                    [&](const DeviceSlot& d) { return d.info.type == vendor.common_word; });
    auto has_entry = [&](std::size_t c) {
      const auto& asks = plan.request_vendor[c];
      return every_container ||
             std::find(asks.begin(), asks.end(), plan.vendors[slot]) != asks.end();
    };
    std::size_t entries = 0;
    for (std::size_t c = 0; c < containers; ++c) entries += has_entry(c) ? 1 : 0;
    PodSingleDevice devices(entries);
    std::vector<MigAllocation> mig;
    for (std::size_t c = 0, position = 0; c < containers; position += has_entry(c) ? 1 : 0, ++c) {
      for (const Pick& p : scratch.placement[c][slot]) {
        const Device& info = best->devices[p.device].info;
        if (p.profile != nullptr) {
          mig.push_back(MigAllocation{static_cast<std::int64_t>(position),
                                      static_cast<std::int64_t>(devices[position].size()), info.id,
                                      p.profile->name, p.placement, "", std::nullopt,
                                      std::nullopt});
        }
        devices[position].push_back(
            ContainerDevice{info.id, vendor.common_word, p.usedmem, p.usedcores});
      }
    }
    const std::string encoded = EncodePodDevices(devices, vendor.pod_devices_format);
    result.annotations.Set(vendor.to_allocate_annotation, encoded);
    result.annotations.Set(vendor.allocated_annotation, encoded);
    if (!mig.empty()) result.annotations.Set(keys::kMigAllocations, EncodeMigAllocations(mig));
    result.devices.emplace_back(vendor.common_word, std::move(devices));
  }
  result.annotations.Set(s.config.assigned_node_annotation, best->name);
  result.annotations.Set(s.config.assigned_time_annotation, std::to_string(now));
  return result;
}

Result<ClusterFragmentation> MeasureFragmentation(const ClusterSnapshot& snapshot,
                                                  std::span<const WorkloadClass> workload) {
  Status valid = ValidateWorkload(workload);
  if (!valid.ok()) return valid;
  const SnapshotState& s = snapshot.state();
  std::unique_ptr<FgdModel> own;
  const FgdModel& model = ModelFor(s, workload, own);
  FitMemo fits;
  NodeMeasure measured;
  ClusterFragmentation result;
  result.nodes.reserve(s.by_name.size());
  for (std::uint32_t i : s.by_name) {
    const NodeState& node = s.nodes[i];
    if (!node.present) continue;
    // The snapshot's own measure, or one made now.
    const NodeMeasure* m = own == nullptr ? &s.fragmentation->nodes[i] : &measured;
    if (own != nullptr) MeasureNode(s, node, model, fits, measured);
    NodeFragmentation n{node.name, m->sums.all, m->fragmentation};
    result.free_gpus += n.free_gpus;
    result.fragmented_gpus += n.fragmented_gpus;
    result.nodes.push_back(std::move(n));
  }
  return result;
}

}  // namespace devshare
