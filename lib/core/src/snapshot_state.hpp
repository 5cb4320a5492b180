// Private: the state behind ClusterSnapshot, shared with the filter.
#ifndef DEVSHARE_SRC_SNAPSHOT_STATE_HPP_
#define DEVSHARE_SRC_SNAPSHOT_STATE_HPP_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/vendor.hpp"

namespace devshare::internal {

struct MigInUse {
  std::string profile;
  MigPlacement placement;
};

struct DeviceSlot {
  Device info;
  std::uint32_t vendor = 0;       // index into DeviceConfig::vendors
  bool is_mig = false;            // info.mode == "mig"
  DeviceUsage usage;
  std::vector<MigInUse> mig_in_use;
  std::int32_t mig_unreserved_users = 0;   // pods on a MIG device without a reservation
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
  std::vector<std::string> cordoned;            // sorted
  std::vector<DevicePairScore> pair_scores;     // sorted by uuid
  std::int32_t orphan_mig_reservations = 0;     // reservations naming no device here
  // Aggregates over all devices (spec §5.1), kept up to date incrementally.
  std::int64_t total_slots = 0, total_cores = 0, total_mem = 0;
  std::int64_t used_slots = 0, used_cores = 0, used_mem = 0;
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

struct SnapshotState {
  DeviceConfig config;
  std::vector<NodeState> nodes;
  std::unordered_map<std::string, std::uint32_t> node_index;
  std::unordered_map<std::string, PodEntry> pods;  // by UID
  std::unordered_map<std::string, std::unordered_set<std::string>> pods_by_node;
  // (namespace, resource) -> quota
  std::map<std::pair<std::string, std::string>, QuotaEntry, std::less<>> quotas;

  const NodeState* FindNode(std::string_view name) const {
    auto it = node_index.find(std::string(name));
    if (it == node_index.end() || !nodes[it->second].present) return nullptr;
    return &nodes[it->second];
  }
  const QuotaEntry* FindQuota(std::string_view ns, std::string_view resource) const {
    auto it = quotas.find(std::pair<std::string, std::string>(ns, resource));
    return it == quotas.end() ? nullptr : &it->second;
  }
};

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_SNAPSHOT_STATE_HPP_
