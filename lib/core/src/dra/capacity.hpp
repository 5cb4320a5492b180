// Private: consumable capacity (devices that allow multiple allocations),
// the allocator's arithmetic: what a request consumes of a capacity under
// its requestPolicy, and whether it fits beside what others consume. The
// public ConsumedCapacity and ConsumedShare (devshare/dra_allocate.hpp) are
// defined in capacity.cpp too.
#ifndef DEVSHARE_SRC_DRA_CAPACITY_HPP_
#define DEVSHARE_SRC_DRA_CAPACITY_HPP_

#include <map>
#include <optional>
#include <string>

#include "devshare/dra.hpp"
#include "devshare/status.hpp"

namespace devshare::dra::allocator {

// Capacity name -> amount.
using Capacities = std::map<std::string, Quantity>;

// What a request of `requested` (nullopt: the request does not name the
// capacity) consumes of `capacity`: the policy's default or all of it when
// unnamed; else rounded up to the policy's valid range step or next valid
// value. Errors: a rounding past what a Quantity holds.
Result<Quantity> ConsumedBy(const std::optional<Quantity>& requested, const Capacity& capacity,
                            bool fractional);

// Whether `value` is outside `policy` (above the range's max, off its step,
// not a valid value); the policy's default never is.
bool ViolatesPolicy(Quantity value, const std::optional<CapacityRequestPolicy>& policy,
                    bool fractional);

// The amount `requests` names for capacity `name`, or nullopt.
std::optional<Quantity> FindRequest(const Capacities& requests, const std::string& name);

// Whether a request of `requests` fits `device` on top of what is consumed
// already (`current`) and by allocations in progress (`allocating`, may be
// null): it names only capacities the device has, respects each policy, and
// the total stays within each capacity. Errors name the capacity.
Result<bool> RequestFitsCapacity(const Capacities& current, const Capacities& requests,
                                 const Device& device, const Capacities* allocating,
                                 bool fractional);

}  // namespace devshare::dra::allocator

#endif  // DEVSHARE_SRC_DRA_CAPACITY_HPP_
