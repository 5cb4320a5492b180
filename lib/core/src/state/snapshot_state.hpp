// Private: the state behind ClusterSnapshot, shared with the filter.
#ifndef DEVSHARE_SRC_SNAPSHOT_STATE_HPP_
#define DEVSHARE_SRC_SNAPSHOT_STATE_HPP_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/vendor.hpp"
#include "devshare/workload.hpp"
#include "state/dra_state.hpp"
#include "state/fgd_model.hpp"

namespace devshare::internal {

struct MigInUse {
  std::string profile;
  MigPlacement placement;
};

// The numbers of one device the filter needs, packed and stored contiguously
// for all nodes so that filtering streams through memory without touching
// strings. It is the one home of a device's usage.
struct HotDevice {
  std::int32_t count = 0;
  std::int32_t devmem = 0;
  std::int32_t devcore = 0;
  std::int32_t numa = 0;
  std::int32_t used = 0;
  std::int32_t usedmem = 0;
  std::int32_t usedcores = 0;
  std::uint32_t index = 0;
  std::uint32_t vendor = 0;  // index into DeviceConfig::vendors
  bool healthy = true;       // registered health less MIG inconsistencies
  bool is_mig = false;       // mode "mig"
};

// The rest of a device: strings and MIG bookkeeping.
struct DeviceSlot {
  Device info;
  std::uint32_t vendor = 0;  // index into DeviceConfig::vendors
  bool is_mig = false;       // info.mode == "mig"
  std::vector<MigInUse> mig_in_use;
  std::int32_t mig_unreserved_users = 0;      // pods on a MIG device without a reservation
  std::int32_t mig_foreign_reservations = 0;  // MIG reservations on a non-MIG device

  bool Healthy(std::int32_t orphan_reservations) const {
    if (!info.health) return false;
    if (is_mig) return mig_unreserved_users == 0 && orphan_reservations == 0;
    return mig_foreign_reservations == 0;
  }
};

struct NodeState {
  std::string name;
  bool present = false;  // false once removed (the slot is reused by name)
  Node object;
  std::vector<DeviceSlot> devices;
  // devices[i]'s numbers are SnapshotState::hot[hot_begin + i]; the range
  // has room for hot_capacity devices.
  std::uint32_t hot_begin = 0;
  std::uint32_t hot_capacity = 0;
  std::vector<std::string> cordoned;         // sorted
  std::vector<DevicePairScore> pair_scores;  // sorted by uuid
  std::int32_t orphan_mig_reservations = 0;  // reservations naming no device here
  // Aggregates over all devices (spec §5.1), kept up to date incrementally.
  std::int64_t total_slots = 0, total_cores = 0, total_mem = 0;
  std::int64_t used_slots = 0, used_cores = 0, used_mem = 0;
  // Allocatable CPU (millicores) and memory (bytes); kUnknown when the node
  // does not report them, which the fgd policy reads as unlimited.
  static constexpr std::int64_t kUnknown = -1;
  std::int64_t cpu_capacity = kUnknown, memory_capacity = kUnknown;
  // CPU and memory requested by the pods on the node: a copy of
  // SnapshotState::requested for this name, kept up to date incrementally.
  std::int64_t cpu_requested = 0, memory_requested = 0;
};

// CPU and memory requested on one node, summed over its pods.
struct Requested {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
};

// The CPU and memory one pod requests, counted on `node`: the node it is
// bound to (spec.nodeName), else the node it is reserved on (hami.io/vgpu-node).
struct PodRequestsEntry {
  std::string node;
  Requested requests;
};

struct PodUsageItem {
  std::uint32_t vendor = 0;
  PodUsage usage;
};

struct PodEntry {
  std::string uid;
  std::string pod_namespace;
  std::string name;
  std::string node;
  std::vector<PodUsageItem> usage;
  std::vector<MigAllocation> mig;
  bool released = false;  // init-container usage shrunk
};

// Hash for unordered maps keyed by std::string that are searched with a
// std::string_view, without building a string.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringKeyMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct QuotaEntry {
  std::map<std::string, std::int64_t, std::less<>> limits;  // by ResourceQuota name
  std::int64_t used = 0;
  // The effective limit: the tightest of all quotas, or -1 when none.
  std::int64_t Limit() const {
    std::int64_t limit = -1;
    for (const auto& [name, value] : limits) {
      if (limit < 0 || value < limit) limit = value;
    }
    return limit;
  }
};

// GPU quota of one namespace: memory and cores, by vendor index.
struct NamespaceQuota {
  std::vector<QuotaEntry> memory;
  std::vector<QuotaEntry> cores;
};

// fgd's measure of one node for the snapshot's fragmentation workload.
struct NodeMeasure {
  std::vector<float> free;   // per device: its free share
  FragState sums;            // over `free`
  std::uint32_t cell = 0;    // the classes the node's free CPU and memory host
  double fragmentation = 0;  // of `sums` for those classes
  // What fgd's device scores depend on besides the request: per device the
  // bits of its free share, its cores and its memory; and a hash of it.
  std::vector<std::uint32_t> signature;
  std::uint64_t fingerprint = 0;
};

// ClusterSnapshot::SetFragmentationWorkload: the workload as given (empty:
// the default mix), its tables, and every node's measure.
struct FragmentationCache {
  std::vector<WorkloadClass> workload;
  FgdModel model;
  FitMemo fits;
  std::vector<NodeMeasure> nodes;  // by index into SnapshotState::nodes
};

struct SnapshotState {
  DeviceConfig config;
  std::vector<NodeState> nodes;
  std::vector<HotDevice> hot;
  std::size_t hot_garbage = 0;         // slots of abandoned ranges
  std::vector<std::uint32_t> by_name;  // indices into nodes, by name
  StringKeyMap<std::uint32_t> node_index;
  StringKeyMap<PodEntry> pods;  // by UID; entries never move
  StringKeyMap<std::vector<const PodEntry*>> pods_by_node;
  StringKeyMap<NamespaceQuota> quotas;  // by namespace
  // CPU and memory: every placed pod with a request, devices or not, by UID;
  // and the sums per node name, nodes not (or no longer) registered included.
  StringKeyMap<PodRequestsEntry> requests;
  StringKeyMap<Requested> requested;
  std::optional<FragmentationCache> fragmentation;
  DraState dra;

  const HotDevice* Hot(const NodeState& node) const { return hot.data() + node.hot_begin; }
  HotDevice* Hot(const NodeState& node) { return hot.data() + node.hot_begin; }

  const NodeState* FindNode(std::string_view name) const {
    auto it = node_index.find(name);
    if (it == node_index.end() || !nodes[it->second].present) return nullptr;
    return &nodes[it->second];
  }
  // The quota of `resource` (a vendor's memory or core resource name) in
  // namespace `ns`, or nullptr.
  const QuotaEntry* FindQuota(std::string_view ns, std::string_view resource) const {
    auto it = quotas.find(ns);
    if (it == quotas.end()) return nullptr;
    for (std::size_t v = 0; v < config.vendors.size(); ++v) {
      if (resource == config.vendors[v].memory_resource) return &it->second.memory[v];
      if (resource == config.vendors[v].core_resource) return &it->second.cores[v];
    }
    return nullptr;
  }
};

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_SNAPSHOT_STATE_HPP_
