// ExplainNode: every request of a claim against every device of a node,
// each taken alone, with the reason it does not fit (devshare/dra_allocate.hpp).
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "devshare/dra_allocate.hpp"
#include "dra/candidates.hpp"
#include "dra/capacity.hpp"
#include "dra/device_match.hpp"
#include "dra/device_usage.hpp"
#include "dra/requests.hpp"
#include "k8s/tolerations.hpp"

namespace devshare::dra {

namespace {

using allocator::CandidateDevice;
using allocator::ConsumedBy;
using allocator::DeviceMatcher;
using allocator::DeviceUsage;
using allocator::FindRequest;
using allocator::RequestData;
using allocator::RequestKey;
using allocator::ViolatesPolicy;

// Which capacity the request does not fit, in words.
std::string CapacityShortfall(const DeviceSelection& selection, const CandidateDevice& candidate,
                              const DeviceUsage& usage) {
  const AllocatedState& allocated = usage.allocated();
  const bool fractional = usage.fractional_capacity_range();
  const Device& device = candidate.device();
  for (const auto& [name, q] : selection.capacity_requests) {
    if (!device.capacity.contains(name)) return fmt::format("no capacity {}", name);
  }
  auto current = allocated.consumed_capacity.find(candidate.id);
  for (const auto& [name, capacity] : device.capacity) {
    Result<Quantity> c =
        ConsumedBy(FindRequest(selection.capacity_requests, name), capacity, fractional);
    if (!c.ok()) return std::string(c.status().message());
    if (ViolatesPolicy(*c, capacity.request_policy, fractional))
      return fmt::format("{}: {} is outside the device's request policy", name, FormatQuantity(*c));
    Quantity used{};
    if (current != allocated.consumed_capacity.end()) {
      if (auto u = current->second.find(name); u != current->second.end()) used = u->second;
    }
    if (c->milli > capacity.value.milli - used.milli) {
      return fmt::format("{}: needs {}, {} of {} free", name, FormatQuantity(*c),
                         FormatQuantity(Quantity{capacity.value.milli - used.milli}),
                         FormatQuantity(capacity.value));
    }
  }
  return "capacity";
}

// Empty when the device can take the request on its own.
std::string WhyNot(const RequestKey& key, const RequestData& data, const CandidateDevice& candidate,
                   DeviceMatcher& matcher, DeviceUsage& usage) {
  const DeviceSelection& selection = *data.selection;
  const Device& device = candidate.device();
  if (!selection.admin_access && usage.InUse(candidate.id)) return "held by an allocated claim";
  Result<bool> selectable = matcher.Selectable(key, data, candidate);
  if (!selectable.ok()) return std::string(selectable.status().message());
  if (!*selectable) {
    return candidate.slice->per_device_node_selection
               ? "not selected by the class's or the request's selectors, or not for this node"
               : "not selected by the class's or the request's selectors";
  }
  Result<bool> fits = usage.FitsCapacity(selection.capacity_requests, candidate);
  if (!fits.ok()) return std::string(fits.status().message());
  if (!*fits) return CapacityShortfall(selection, candidate, usage);
  for (const DeviceTaint& taint : device.taints) {
    if (devshare::internal::TaintRepels(taint, selection.tolerations))
      return fmt::format("taint {}={}:{} not tolerated", taint.key, taint.value, taint.effect);
  }
  const bool skip_counters = device.allow_multiple_allocations && usage.CapacityInUse(candidate.id);
  if (!skip_counters && !device.consumes_counters.empty()) {
    if (!usage.ReserveCounters(candidate))
      return "its shared counters are used up by the allocated devices of its pool";
    usage.ReleaseCounters(candidate);
  }
  return {};
}

}  // namespace

Result<NodeExplanation> ExplainNode(const ResourceClaim& claim, const Node& node,
                                    const std::vector<ResourceSlice>& slices,
                                    const DeviceClasses& classes, const AllocatedState& allocated,
                                    const AllocatorOptions& options) {
  return ExplainNode(claim, node, GatherPools(slices, node), classes, allocated, options);
}

Result<NodeExplanation> ExplainNode(const ResourceClaim& claim, const Node& node,
                                    const std::vector<GatheredPool>& pools,
                                    const DeviceClasses& classes, const AllocatedState& allocated,
                                    const AllocatorOptions& options) {
  const std::vector<ResourceClaim> claims = {claim};
  SelectorCache own_selectors;
  DeviceMatcher matcher(
      claims, node, options.selector_cache != nullptr ? *options.selector_cache : own_selectors);
  Result<allocator::PreparedClaims> prepared =
      allocator::PrepareClaims(claims, pools, classes, options.fractional_capacity_range, matcher);
  if (!prepared.ok()) return prepared.status();
  const std::vector<CandidateDevice> candidates =
      allocator::OrderedCandidates(pools, allocated, options);
  DeviceUsage usage(allocated, options.fractional_capacity_range);
  NodeExplanation out;
  for (const GatheredPool& pool : pools) {
    if (pool.incomplete)
      out.pools.push_back(fmt::format("{}/{}: incomplete (its slices are being published)",
                                      pool.driver, pool.pool));
    if (pool.invalid)
      out.pools.push_back(
          fmt::format("{}/{}: invalid: {}", pool.driver, pool.pool, pool.invalid_reason));
  }
  for (const auto& [key, data] : prepared->requests) {
    const std::string request = data.FullName();
    for (const CandidateDevice& candidate : candidates) {
      std::string why = WhyNot(key, data, candidate, matcher, usage);
      out.devices.push_back(DeviceVerdict{candidate.id, request, why.empty(), std::move(why)});
    }
  }
  return out;
}

}  // namespace devshare::dra
