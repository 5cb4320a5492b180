// Private: the claims' requests and constraints as the allocator's search
// takes them, validated first (validateDeviceRequest of upstream).
#ifndef DEVSHARE_SRC_DRA_REQUESTS_HPP_
#define DEVSHARE_SRC_DRA_REQUESTS_HPP_

#include <compare>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_allocate.hpp"
#include "devshare/dra_pools.hpp"
#include "devshare/status.hpp"
#include "dra/candidates.hpp"
#include "dra/constraint.hpp"

namespace devshare::dra::allocator {

// Upstream allows a claim at most this many results
// (resourceapi.AllocationResultsMaxSize).
inline constexpr std::size_t kAllocationResultsMaxSize = 32;

// A request of a claim: its index in the claims, in the claim's requests,
// and in the request's firstAvailable (0 for one with `exactly`).
struct RequestKey {
  std::size_t claim = 0;
  std::size_t request = 0;
  std::size_t sub = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>
  friend auto operator<=>(const RequestKey&, const RequestKey&) = default;
};

// A request (or subrequest) ready for the search. Points into the claims,
// classes and pools it was prepared from, which must outlive it.
struct RequestData {
  const DeviceSelection* selection = nullptr;
  std::string name;         // the request's, or the subrequest's
  std::string parent_name;  // the request's, for a subrequest
  const DeviceClass* device_class = nullptr;
  std::size_t num_devices = 0;               // how many devices it takes
  std::vector<CandidateDevice> all_devices;  // allocation mode All: each of them
  bool has_subrequests = false;
  // "request", or "request/subrequest": the name a result carries.
  std::string FullName() const { return has_subrequests ? parent_name + "/" + name : name; }
};

struct PreparedClaims {
  std::map<RequestKey, RequestData> requests;
  std::vector<std::vector<Constraint>> constraints;  // per claim, in order
};

class DeviceMatcher;

// Every request of `claims` with its DeviceClass from `classes`, its
// device count (for allocation mode All: the devices of `pools` that
// `matcher` selects and whose capacity can take it), and each claim's
// constraints. Errors, as upstream words them: a missing DeviceClass, All
// devices of an incomplete or invalid pool, a selector's error, more than
// kAllocationResultsMaxSize devices for a claim, an empty constraint.
Result<PreparedClaims> PrepareClaims(const std::vector<ResourceClaim>& claims,
                                     const std::vector<GatheredPool>& pools,
                                     const DeviceClasses& classes, bool fractional_capacity_range,
                                     DeviceMatcher& matcher);

}  // namespace devshare::dra::allocator

#endif  // DEVSHARE_SRC_DRA_REQUESTS_HPP_
