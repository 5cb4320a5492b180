// devshare/request.hpp — what a container asks for, per vendor
// (spec/hami-behaviour.md §3.3).
//
// Rules (HAMi's GenerateResourceRequests, applied to every vendor with the
// vendor's resource names, memory factor and defaults as data):
//   count       limits, else requests, of `count_resource`; must be a whole
//               int32 (Quantity.AsInt64) or the container asks nothing.
//   memory      limits, else requests; a whole number in
//               [0, MaxInt32 / memory_factor], else the container asks
//               nothing of this vendor (so `16Gi` of gpumem is rejected);
//               memreq = value * memory_factor.
//   percentage  limits, else requests; > 100 clamps to 100, <= 0 means unset
//               (101).
//   defaults    no memory and no percentage: memreq = default_memory, or
//               100 % of a device when default_memory is 0.
//   cores       default_cores, overridden by a whole `core_resource` value.
//
// Thread-safety: pure functions.
#ifndef DEVSHARE_REQUEST_HPP_
#define DEVSHARE_REQUEST_HPP_

#include <vector>

#include "devshare/device.hpp"
#include "devshare/export.hpp"
#include "devshare/objects.hpp"
#include "devshare/vendor.hpp"

namespace devshare {

// The request `container` makes of `vendor`; nums == 0 means none.
DEVSHARE_EXPORT ContainerRequest GenerateRequest(const Container& container,
                                                 const VendorSpec& vendor);

// Requests of one container: one entry per vendor with nums > 0, in the
// order of DeviceConfig::vendors.
using ContainerRequests = std::vector<ContainerRequest>;

// One entry per container, init containers first (HAMi's Resourcereqs).
DEVSHARE_EXPORT std::vector<ContainerRequests> PodRequests(const Pod& pod,
                                                           const DeviceConfig& config);

// True when any container of `requests` asks for any device.
DEVSHARE_EXPORT bool HasRequests(const std::vector<ContainerRequests>& requests);

}  // namespace devshare

#endif  // DEVSHARE_REQUEST_HPP_
