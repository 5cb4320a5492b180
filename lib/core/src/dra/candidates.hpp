// Private: the devices the allocator's search tries for a request, and the
// order it tries them in (AllocatorOptions::device_order).
#ifndef DEVSHARE_SRC_DRA_CANDIDATES_HPP_
#define DEVSHARE_SRC_DRA_CANDIDATES_HPP_

#include <cstddef>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_allocate.hpp"
#include "devshare/dra_pools.hpp"

namespace devshare::dra::allocator {

// A device of a gathered pool: its slice and index there, and its ID. It
// points into the pools and slices, which must outlive it.
struct CandidateDevice {
  const GatheredPool* pool;
  const ResourceSlice* slice;
  std::size_t index;
  DeviceId id;
  const Device& device() const { return slice->devices[index]; }
};

// The devices of `pools` a request may take, in the order they are tried:
// upstream's (pool, slice, device; incomplete and invalid pools left out),
// or by `options.device_order` — the share of the device's capacity that
// `allocated` consumes, most first (binpack) or least first (spread), or
// the lowest device_cost first — upstream's order breaking ties. Only the
// order changes: the search stays exhaustive, so whether claims fit does
// not depend on it.
std::vector<CandidateDevice> OrderedCandidates(const std::vector<GatheredPool>& pools,
                                               const AllocatedState& allocated,
                                               const AllocatorOptions& options);

}  // namespace devshare::dra::allocator

#endif  // DEVSHARE_SRC_DRA_CANDIDATES_HPP_
