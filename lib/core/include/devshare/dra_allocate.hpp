// devshare/dra_allocate.hpp — allocating devices to ResourceClaims on one
// node as kube-scheduler v1.37 does (policy "upstream"), or in devshare's
// device orders (binpack, spread).
//
// kube-scheduler's DRA plugin runs k8s.io/dynamic-resource-allocation's
// structured allocator for each candidate node; with v1.37's default
// feature gates that is its "incubating" variant, reproduced here:
// the claims' requests in order, each request's devices in pool order
// (driver, then pool name), slice-name order and device order, the first
// that fits taken, backtracking when a later request or constraint fails
// (firstAvailable alternatives in order). What "fits" covers: the
// DeviceClass's and the request's CEL selectors, devices already held by
// allocated claims or by earlier requests, shared counters (partitionable
// devices), consumable capacity (allowMultipleAllocations: the request
// rounded up by the capacity's requestPolicy), device taints and the
// request's tolerations, matchAttribute and distinctAttribute
// constraints, and per-device node selection. Admin access is supported;
// compatibility groups, list-type and derived attributes (alpha, off by
// default) are not.
//
// The result is exact for one node. kube-scheduler picks among feasible
// nodes by score and at random among ties, which devshare does not
// reproduce: "upstream" across nodes is documented as such.
//
// Share IDs: upstream gives each share of a device a random UUID;
// devshare derives one from the claim's UID and the result's index, so the
// same input gives the same output.
//
// Thread-safety: pure function over values.
#ifndef DEVSHARE_DRA_ALLOCATE_HPP_
#define DEVSHARE_DRA_ALLOCATE_HPP_

#include <compare>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_cel.hpp"
#include "devshare/dra_pools.hpp"
#include "devshare/export.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"

namespace devshare::dra {

struct DeviceId {
  std::string driver;
  std::string pool;
  std::string device;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>
  friend auto operator<=>(const DeviceId&, const DeviceId&) = default;
};

// What claims allocated already hold, as kube-scheduler's DRA plugin
// gathers it: devices held whole, and shares of devices that allow
// multiple allocations with the capacity they consume. A result with admin
// access holds nothing.
struct AllocatedState {
  std::set<DeviceId> devices;
  std::set<std::pair<DeviceId, std::string>> shares;  // device, share ID
  std::map<DeviceId, std::map<std::string, Quantity>> consumed_capacity;
  // Adds what `allocation` holds.
  DEVSHARE_EXPORT void Add(const Allocation& allocation);
  // Takes back what `allocation` holds (after Add of the same allocation).
  DEVSHARE_EXPORT void Remove(const Allocation& allocation);
  // Whether any share of the device is held.
  DEVSHARE_EXPORT bool Shared(const DeviceId& id) const;
  // Whether the device is held whole, or any share of it is.
  DEVSHARE_EXPORT bool Holds(const DeviceId& id) const;
};

// The order devices are tried in. kUpstream is kube-scheduler's; the others
// are devshare's policies on one node: the device whose capacity allocated
// claims consume most (binpack: fill shared GPUs before opening others) or
// least (spread) first, or the lowest AllocatorOptions::device_cost first
// (fgd), upstream's order breaking ties. The search is the same exhaustive
// one in every order, so whether claims fit never depends on the order,
// only which devices they get.
enum class DeviceOrder { kUpstream, kMostUsedFirst, kLeastUsedFirst, kLowestCostFirst };

// CEL selectors compiled once for many Allocate calls. Not synchronised.
class DEVSHARE_EXPORT SelectorCache {
 public:
  // The compiled `expression`, or its compile error.
  const Result<Selector>& Compile(std::string_view expression);

 private:
  std::map<std::string, Result<Selector>, std::less<>> compiled_;
};

struct AllocatorOptions {
  // The DRAFractionalCapacityRange gate (off in v1.37 by default): capacity
  // rounding in thousandths rather than whole units.
  bool fractional_capacity_range = false;
  DeviceOrder device_order = DeviceOrder::kUpstream;
  // kLowestCostFirst: a device's cost, called once per device and call.
  std::function<double(const DeviceId&, const Device&)> device_cost;
  // Where compiled selectors are kept across calls; nullptr: one call only.
  SelectorCache* selector_cache = nullptr;
};

// DeviceClasses by name.
using DeviceClasses = std::map<std::string, DeviceClass, std::less<>>;

// The allocation of each of `claims` (unallocated, in order) on `node`
// from the cluster's `slices` — with default options as v1.37's allocator
// chooses it — or nullopt when they do not all fit there. An error is what upstream reports as one
// (a missing DeviceClass, a CEL compile or runtime error, "All" devices
// from an incomplete or invalid pool, a constraint that All devices
// cannot satisfy), or kUnsupported for a CEL selector devshare does not
// evaluate.
DEVSHARE_EXPORT Result<std::optional<std::vector<Allocation>>> Allocate(
    const std::vector<ResourceClaim>& claims, const Node& node,
    const std::vector<ResourceSlice>& slices, const DeviceClasses& classes,
    const AllocatedState& allocated, const AllocatorOptions& options = {});

// What a request with `requests` (capacity name to amount) consumes of each
// of `device`'s capacities when it shares the device: a capacity it names,
// rounded up by the capacity's requestPolicy; one it does not name, the
// policy's default, else all of it. Errors: a rounding that passes what a
// Quantity holds, naming the capacity.
DEVSHARE_EXPORT Result<std::map<std::string, Quantity>> ConsumedCapacity(
    const std::map<std::string, Quantity>& requests, const Device& device,
    bool fractional_capacity_range = false);

// The largest share of any of `device`'s capacities that `consumed` and
// `extra` (either may be null) take together: 0 for none, 1 for all of one.
DEVSHARE_EXPORT double ConsumedShare(const Device& device,
                                     const std::map<std::string, Quantity>* consumed,
                                     const std::map<std::string, Quantity>* extra = nullptr);

// What is left of each of `pool`'s shared counters (counter set -> counter
// -> amount) once the devices `allocated` holds (whole or a share) have
// taken what they consume, as kube-scheduler's allocator counts it.
DEVSHARE_EXPORT std::map<std::string, std::map<std::string, Quantity>> CountersLeft(
    const GatheredPool& pool, const AllocatedState& allocated);

// The same from the pools GatherPools gave for `node`.
DEVSHARE_EXPORT Result<std::optional<std::vector<Allocation>>> Allocate(
    const std::vector<ResourceClaim>& claims, const Node& node,
    const std::vector<GatheredPool>& pools, const DeviceClasses& classes,
    const AllocatedState& allocated, const AllocatorOptions& options = {});

// Why a device can or cannot take a request, the request taken alone (the
// claim's constraints and its other requests aside).
struct DeviceVerdict {
  DeviceId device;
  std::string request;  // "request" or "request/subrequest"
  bool fits = false;
  std::string reason;  // why not: in use, not selected, capacity, taint, counters
};

struct NodeExplanation {
  std::vector<DeviceVerdict> devices;  // each request's devices, in the order tried
  std::vector<std::string> pools;      // pools the node cannot use: incomplete, invalid
};

// For `claim` on `node`: every request (and firstAvailable alternative)
// against every device the node sees, in the order `options` tries them.
// Errors as Allocate's, for the claim's requests (a missing DeviceClass,
// ...); a selector that errs on a device is that device's reason.
DEVSHARE_EXPORT Result<NodeExplanation> ExplainNode(const ResourceClaim& claim, const Node& node,
                                                    const std::vector<ResourceSlice>& slices,
                                                    const DeviceClasses& classes,
                                                    const AllocatedState& allocated,
                                                    const AllocatorOptions& options = {});
DEVSHARE_EXPORT Result<NodeExplanation> ExplainNode(const ResourceClaim& claim, const Node& node,
                                                    const std::vector<GatheredPool>& pools,
                                                    const DeviceClasses& classes,
                                                    const AllocatedState& allocated,
                                                    const AllocatorOptions& options = {});

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_ALLOCATE_HPP_
