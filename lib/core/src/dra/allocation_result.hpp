// Private: the devices the allocator's search took, and the Allocations
// built from them (upstream's allocation results and node selector).
#ifndef DEVSHARE_SRC_DRA_ALLOCATION_RESULT_HPP_
#define DEVSHARE_SRC_DRA_ALLOCATION_RESULT_HPP_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"
#include "dra/candidates.hpp"
#include "dra/capacity.hpp"

namespace devshare::dra::allocator {

// A device the search took for a request. Points into the claims and pools.
struct DeviceResult {
  std::string request;  // full name: "request" or "request/sub"
  CandidateDevice candidate;
  bool admin_access = false;
  const DeviceSelection* selection = nullptr;
  std::optional<std::string> share_id;  // a share of a device allowing multiple allocations
  Capacities consumed_capacity;         // what the share consumes
};

// The share ID of `claim`'s `index`th result: a UUID-shaped hash of the
// claim's UID (else its namespace and name) and the index, the same for the
// same input (upstream draws a random UUID).
std::string ShareId(const ResourceClaim& claim, std::size_t index);

// createNodeSelector: the node the devices of `results` restrict a claim to
// — `node` itself when a device is local to it (nodeName or bindsToNode),
// else the union of the single-term selectors of the slices (or devices)
// used, or nullopt for none. Errors: a node selector with several terms.
Result<std::optional<NodeSelector>> NodeSelectorFor(const std::vector<DeviceResult>& results,
                                                    const Node& node);

// The allocation of each claim from its results (`results[c]` for claim c):
// the devices with the request's tolerations and the device's binding
// conditions, and NodeSelectorFor's node selector (and its errors).
Result<std::vector<Allocation>> BuildAllocations(
    const std::vector<std::vector<DeviceResult>>& results, const Node& node);

}  // namespace devshare::dra::allocator

#endif  // DEVSHARE_SRC_DRA_ALLOCATION_RESULT_HPP_
