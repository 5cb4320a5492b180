// devshare/snapshot.hpp — the cluster as the scheduler sees it: nodes with
// their devices, the pods holding devices, and GPU quotas, kept up to date
// incrementally.
//
// Adding, updating (init-container shrink) or removing a pod costs
// O(devices of that pod) — never a rescan of all pods — and keeps per-node
// aggregates (slots, cores, memory: total and used) so the node score is O(1).
// Removing a pod restores the snapshot exactly; adding a pod twice counts it
// once. A pod may arrive before its node: its usage applies when the node
// registers.
//
// Pods are cached by UID when they carry `hami.io/vgpu-node` (spec §4.8;
// the config's assigned_node_annotation, `volcano.sh/vgpu-node` for Volcano):
// Succeeded/Failed pods are dropped, terminating pods keep their usage, and
// usage comes from each vendor's `...-devices-allocated` annotation collapsed
// over init and app containers.
//
// CPU and memory (for the fgd policy): a node's capacity is its allocatable
// `cpu` and `memory` (unknown, read as unlimited, when absent or not a
// quantity); every pod placed on a node — bound (spec.nodeName), else
// reserved (`hami.io/vgpu-node`) — counts its Pod::cpu_milli and
// Pod::memory_bytes there, whether or not it holds devices. The same rules
// apply as for devices: O(1) per pod, exact on removal, a pod may arrive
// before its node, an update without a node keeps what is counted, and
// Succeeded/Failed pods are dropped.
//
// Thread-safety: not internally synchronised. Concurrent const use (Filter)
// is safe; mutation needs exclusive access.
#ifndef DEVSHARE_SNAPSHOT_HPP_
#define DEVSHARE_SNAPSHOT_HPP_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/dra.hpp"
#include "devshare/dra_allocate.hpp"
#include "devshare/dra_pools.hpp"
#include "devshare/export.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"
#include "devshare/vendor.hpp"
#include "devshare/workload.hpp"

namespace devshare {

namespace internal {
struct SnapshotState;
}

// A device on a node with what is in use on it.
struct DeviceView {
  Device device;  // as registered; device.vendor is the common word
  DeviceUsage usage;
  bool healthy = true;  // registered health, less MIG inconsistencies (§4.3)
};

// A collapsed allocation one cached pod holds on one device (spec §4.8).
struct PodUsage {
  std::string vendor;
  std::string uuid;
  std::int32_t usedmem = 0;
  std::int32_t usedcores = 0;
  std::int32_t slots = 1;
  friend bool operator==(const PodUsage&, const PodUsage&) = default;
};

// A node's CPU and memory: allocatable (kUnknown when not reported) and
// requested by the pods placed on it.
// One namespace's quota on one device resource: the effective limit (the
// tightest of its quotas) and what the namespace's placed pods use.
struct QuotaUse {
  std::string pod_namespace;
  std::string resource;  // a vendor's memory or core resource, e.g. nvidia.com/gpumem
  std::int64_t limit = 0;
  std::int64_t used = 0;
  friend bool operator==(const QuotaUse&, const QuotaUse&) = default;
};

struct NodeCpuMemory {
  static constexpr std::int64_t kUnknown = -1;
  std::int64_t cpu_milli = kUnknown;     // allocatable "cpu", in millicores
  std::int64_t memory_bytes = kUnknown;  // allocatable "memory"
  std::int64_t cpu_requested_milli = 0;
  std::int64_t memory_requested_bytes = 0;
  friend bool operator==(const NodeCpuMemory&, const NodeCpuMemory&) = default;
};

class DEVSHARE_EXPORT ClusterSnapshot {
 public:
  explicit ClusterSnapshot(DeviceConfig config = DefaultDeviceConfig());
  ~ClusterSnapshot();
  ClusterSnapshot(const ClusterSnapshot& other);
  ClusterSnapshot& operator=(const ClusterSnapshot& other);
  ClusterSnapshot(ClusterSnapshot&&) noexcept;
  ClusterSnapshot& operator=(ClusterSnapshot&&) noexcept;

  const DeviceConfig& config() const;

  // Adds or replaces a node and registers the devices of every configured
  // vendor from its annotations (or capacity). The usage of cached pods on
  // the node is re-applied. A vendor whose register annotation does not
  // decode contributes no devices and its error is returned; the node and
  // the other vendors are still registered.
  Status AddNode(const Node& node);
  // Removes a node; its pods stay cached and apply again if it returns.
  // Returns false when the node was unknown.
  bool RemoveNode(std::string_view name);

  // Adds or updates a pod (see the class comment). A Succeeded/Failed pod is
  // removed; a pod without `hami.io/vgpu-node` holds no devices here, and an
  // update without it leaves a cached entry as it is. A pod with a node
  // (spec.nodeName or `hami.io/vgpu-node`) counts its CPU and memory there,
  // devices or not. Errors: an allocation annotation that does not decode
  // (the pod holds no devices, as in HAMi; its CPU and memory still count).
  Status AddPod(const Pod& pod);
  // Removes a pod by UID, its devices and its CPU and memory; returns false
  // when the snapshot held neither.
  bool RemovePod(std::string_view uid);

  // Sets the hard limits of one ResourceQuota object, replacing what it set
  // before: as HAMi, the `limits.<resource>` keys where <resource> is a
  // vendor's memory or core resource (other keys are ignored). Several
  // quotas on one resource in a namespace combine as Kubernetes combines
  // them: the tightest wins. Errors: kMalformed naming each device key
  // whose value is not a whole number within int64 (Quantity.AsInt64: a
  // fraction, or a quantity beyond int64 the API server accepts); the quota does not
  // limit that resource (the other quotas on it still do), its other keys
  // are set.
  Status SetQuota(std::string_view pod_namespace, std::string_view quota_name,
                  const StringMap& hard);
  bool RemoveQuota(std::string_view pod_namespace, std::string_view quota_name);

  // Keeps fgd's fragmentation measure of every node for `workload` (empty:
  // the default mix; see WorkloadClass): every node is measured now, and
  // each later change re-measures only the node it touches, in
  // O(devices x workload shapes) — so Filter under the fgd policies loads a
  // node's measure instead of measuring it, and MeasureFragmentation is
  // O(nodes). They use it when their workload equals `workload` exactly (an
  // empty one matches only an empty one) and measure each node themselves
  // otherwise. A later call replaces the workload. Errors: kInvalidArgument
  // for a class FilterOptions refuses (nothing changes then).
  Status SetFragmentationWorkload(std::span<const WorkloadClass> workload);

  // DRA (resource.k8s.io/v1, devshare/dra.hpp): ResourceSlices by name,
  // DeviceClasses by name, ResourceClaims and ResourceClaimTemplates by
  // namespace and name, each added again to replace it. A node's pools (dra::GatherPools) are
  // gathered when the node, or a slice it sees or that shares a pool with
  // those, changes — O(the node's slices) — and not per allocation; what
  // claims with an allocation hold is added and taken
  // back claim by claim, in O(the claim's devices).
  void AddResourceSlice(dra::ResourceSlice slice);
  bool RemoveResourceSlice(std::string_view name);
  void AddDeviceClass(dra::DeviceClass device_class);
  bool RemoveDeviceClass(std::string_view name);
  void AddResourceClaim(dra::ResourceClaim claim);
  bool RemoveResourceClaim(std::string_view claim_namespace, std::string_view name);
  void AddResourceClaimTemplate(dra::ResourceClaimTemplate claim_template);
  bool RemoveResourceClaimTemplate(std::string_view template_namespace, std::string_view name);
  std::size_t resource_slice_count() const;
  std::size_t resource_claim_count() const;
  const dra::DeviceClasses& device_classes() const;
  // What allocated claims hold (kube-scheduler's allocated-devices view).
  const dra::AllocatedState& dra_allocated() const;
  // The claim, or nullptr.
  const dra::ResourceClaim* FindResourceClaim(std::string_view claim_namespace,
                                              std::string_view name) const;
  // Every claim, by namespace then name (pointers valid until the next change).
  std::vector<const dra::ResourceClaim*> ResourceClaims() const;
  const dra::ResourceClaimTemplate* FindResourceClaimTemplate(std::string_view template_namespace,
                                                              std::string_view name) const;
  // The pools `node` sees, in the allocator's order, or NotFound for an
  // unknown node. Valid until the next change to the snapshot.
  Result<const std::vector<dra::GatheredPool>*> DraPools(std::string_view node) const;
  // dra::Allocate and dra::ExplainNode on `node` with the snapshot's pools,
  // classes and allocated claims; NotFound for an unknown node.
  Result<std::optional<std::vector<dra::Allocation>>> AllocateClaims(
      const std::vector<dra::ResourceClaim>& claims, std::string_view node,
      const dra::AllocatorOptions& options = {}) const;
  Result<dra::NodeExplanation> ExplainClaim(const dra::ResourceClaim& claim, std::string_view node,
                                            const dra::AllocatorOptions& options = {}) const;

  // Read access.
  std::size_t node_count() const;
  // Pods cached for their devices (those with `hami.io/vgpu-node`); pods
  // counted for CPU and memory only are not included.
  std::size_t pod_count() const;
  // Node names in ascending order.
  std::vector<std::string> NodeNames() const;
  // The devices of `node`, or NotFound.
  Result<std::vector<DeviceView>> NodeDevices(std::string_view node) const;
  // The usage a cached pod holds, or NotFound.
  Result<std::vector<PodUsage>> PodUsageOf(std::string_view uid) const;
  // The CPU and memory of `node`, or NotFound.
  Result<NodeCpuMemory> NodeCpuMemoryOf(std::string_view node) const;
  // The node as cached (AddNode's object), or nullptr when it is not.
  const Node* FindNode(std::string_view name) const;
  // Quota: the effective limit (or -1 when unset) and usage of `resource`
  // (for example "nvidia.com/gpumem") in `pod_namespace`.
  std::int64_t QuotaLimit(std::string_view pod_namespace, std::string_view resource) const;
  std::int64_t QuotaUsed(std::string_view pod_namespace, std::string_view resource) const;
  // Every device quota in force: by namespace, then resource name.
  std::vector<QuotaUse> Quotas() const;

  // For the filter (internal).
  const internal::SnapshotState& state() const { return *state_; }

 private:
  std::unique_ptr<internal::SnapshotState> state_;
};

// Collapses a pod's per-container devices into per-device usage (spec §4.8):
// init containers (index < init_containers) contribute the component-wise
// maximum with one slot, app containers the sum with a slot per occurrence,
// and the result is the component-wise maximum of the two, sorted by UUID.
DEVSHARE_EXPORT std::vector<PodUsage> CollapseUsage(const PodSingleDevice& containers,
                                                    std::string_view vendor,
                                                    std::size_t init_containers);
// The same counting app containers only (after the init-container shrink).
DEVSHARE_EXPORT std::vector<PodUsage> AppOnlyUsage(const PodSingleDevice& containers,
                                                   std::string_view vendor,
                                                   std::size_t init_containers);

}  // namespace devshare

#endif  // DEVSHARE_SNAPSHOT_HPP_
