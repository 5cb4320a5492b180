// What devices allocated claims and the search take (dra/device_usage.hpp),
// and the public CountersLeft.
#include "dra/device_usage.hpp"

namespace devshare::dra {

using allocator::Capacities;

std::map<std::string, Capacities> CountersLeft(const GatheredPool& pool,
                                               const AllocatedState& allocated) {
  std::map<std::string, Capacities> sets;
  for (const auto& [name, set] : pool.counter_sets) sets[name] = set->counters;
  for (const auto* group : {&pool.device_slices, &pool.device_slices_elsewhere}) {
    for (const ResourceSlice* slice : *group) {
      for (const Device& device : slice->devices) {
        if (!allocated.Holds(DeviceId{slice->driver, slice->pool.name, device.name})) continue;
        for (const CounterConsumption& c : device.consumes_counters) {
          Capacities& available = sets[c.counter_set];
          for (const auto& [name, q] : c.counters) {
            auto counter = available.find(name);
            if (counter != available.end()) counter->second.milli -= q.milli;
          }
        }
      }
    }
  }
  return sets;
}

namespace allocator {

Result<bool> DeviceUsage::FitsCapacity(const Capacities& requests,
                                       const CandidateDevice& candidate) const {
  static const Capacities kNone;
  auto current = allocated_.consumed_capacity.find(candidate.id);
  auto allocating = allocating_capacity_.find(candidate.id);
  return RequestFitsCapacity(
      current == allocated_.consumed_capacity.end() ? kNone : current->second, requests,
      candidate.device(), allocating == allocating_capacity_.end() ? nullptr : &allocating->second,
      fractional_);
}

const DeviceUsage::CounterSets& DeviceUsage::Available(const GatheredPool& pool) {
  const PoolKey key{pool.driver, pool.pool};
  auto it = available_.find(key);
  if (it != available_.end()) return it->second;
  return available_.emplace(key, CountersLeft(pool, allocated_)).first->second;
}

void DeviceUsage::ChangeConsumedCounters(const CandidateDevice& candidate, int sign) {
  CounterSets& consumed = consumed_counters_[{candidate.pool->driver, candidate.pool->pool}];
  for (const CounterConsumption& c : candidate.device().consumes_counters) {
    Capacities& set = consumed[c.counter_set];
    for (const auto& [name, q] : c.counters) set[name].milli += sign * q.milli;
  }
}

bool DeviceUsage::ReserveCounters(const CandidateDevice& candidate) {
  const CounterSets& available = Available(*candidate.pool);
  ChangeConsumedCounters(candidate, +1);
  const CounterSets& consumed = consumed_counters_[{candidate.pool->driver, candidate.pool->pool}];
  for (const auto& [set_name, counters] : available) {
    auto used = consumed.find(set_name);
    for (const auto& [name, q] : counters) {
      Quantity taken{};
      if (used != consumed.end()) {
        if (auto u = used->second.find(name); u != used->second.end()) taken = u->second;
      }
      if (q < taken) {
        ChangeConsumedCounters(candidate, -1);
        return false;
      }
    }
  }
  return true;
}

void DeviceUsage::ReleaseCounters(const CandidateDevice& candidate) {
  ChangeConsumedCounters(candidate, -1);
}

bool DeviceUsage::TakeCapacity(const DeviceId& id, const Capacities& consumed) {
  const bool existed = allocating_capacity_.contains(id);
  Capacities& allocating = allocating_capacity_[id];
  for (const auto& [name, q] : consumed) allocating[name].milli += q.milli;
  return existed;
}

void DeviceUsage::ReleaseCapacity(const DeviceId& id, const Capacities& consumed,
                                  bool entry_existed) {
  auto it = allocating_capacity_.find(id);
  bool empty = true;
  for (const auto& [name, q] : consumed) it->second[name].milli -= q.milli;
  for (const auto& [name, q] : it->second) empty = empty && q.milli == 0;
  if (empty && !entry_existed) allocating_capacity_.erase(it);
}

}  // namespace allocator

}  // namespace devshare::dra
