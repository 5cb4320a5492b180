// devshare/dra_pools.hpp — the resource pools a node can allocate from,
// gathered from the cluster's ResourceSlices as Kubernetes v1.37's structured allocator
// gathers them (k8s.io/dynamic-resource-allocation, GatherPools of the
// "incubating" variant the default feature gates select).
//
// A pool is (driver, pool name). Only slices of its newest generation
// count, and only when all `resourceSliceCount` of them are there; a pool
// seen at an older generation than another slice of it is obsolete and
// left out; one with missing slices is kept as incomplete (its devices
// must not be allocated, and a request for "All" devices fails on it).
// A pool whose devices repeat a name, or consume counters its counter sets
// do not define, is invalid.
//
// Thread-safety: pure functions; a GatheredPool points into the slices it
// was gathered from and is valid while they are.
#ifndef DEVSHARE_DRA_POOLS_HPP_
#define DEVSHARE_DRA_POOLS_HPP_

#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/export.hpp"
#include "devshare/objects.hpp"

namespace devshare::dra {

struct GatheredPool {
  std::string driver;
  std::string pool;
  bool incomplete = false;
  bool invalid = false;
  std::string invalid_reason;
  // Slices with devices that `node` can use, in name order.
  std::vector<const ResourceSlice*> device_slices;
  // The pool's other device slices (they consume the same counters).
  std::vector<const ResourceSlice*> device_slices_elsewhere;
  std::map<std::string, const CounterSet*> counter_sets;
};

// Whether a slice or device scope selects `node`.
DEVSHARE_EXPORT bool ScopeSelects(const NodeScope& scope, const Node& node);

// The pools `node` sees among `slices` (every slice of the cluster, taken
// in name order: where slices of one generation disagree on the pool's
// slice count, the first one's counts), sorted
// by driver then pool name, pools with devices that have binding
// conditions last (each group sorted).
DEVSHARE_EXPORT std::vector<GatheredPool> GatherPools(const std::vector<ResourceSlice>& slices,
                                                      const Node& node);

// Every slice of the pool (driver, pool name), at any generation.
using PoolSlices = std::function<std::vector<const ResourceSlice*>(std::string_view driver,
                                                                   std::string_view pool)>;
// The same from an index: `candidates` hold at least every slice that may
// be for `node` (those naming it, and those with a node selector, all
// nodes or per-device node selection), in any order; `pool_slices` gives a
// pool's slices when only some of them are for the node.
DEVSHARE_EXPORT std::vector<GatheredPool> GatherPools(
    std::span<const ResourceSlice* const> candidates, const Node& node,
    const PoolSlices& pool_slices);

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_POOLS_HPP_
