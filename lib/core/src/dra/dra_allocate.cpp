// Allocating devices to ResourceClaims on one node as kube-scheduler v1.37
// does (devshare/dra_allocate.hpp). The structure follows the allocator it
// reproduces, so that each step can be checked against it: validate the
// requests (dra/requests.hpp), list the devices in the order they are
// tried (dra/candidates.hpp), then a depth-first search over (claim,
// request, subrequest, device) that takes the first device that fits and
// undoes it when what follows fails (dra/search.hpp), and build the
// results (dra/allocation_result.hpp). What a device fits is
// dra/device_match.hpp (selectors), dra/capacity.hpp and
// dra/device_usage.hpp (what is taken), dra/constraint.hpp; why a device
// does not fit is explain.cpp.
#include "devshare/dra_allocate.hpp"

#include <utility>

#include "devshare/dra_cel.hpp"
#include "devshare/dra_pools.hpp"
#include "dra/allocation_result.hpp"
#include "dra/candidates.hpp"
#include "dra/device_match.hpp"
#include "dra/device_usage.hpp"
#include "dra/requests.hpp"
#include "dra/search.hpp"

namespace devshare::dra {

// ---------------------------------------------------------------------------
// What allocated claims hold

void AllocatedState::Add(const Allocation& allocation) {
  for (const AllocatedDevice& d : allocation.devices) {
    if (d.admin_access) continue;
    DeviceId id{d.driver, d.pool, d.device};
    if (d.share_id) {
      shares.emplace(id, *d.share_id);
      if (!d.consumed_capacity.empty()) {
        std::map<std::string, Quantity>& consumed = consumed_capacity[id];
        for (const auto& [name, q] : d.consumed_capacity) consumed[name].milli += q.milli;
      }
      continue;
    }
    devices.insert(std::move(id));
  }
}

void AllocatedState::Remove(const Allocation& allocation) {
  for (const AllocatedDevice& d : allocation.devices) {
    if (d.admin_access) continue;
    DeviceId id{d.driver, d.pool, d.device};
    if (!d.share_id) {
      devices.erase(id);
      continue;
    }
    shares.erase({id, *d.share_id});
    auto consumed = consumed_capacity.find(id);
    if (consumed == consumed_capacity.end()) continue;
    for (const auto& [name, q] : d.consumed_capacity) {
      auto c = consumed->second.find(name);
      if (c == consumed->second.end()) continue;
      c->second.milli -= q.milli;
      if (c->second.milli == 0) consumed->second.erase(c);
    }
    if (consumed->second.empty()) consumed_capacity.erase(consumed);
  }
}

const Result<Selector>& SelectorCache::Compile(std::string_view expression) {
  auto compiled = compiled_.find(expression);
  if (compiled == compiled_.end())
    compiled = compiled_.emplace(std::string(expression), CompileSelector(expression)).first;
  return compiled->second;
}

bool AllocatedState::Shared(const DeviceId& id) const {
  if (consumed_capacity.contains(id)) return true;
  auto share = shares.lower_bound({id, std::string()});
  return share != shares.end() && share->first == id;
}

bool AllocatedState::Holds(const DeviceId& id) const { return devices.contains(id) || Shared(id); }

Result<std::optional<std::vector<Allocation>>> Allocate(const std::vector<ResourceClaim>& claims,
                                                        const Node& node,
                                                        const std::vector<ResourceSlice>& slices,
                                                        const DeviceClasses& classes,
                                                        const AllocatedState& allocated,
                                                        const AllocatorOptions& options) {
  return Allocate(claims, node, GatherPools(slices, node), classes, allocated, options);
}

Result<std::optional<std::vector<Allocation>>> Allocate(const std::vector<ResourceClaim>& claims,
                                                        const Node& node,
                                                        const std::vector<GatheredPool>& pools,
                                                        const DeviceClasses& classes,
                                                        const AllocatedState& allocated,
                                                        const AllocatorOptions& options) {
  using Allocations = std::optional<std::vector<Allocation>>;
  SelectorCache own_selectors;
  allocator::DeviceMatcher matcher(
      claims, node, options.selector_cache != nullptr ? *options.selector_cache : own_selectors);
  Result<allocator::PreparedClaims> prepared =
      allocator::PrepareClaims(claims, pools, classes, options.fractional_capacity_range, matcher);
  if (!prepared.ok()) return prepared.status();
  const std::vector<allocator::CandidateDevice> candidates =
      allocator::OrderedCandidates(pools, allocated, options);
  allocator::DeviceUsage usage(allocated, options.fractional_capacity_range);
  allocator::Search search(claims, *prepared, candidates, matcher, usage);
  Result<allocator::Outcome> done = search.Run();
  if (!done.ok()) return done.status();
  if (*done == allocator::Outcome::kOverLimit)
    return Status::InvalidArgument("allocation max size exceeded");
  if (*done == allocator::Outcome::kFailed) {
    for (const GatheredPool& pool : pools) {
      if (pool.invalid) return Status::InvalidArgument("invalid resource pools were encountered");
    }
    return Allocations();
  }
  Result<std::vector<Allocation>> allocations = allocator::BuildAllocations(search.results(), node);
  if (!allocations.ok()) return allocations.status();
  return Allocations(std::move(*allocations));
}

}  // namespace devshare::dra
