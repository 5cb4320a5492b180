// Private: what devices are taken while the allocator's search runs — by
// claims allocated already (AllocatedState) and by the devices the search
// has taken so far — whole, by consumable capacity, and of the pools'
// shared counters. The search takes and gives back through it.
#ifndef DEVSHARE_SRC_DRA_DEVICE_USAGE_HPP_
#define DEVSHARE_SRC_DRA_DEVICE_USAGE_HPP_

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "devshare/dra_allocate.hpp"
#include "devshare/status.hpp"
#include "dra/candidates.hpp"
#include "dra/capacity.hpp"

namespace devshare::dra::allocator {

class DeviceUsage {
 public:
  // `allocated` must outlive the usage.
  DeviceUsage(const AllocatedState& allocated, bool fractional_capacity_range)
      : allocated_(allocated), fractional_(fractional_capacity_range) {}

  const AllocatedState& allocated() const { return allocated_; }
  bool fractional_capacity_range() const { return fractional_; }

  // Whether the device is held whole by an allocated claim or taken whole
  // by the search.
  bool InUse(const DeviceId& id) const {
    if (allocated_.devices.contains(id)) return true;
    auto it = allocating_.find(id);
    return it != allocating_.end() && !it->second.empty();
  }
  // Whether the search has taken the device whole for claim `claim`.
  bool AllocatingForClaim(const DeviceId& id, std::size_t claim) const {
    auto it = allocating_.find(id);
    return it != allocating_.end() && it->second.contains(claim);
  }
  // Whether any share of the device's capacity is held or being taken.
  bool CapacityInUse(const DeviceId& id) const {
    return allocated_.Shared(id) || allocating_capacity_.contains(id);
  }

  // Whether `requests` fits the candidate's capacity beside what allocated
  // claims and the search consume of it (RequestFitsCapacity's errors).
  Result<bool> FitsCapacity(const Capacities& requests, const CandidateDevice& candidate) const;

  // Takes what the candidate consumes of its pool's shared counters, when
  // they have it left (after allocated claims and the search's earlier
  // devices): true, else false and nothing taken.
  bool ReserveCounters(const CandidateDevice& candidate);
  // Gives back what ReserveCounters took for the candidate.
  void ReleaseCounters(const CandidateDevice& candidate);

  // Marks the device taken whole for `claim`, or no longer.
  void TakeWhole(const DeviceId& id, std::size_t claim) { allocating_[id].insert(claim); }
  void ReleaseWhole(const DeviceId& id, std::size_t claim) { allocating_[id].erase(claim); }

  // Adds `consumed` to the device's capacity being taken; returns whether
  // the device had an entry already (for ReleaseCapacity).
  bool TakeCapacity(const DeviceId& id, const Capacities& consumed);
  // Takes `consumed` back. An entry that existed before stays, empty or not
  // (it marks the device's capacity as in use); a new one goes once it is
  // all zero.
  void ReleaseCapacity(const DeviceId& id, const Capacities& consumed, bool entry_existed);

 private:
  using CounterSets = std::map<std::string, Capacities>;
  using PoolKey = std::pair<std::string, std::string>;  // driver, pool

  const CounterSets& Available(const GatheredPool& pool);
  void ChangeConsumedCounters(const CandidateDevice& candidate, int sign);

  const AllocatedState& allocated_;
  bool fractional_;
  std::map<DeviceId, std::set<std::size_t>> allocating_;  // device -> claims taking it whole
  std::map<DeviceId, Capacities> allocating_capacity_;
  std::map<PoolKey, CounterSets> available_;  // CountersLeft, per pool once
  std::map<PoolKey, CounterSets> consumed_counters_;
};

}  // namespace devshare::dra::allocator

#endif  // DEVSHARE_SRC_DRA_DEVICE_USAGE_HPP_
