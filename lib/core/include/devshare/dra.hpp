// devshare/dra.hpp — Kubernetes Dynamic Resource Allocation (resource.k8s.io/v1)
// as the scheduler reads and writes it: ResourceSlices (the devices drivers
// publish), DeviceClasses, ResourceClaims and ResourceClaimTemplates (what
// pods ask for) and the allocation result (what a scheduler decides).
//
// The types keep what allocation needs, in the API's own terms; fields the
// allocator does not read (opaque driver configuration, device status,
// conditions) are not kept. Decoders are total, like every decoder of
// devshare: any JSON gives either a value or a kMalformed Status naming the
// field (`spec.devices[2].capacity["memory"].value`). Unknown fields are
// ignored, as a Kubernetes client ignores them. Where the API server
// defaults a field (allocationMode, count), the decoder applies the same
// default, so a hand-written object means what the server would store.
//
// Quantities are exact: a DraQuantity is a whole number of thousandths
// (Go's resource.Quantity compared with Cmp is exact too); a quantity finer
// than 1m or beyond ±9.2e15 is refused by name rather than rounded.
//
// Encoders write the JSON the API server accepts for the same value; decode
// after encode gives the value back.
//
// Thread-safety: value types and pure functions.
#ifndef DEVSHARE_DRA_HPP_
#define DEVSHARE_DRA_HPP_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "devshare/export.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"

namespace devshare::dra {

// A resource quantity in thousandths ("16Gi" is 17179869184000, "500m" 500).
struct Quantity {
  std::int64_t milli = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>
  friend auto operator<=>(const Quantity&, const Quantity&) = default;
};

// Parses a Kubernetes quantity exactly; nullopt for text that is not a
// quantity or cannot be held exactly in thousandths.
DEVSHARE_EXPORT std::optional<Quantity> ParseQuantity(std::string_view text);
// The quantity as the API server accepts it: "12", "1500m", "-3".
DEVSHARE_EXPORT std::string FormatQuantity(Quantity q);

// A device attribute's value (exactly one of the API's fields). A version
// is a semantic version string, kept as text.
struct Version {
  std::string text;
  friend bool operator==(const Version&, const Version&) = default;
};
using AttributeValue =
    std::variant<std::int64_t, bool, std::string, Version, std::vector<std::int64_t>,
                 std::vector<bool>, std::vector<std::string>, std::vector<Version>>;

// The range a capacity request must fall in (all optional in the API; a
// step counts from min).
struct CapacityRange {
  std::optional<Quantity> min;
  std::optional<Quantity> max;
  std::optional<Quantity> step;
  friend bool operator==(const CapacityRange&, const CapacityRange&) = default;
};

// How a device shared by several allocations (allowMultipleAllocations)
// rounds a request of its capacity: the default when a request names none,
// and either a list of valid values or a range.
struct CapacityRequestPolicy {
  std::optional<Quantity> default_value;
  std::vector<Quantity> valid_values;  // sorted ascending by the API's validation
  std::optional<CapacityRange> valid_range;
  friend bool operator==(const CapacityRequestPolicy&, const CapacityRequestPolicy&) = default;
};

struct Capacity {
  Quantity value;
  std::optional<CapacityRequestPolicy> request_policy;
  friend bool operator==(const Capacity&, const Capacity&) = default;
};

// Node selectors are core/v1's (devshare/objects.hpp).
using devshare::NodeSelector;
using devshare::NodeSelectorMatches;
using devshare::NodeSelectorRequirement;
using devshare::NodeSelectorTerm;

struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, NoExecute, None
  friend bool operator==(const DeviceTaint&, const DeviceTaint&) = default;
};

struct CounterConsumption {
  std::string counter_set;
  std::map<std::string, Quantity> counters;
  // Alpha (DRADeviceCompatibilityGroups, off by default): a slice that uses
  // them is left out of its pool, as v1.37's allocator does.
  std::vector<std::string> compatibility_groups;
  friend bool operator==(const CounterConsumption&, const CounterConsumption&) = default;
};

struct CounterSet {
  std::string name;
  std::map<std::string, Quantity> counters;
  friend bool operator==(const CounterSet&, const CounterSet&) = default;
};

// Where a device or slice is available: exactly one of these in the API.
struct NodeScope {
  std::string node_name;                      // one node
  std::optional<NodeSelector> node_selector;  // the nodes it selects
  bool all_nodes = false;                     // every node
  friend bool operator==(const NodeScope&, const NodeScope&) = default;
};

struct Device {
  std::string name;
  // Keyed by the name as published: "model" (in the driver's domain) or
  // "domain/name" (QualifiedAttributeName resolves both).
  std::map<std::string, AttributeValue> attributes;
  std::map<std::string, Capacity> capacity;
  std::vector<CounterConsumption> consumes_counters;
  // Only with the slice's perDeviceNodeSelection.
  std::optional<NodeScope> node_scope;
  std::vector<DeviceTaint> taints;
  bool binds_to_node = false;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  bool allow_multiple_allocations = false;
  friend bool operator==(const Device&, const Device&) = default;
};

struct Pool {
  std::string name;
  std::int64_t generation = 0;
  std::int64_t resource_slice_count = 0;
  friend bool operator==(const Pool&, const Pool&) = default;
};

struct ResourceSlice {
  std::string name;
  std::string resource_version;
  std::string driver;
  Pool pool;
  NodeScope node_scope;  // empty everywhere when per_device_node_selection
  bool per_device_node_selection = false;
  std::vector<Device> devices;
  std::vector<CounterSet> shared_counters;
  friend bool operator==(const ResourceSlice&, const ResourceSlice&) = default;
};

struct DeviceClass {
  std::string name;
  std::string resource_version;
  std::vector<std::string> selectors;  // CEL expressions
  std::optional<std::string> extended_resource_name;
  friend bool operator==(const DeviceClass&, const DeviceClass&) = default;
};

enum class AllocationMode { kExactCount, kAll };

struct DeviceToleration {
  std::string key;
  std::string op = "Equal";  // Equal or Exists
  std::string value;
  std::string effect;  // empty: every effect
  std::optional<std::int64_t> toleration_seconds;
  friend bool operator==(const DeviceToleration&, const DeviceToleration&) = default;
};

// What one request (or one of its firstAvailable alternatives) asks for.
struct DeviceSelection {
  std::string device_class_name;
  std::vector<std::string> selectors;  // CEL expressions
  AllocationMode allocation_mode = AllocationMode::kExactCount;
  std::int64_t count = 1;  // with kExactCount
  bool admin_access = false;
  std::vector<DeviceToleration> tolerations;
  std::map<std::string, Quantity> capacity_requests;
  friend bool operator==(const DeviceSelection&, const DeviceSelection&) = default;
};

struct DeviceSubRequest {
  std::string name;
  DeviceSelection selection;
  friend bool operator==(const DeviceSubRequest&, const DeviceSubRequest&) = default;
};

// Exactly one of `exactly` and a non-empty `first_available`.
struct DeviceRequest {
  std::string name;
  std::optional<DeviceSelection> exactly;
  std::vector<DeviceSubRequest> first_available;
  friend bool operator==(const DeviceRequest&, const DeviceRequest&) = default;
};

struct DeviceConstraint {
  std::vector<std::string> requests;  // empty: every request
  std::optional<std::string> match_attribute;
  std::optional<std::string> distinct_attribute;
  friend bool operator==(const DeviceConstraint&, const DeviceConstraint&) = default;
};

struct ClaimSpec {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  friend bool operator==(const ClaimSpec&, const ClaimSpec&) = default;
};

struct AllocatedDevice {
  std::string request;  // "request" or "request/subrequest"
  std::string driver;
  std::string pool;
  std::string device;
  bool admin_access = false;
  std::vector<DeviceToleration> tolerations;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<std::string> share_id;
  std::map<std::string, Quantity> consumed_capacity;
  friend bool operator==(const AllocatedDevice&, const AllocatedDevice&) = default;
};

struct Allocation {
  std::vector<AllocatedDevice> devices;
  std::optional<NodeSelector> node_selector;
  // status.allocation.allocationTimestamp (RFC 3339, whole seconds): when the
  // allocation was written; nullopt where unknown (the allocators leave it
  // so). kube-scheduler v1.37 sets it whenever it writes a claim's status
  // and the field is immutable with the allocation, so a writer must set it
  // with the allocation: kube-scheduler could not add a reservation later.
  std::optional<std::int64_t> allocated_unix_seconds;
  friend bool operator==(const Allocation&, const Allocation&) = default;
};

struct ClaimConsumer {
  std::string api_group;  // "" for pods
  std::string resource;   // "pods"
  std::string name;
  std::string uid;
  friend bool operator==(const ClaimConsumer&, const ClaimConsumer&) = default;
};

struct ResourceClaim {
  std::string claim_namespace;
  std::string name;
  std::string uid;
  std::string resource_version;
  ClaimSpec spec;
  std::optional<Allocation> allocation;
  std::vector<ClaimConsumer> reserved_for;
  friend bool operator==(const ResourceClaim&, const ResourceClaim&) = default;
};

struct ResourceClaimTemplate {
  std::string template_namespace;
  std::string name;
  ClaimSpec spec;
  friend bool operator==(const ResourceClaimTemplate&, const ResourceClaimTemplate&) = default;
};

// A qualified name split as CEL sees it: `device.attributes[domain][name]`.
// An unqualified name belongs to the driver's domain.
struct QualifiedName {
  std::string_view domain;
  std::string_view name;
};
DEVSHARE_EXPORT QualifiedName SplitQualifiedName(std::string_view key, std::string_view driver);

// Decoders of the JSON the API server serves (kind and apiVersion are not
// checked: a List's items carry neither).
DEVSHARE_EXPORT Result<ResourceSlice> DecodeResourceSlice(std::string_view json);
DEVSHARE_EXPORT Result<DeviceClass> DecodeDeviceClass(std::string_view json);
DEVSHARE_EXPORT Result<ResourceClaim> DecodeResourceClaim(std::string_view json);
DEVSHARE_EXPORT Result<ResourceClaimTemplate> DecodeResourceClaimTemplate(std::string_view json);

// Encoders: whole objects with apiVersion resource.k8s.io/v1 and kind.
DEVSHARE_EXPORT std::string EncodeResourceSlice(const ResourceSlice& slice);
DEVSHARE_EXPORT std::string EncodeDeviceClass(const DeviceClass& device_class);
DEVSHARE_EXPORT std::string EncodeResourceClaim(const ResourceClaim& claim);
DEVSHARE_EXPORT std::string EncodeResourceClaimTemplate(
    const ResourceClaimTemplate& claim_template);
// The `status.allocation` object alone, as a scheduler writes it.
DEVSHARE_EXPORT std::string EncodeAllocation(const Allocation& allocation);
// The JSON merge patch of a claim's /status that sets its allocation and
// reservedFor (nullopt and empty: removed) at `resource_version` (a claim
// changed since is refused with 409), as a scheduler writes them.
DEVSHARE_EXPORT std::string EncodeClaimStatusPatch(const std::optional<Allocation>& allocation,
                                                   const std::vector<ClaimConsumer>& reserved_for,
                                                   std::string_view resource_version);

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_HPP_
