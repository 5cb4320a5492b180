// The devices the search tries, in order (dra/candidates.hpp).
#include "dra/candidates.hpp"

#include <algorithm>
#include <utility>

namespace devshare::dra::allocator {

namespace {

// The largest share of any of the device's capacities that allocated
// claims consume (0 for a device not shared).
double UsedShare(const CandidateDevice& candidate, const AllocatedState& allocated) {
  auto consumed = allocated.consumed_capacity.find(candidate.id);
  if (consumed == allocated.consumed_capacity.end()) return 0;
  return ConsumedShare(candidate.device(), &consumed->second);
}

}  // namespace

std::vector<CandidateDevice> OrderedCandidates(const std::vector<GatheredPool>& pools,
                                               const AllocatedState& allocated,
                                               const AllocatorOptions& options) {
  std::vector<CandidateDevice> candidates;
  for (const GatheredPool& pool : pools) {
    if (pool.incomplete || pool.invalid) continue;
    for (const ResourceSlice* slice : pool.device_slices) {
      for (std::size_t d = 0; d < slice->devices.size(); ++d) {
        candidates.push_back(CandidateDevice{
            &pool, slice, d, DeviceId{pool.driver, pool.pool, slice->devices[d].name}});
      }
    }
  }
  if (options.device_order == DeviceOrder::kUpstream) return candidates;
  std::vector<double> used(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    switch (options.device_order) {
      case DeviceOrder::kMostUsedFirst:
        used[i] = UsedShare(candidates[i], allocated);
        break;
      case DeviceOrder::kLeastUsedFirst:
        used[i] = -UsedShare(candidates[i], allocated);
        break;
      case DeviceOrder::kLowestCostFirst:
        used[i] = options.device_cost
                      ? -options.device_cost(candidates[i].id, candidates[i].device())
                      : 0;
        break;
      case DeviceOrder::kUpstream:
        break;
    }
  }
  std::vector<std::size_t> order(candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return used[a] > used[b]; });
  std::vector<CandidateDevice> sorted;
  sorted.reserve(order.size());
  for (std::size_t i : order) sorted.push_back(candidates[i]);
  return sorted;
}

}  // namespace devshare::dra::allocator
