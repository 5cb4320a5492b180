#include "devshare/snapshot.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "codec/pod_scan.hpp"
#include "devshare/annotations.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/pod_codec.hpp"
#include "state/fgd_measure.hpp"
#include "state/snapshot_state.hpp"

namespace devshare {

using internal::DeviceSlot;
using internal::NodeState;
using internal::PodEntry;
using internal::PodUsageItem;
using internal::SnapshotState;

// ---------------------------------------------------------------------------
// Collapse (spec §4.8)

namespace {

struct Collapsed {
  std::int32_t init_mem = 0, init_cores = 0, init_slots = 0;
  std::int32_t app_mem = 0, app_cores = 0, app_slots = 0;
};

std::vector<PodUsage> Collapse(const PodSingleDevice& containers, std::string_view vendor,
                               std::size_t init_containers, bool include_init) {
  std::map<std::string, Collapsed, std::less<>> by_uuid;
  for (std::size_t c = 0; c < containers.size(); ++c) {
    const bool init = c < init_containers;
    if (init && !include_init) continue;
    for (const ContainerDevice& d : containers[c]) {
      Collapsed& x = by_uuid[d.uuid];
      if (init) {
        x.init_mem = std::max(x.init_mem, d.usedmem);
        x.init_cores = std::max(x.init_cores, d.usedcores);
        x.init_slots = 1;
      } else {
        x.app_mem += d.usedmem;
        x.app_cores += d.usedcores;
        x.app_slots += 1;
      }
    }
  }
  std::vector<PodUsage> out;
  out.reserve(by_uuid.size());
  for (const auto& [uuid, x] : by_uuid) {
    out.push_back(PodUsage{std::string(vendor), uuid, std::max(x.init_mem, x.app_mem),
                           std::max(x.init_cores, x.app_cores),
                           std::max({x.init_slots, x.app_slots, 1})});
  }
  return out;
}

}  // namespace

std::vector<PodUsage> CollapseUsage(const PodSingleDevice& containers, std::string_view vendor,
                                    std::size_t init_containers) {
  return Collapse(containers, vendor, init_containers, true);
}

std::vector<PodUsage> AppOnlyUsage(const PodSingleDevice& containers, std::string_view vendor,
                                   std::size_t init_containers) {
  return Collapse(containers, vendor, init_containers, false);
}

// ---------------------------------------------------------------------------
// Snapshot

namespace {

std::size_t FindDevice(const NodeState& node, std::uint32_t vendor, std::string_view uuid) {
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    if (node.devices[i].vendor == vendor && node.devices[i].info.id == uuid) return i;
  }
  return node.devices.size();
}

void RefreshHealth(SnapshotState& s, const NodeState& node) {
  internal::HotDevice* hot = s.Hot(node);
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    hot[i].healthy = node.devices[i].Healthy(node.orphan_mig_reservations);
  }
}

// Adds (sign = +1) or removes (sign = -1) a pod's usage on its node.
void ApplyPod(SnapshotState& s, NodeState& node, const PodEntry& pod, int sign) {
  internal::HotDevice* hot = s.Hot(node);
  for (const PodUsageItem& item : pod.usage) {
    const std::size_t i = FindDevice(node, item.vendor, item.usage.uuid);
    if (i == node.devices.size()) continue;  // a UUID the node no longer has: ignored, as HAMi
    DeviceSlot* d = &node.devices[i];
    const std::int32_t slots = std::max(item.usage.slots, 1);
    hot[i].used += sign * slots;
    hot[i].usedmem += sign * item.usage.usedmem;
    hot[i].usedcores += sign * item.usage.usedcores;
    node.used_slots += sign * slots;
    node.used_mem += sign * item.usage.usedmem;
    node.used_cores += sign * item.usage.usedcores;
    if (d->is_mig) {
      bool reserved = false;
      for (const MigAllocation& a : pod.mig) reserved = reserved || a.gpu_uuid == d->info.id;
      if (!reserved) d->mig_unreserved_users += sign;
    }
  }
  // MIG reservations (spec §4.3): matched by GPU UUID.
  for (const MigAllocation& a : pod.mig) {
    DeviceSlot* target = nullptr;
    for (DeviceSlot& d : node.devices) {
      if (d.info.id == a.gpu_uuid) target = &d;
    }
    if (target == nullptr) {
      node.orphan_mig_reservations += sign;
    } else if (!target->is_mig) {
      target->mig_foreign_reservations += sign;
    } else if (sign > 0) {
      target->mig_in_use.push_back({a.profile, a.placement});
    } else {
      auto& in_use = target->mig_in_use;
      auto it = std::find_if(in_use.begin(), in_use.end(), [&](const internal::MigInUse& m) {
        return m.profile == a.profile && m.placement == a.placement;
      });
      if (it != in_use.end()) in_use.erase(it);
    }
  }
  if (!pod.mig.empty() || std::any_of(node.devices.begin(), node.devices.end(),
                                      [](const DeviceSlot& d) { return d.is_mig; })) {
    RefreshHealth(s, node);
  }
  RemeasureNode(s, node);
}

// Gives `node` a hot range for its devices, reusing its old one when it is
// large enough, and compacting the array when half of it is abandoned.
void PlaceHot(SnapshotState& s, NodeState& node) {
  const auto n = static_cast<std::uint32_t>(node.devices.size());
  if (n > node.hot_capacity) {
    s.hot_garbage += node.hot_capacity;
    node.hot_begin = static_cast<std::uint32_t>(s.hot.size());
    node.hot_capacity = n;
    s.hot.resize(s.hot.size() + n);
  }
  if (s.hot_garbage > s.hot.size() / 2 && s.hot_garbage > 1024) {
    std::vector<internal::HotDevice> compact;
    compact.reserve(s.hot.size() - s.hot_garbage);
    for (NodeState& other : s.nodes) {
      const std::uint32_t begin = static_cast<std::uint32_t>(compact.size());
      compact.insert(compact.end(), s.hot.begin() + other.hot_begin,
                     s.hot.begin() + other.hot_begin + other.hot_capacity);
      other.hot_begin = begin;
    }
    s.hot = std::move(compact);
    s.hot_garbage = 0;
  }
  internal::HotDevice* hot = s.Hot(node);
  for (std::uint32_t i = 0; i < n; ++i) {
    const DeviceSlot& d = node.devices[i];
    hot[i] = internal::HotDevice{d.info.count, d.info.devmem, d.info.devcore, d.info.numa, 0, 0, 0,
                                 d.info.index, d.vendor,      d.info.health,  d.is_mig};
  }
}

internal::NamespaceQuota& QuotaOf(SnapshotState& s, std::string_view ns) {
  auto it = s.quotas.find(ns);
  if (it == s.quotas.end()) {
    it = s.quotas.emplace(std::string(ns), internal::NamespaceQuota{}).first;
    it->second.memory.resize(s.config.vendors.size());
    it->second.cores.resize(s.config.vendors.size());
  }
  return it->second;
}

// Adds (+1) or removes (-1) a pod's usage from its namespace's quota usage,
// clamping at 0 (spec §9.1).
void ApplyQuota(SnapshotState& s, const PodEntry& pod, int sign) {
  if (pod.usage.empty()) return;
  internal::NamespaceQuota& q = QuotaOf(s, pod.pod_namespace);
  for (const PodUsageItem& item : pod.usage) {
    const VendorSpec& vendor = s.config.vendors[item.vendor];
    if (!vendor.memory_resource.empty()) {
      std::int64_t& used = q.memory[item.vendor].used;
      used = std::max<std::int64_t>(0, used + sign * item.usage.usedmem);
    }
    if (!vendor.core_resource.empty()) {
      std::int64_t& used = q.cores[item.vendor].used;
      used = std::max<std::int64_t>(0, used + sign * item.usage.usedcores);
    }
  }
}

// Collapsed usage of one vendor's pod-devices value (spec §4.8), straight
// from the text: init containers peak, app containers add up.
Status CollapseValue(std::string_view value, std::uint32_t vendor, std::string_view vendor_word,
                     std::size_t init_containers, bool include_init,
                     std::vector<PodUsageItem>& out) {
  struct Acc {
    std::string_view uuid;
    std::int32_t init_mem = 0, init_cores = 0, init_slots = 0;
    std::int32_t app_mem = 0, app_cores = 0, app_slots = 0;
  };
  std::vector<Acc> acc;
  Status status = internal::ScanPodDevices(
      value, [](std::size_t) {},
      [&](std::size_t container, const internal::ScannedDevice& d) {
        const bool init = container < init_containers;
        if (init && !include_init) return;
        auto it =
            std::find_if(acc.begin(), acc.end(), [&](const Acc& a) { return a.uuid == d.uuid; });
        if (it == acc.end()) it = acc.insert(acc.end(), Acc{d.uuid});
        if (init) {
          it->init_mem = std::max(it->init_mem, d.usedmem);
          it->init_cores = std::max(it->init_cores, d.usedcores);
          it->init_slots = 1;
        } else {
          it->app_mem += d.usedmem;
          it->app_cores += d.usedcores;
          it->app_slots += 1;
        }
      });
  if (!status.ok()) return status;
  std::sort(acc.begin(), acc.end(), [](const Acc& a, const Acc& b) { return a.uuid < b.uuid; });
  for (const Acc& a : acc) {
    out.push_back(PodUsageItem{
        vendor,
        PodUsage{std::string(vendor_word), std::string(a.uuid), std::max(a.init_mem, a.app_mem),
                 std::max(a.init_cores, a.app_cores), std::max({a.init_slots, a.app_slots, 1})}});
  }
  return Status();
}

// Registers the devices of every vendor on `node`; returns the first error.
Status RegisterDevices(const DeviceConfig& config, NodeState& state) {
  Status first_error;
  state.devices.clear();
  const Node& node = state.object;
  for (std::uint32_t v = 0; v < config.vendors.size(); ++v) {
    const VendorSpec& vendor = config.vendors[v];
    std::vector<Device> devices;
    if (vendor.registration == Registration::kCapacity) {
      const std::string* count = node.capacity.Find(vendor.count_resource);
      const std::int64_t n = count ? QuantityAsInt64(*count).value_or(0) : 0;
      const std::string* mem = node.capacity.Find(vendor.memory_resource);
      const std::int64_t total_mem = mem ? QuantityAsInt64(*mem).value_or(0) : 0;
      for (std::int64_t i = 0; i < n && i < 64; ++i) {
        Device d;
        d.id = fmt::format("{}-{}-{}", state.name, vendor.common_word, i);
        d.index = static_cast<std::uint32_t>(i);
        d.count = 1;
        d.devmem = static_cast<std::int32_t>(std::min<std::int64_t>(total_mem / n, INT32_MAX));
        d.devcore = 100;
        d.type = vendor.common_word;
        d.health = true;
        devices.push_back(std::move(d));
      }
    } else {
      const std::string* value = node.annotations.Find(vendor.register_annotation);
      if (value == nullptr) continue;
      Result<std::vector<Device>> decoded = DecodeNodeDevices(*value, vendor.register_format);
      if (!decoded.ok()) {
        if (first_error.ok()) {
          first_error =
              Status::Malformed(fmt::format("node {}: {}: {}", state.name,
                                            vendor.register_annotation, decoded.status().message()),
                                std::string(decoded.status().field()), decoded.status().offset());
        }
        continue;
      }
      devices = std::move(*decoded);
    }
    for (Device& d : devices) {
      DeviceSlot slot;
      d.vendor = vendor.common_word;
      slot.is_mig = d.mode == "mig";
      slot.info = std::move(d);
      slot.vendor = v;
      state.devices.push_back(std::move(slot));
    }
  }
  state.total_slots = state.total_cores = state.total_mem = 0;
  state.used_slots = state.used_cores = state.used_mem = 0;
  state.orphan_mig_reservations = 0;
  for (const DeviceSlot& d : state.devices) {
    state.total_slots += d.info.count;
    state.total_cores += d.info.devcore;
    state.total_mem += d.info.devmem;
  }
  state.cordoned.clear();
  if (const std::string* cordon = node.annotations.Find(keys::kDeviceCordon)) {
    state.cordoned = DecodeNameList(*cordon);
    std::sort(state.cordoned.begin(), state.cordoned.end());
  }
  state.pair_scores.clear();
  if (const std::string* scores = node.annotations.Find(keys::kNodeNvidiaScore)) {
    Result<std::vector<DevicePairScore>> decoded = DecodePairScores(*scores);
    if (decoded.ok()) {
      state.pair_scores = std::move(*decoded);
      std::sort(state.pair_scores.begin(), state.pair_scores.end(),
                [](const DevicePairScore& a, const DevicePairScore& b) { return a.uuid < b.uuid; });
    } else if (first_error.ok()) {
      first_error = Status::Malformed(fmt::format(
          "node {}: {}: {}", state.name, keys::kNodeNvidiaScore, decoded.status().message()));
    }
  }
  return first_error;
}

bool IsTerminated(const Pod& pod) { return pod.phase == "Succeeded" || pod.phase == "Failed"; }

// A node's allocatable CPU (millicores) and memory (bytes); unknown when
// absent or not a quantity.
void ReadCapacity(NodeState& state) {
  const StringMap& allocatable = state.object.allocatable;
  state.cpu_capacity = state.memory_capacity = NodeState::kUnknown;
  if (const std::string* cpu = allocatable.Find("cpu")) {
    state.cpu_capacity = QuantityMilliValue(*cpu).value_or(NodeState::kUnknown);
  }
  if (const std::string* memory = allocatable.Find("memory")) {
    state.memory_capacity = QuantityValue(*memory).value_or(NodeState::kUnknown);
  }
  if (state.cpu_capacity < 0) state.cpu_capacity = NodeState::kUnknown;
  if (state.memory_capacity < 0) state.memory_capacity = NodeState::kUnknown;
}

// Adds (sign = +1) or removes (-1) one pod's CPU and memory on `node`: the
// per-name sums, and the node's copy when it is known.
void ApplyRequests(SnapshotState& s, std::string_view node, const internal::Requested& r,
                   int sign) {
  auto sums = s.requested.find(node);
  if (sums == s.requested.end())
    sums = s.requested.emplace(std::string(node), internal::Requested{}).first;
  sums->second.cpu_milli += sign * r.cpu_milli;
  sums->second.memory_bytes += sign * r.memory_bytes;
  const internal::Requested now = sums->second;
  if (now.cpu_milli == 0 && now.memory_bytes == 0) s.requested.erase(sums);
  if (auto it = s.node_index.find(node); it != s.node_index.end()) {
    NodeState& state = s.nodes[it->second];
    state.cpu_requested = now.cpu_milli;
    state.memory_requested = now.memory_bytes;
    RemeasureNode(s, state);
  }
}

bool RemoveRequests(SnapshotState& s, std::string_view uid) {
  auto it = s.requests.find(uid);
  if (it == s.requests.end()) return false;
  ApplyRequests(s, it->second.node, it->second.requests, -1);
  s.requests.erase(it);
  return true;
}

// Counts a live pod's CPU and memory on its node: spec.nodeName, else the
// node it is reserved on. A pod with neither keeps what is counted (a stale
// update), as the device cache does.
void UpdateRequests(SnapshotState& s, const Pod& pod, const std::string* reserved_node) {
  const std::string_view node = !pod.node_name.empty()     ? std::string_view(pod.node_name)
                                : reserved_node != nullptr ? std::string_view(*reserved_node)
                                                           : std::string_view();
  if (node.empty()) return;
  const internal::Requested requests{std::max<std::int64_t>(pod.cpu_milli, 0),
                                     std::max<std::int64_t>(pod.memory_bytes, 0)};
  auto it = s.requests.find(pod.uid);
  if (it != s.requests.end()) {
    const internal::PodRequestsEntry& old = it->second;
    if (old.node == node && old.requests.cpu_milli == requests.cpu_milli &&
        old.requests.memory_bytes == requests.memory_bytes) {
      return;
    }
    RemoveRequests(s, pod.uid);
  }
  if (requests.cpu_milli == 0 && requests.memory_bytes == 0) return;
  s.requests.emplace(pod.uid, internal::PodRequestsEntry{std::string(node), requests});
  ApplyRequests(s, node, requests, +1);
}

// Removes a pod's device entry (not its CPU and memory).
bool RemoveDevicePod(SnapshotState& s, std::string_view uid) {
  auto it = s.pods.find(uid);
  if (it == s.pods.end()) return false;
  const PodEntry& entry = it->second;
  if (auto n = s.node_index.find(entry.node);
      n != s.node_index.end() && s.nodes[n->second].present) {
    ApplyPod(s, s.nodes[n->second], entry, -1);
  }
  ApplyQuota(s, entry, -1);
  if (auto pods = s.pods_by_node.find(entry.node); pods != s.pods_by_node.end()) {
    std::vector<const PodEntry*>& list = pods->second;
    auto at = std::find(list.begin(), list.end(), &entry);
    if (at != list.end()) {
      *at = list.back();
      list.pop_back();
    }
    if (list.empty()) s.pods_by_node.erase(pods);
  }
  s.pods.erase(it);
  return true;
}

}  // namespace

ClusterSnapshot::ClusterSnapshot(DeviceConfig config) : state_(std::make_unique<SnapshotState>()) {
  state_->config = std::move(config);
}
ClusterSnapshot::~ClusterSnapshot() = default;
namespace {
// A copied state's node -> pods index must point at its own pod entries,
// its DRA pools into its own slices.
std::unique_ptr<SnapshotState> CopyState(const SnapshotState& other) {
  auto copy = std::make_unique<SnapshotState>(other);
  for (auto& [node, list] : copy->pods_by_node) {
    for (const PodEntry*& entry : list) entry = &copy->pods.at(entry->uid);
  }
  RebuildPools(*copy);
  return copy;
}
}  // namespace

ClusterSnapshot::ClusterSnapshot(const ClusterSnapshot& other) : state_(CopyState(*other.state_)) {}
ClusterSnapshot& ClusterSnapshot::operator=(const ClusterSnapshot& other) {
  if (this != &other) state_ = CopyState(*other.state_);
  return *this;
}
ClusterSnapshot::ClusterSnapshot(ClusterSnapshot&&) noexcept = default;
ClusterSnapshot& ClusterSnapshot::operator=(ClusterSnapshot&&) noexcept = default;

const DeviceConfig& ClusterSnapshot::config() const { return state_->config; }

Status ClusterSnapshot::AddNode(const Node& node) {
  SnapshotState& s = *state_;
  auto [it, inserted] =
      s.node_index.try_emplace(node.name, static_cast<std::uint32_t>(s.nodes.size()));
  if (inserted) {
    s.nodes.emplace_back();
    auto at = std::lower_bound(
        s.by_name.begin(), s.by_name.end(), node.name,
        [&](std::uint32_t i, const std::string& name) { return s.nodes[i].name < name; });
    s.by_name.insert(at, it->second);
  }
  NodeState& state = s.nodes[it->second];
  state.name = node.name;
  state.present = true;
  state.object = node;
  Status status = RegisterDevices(s.config, state);
  ReadCapacity(state);
  if (auto sums = s.requested.find(node.name); sums != s.requested.end()) {
    state.cpu_requested = sums->second.cpu_milli;
    state.memory_requested = sums->second.memory_bytes;
  } else {
    state.cpu_requested = state.memory_requested = 0;
  }
  PlaceHot(s, state);
  if (auto pods = s.pods_by_node.find(node.name); pods != s.pods_by_node.end()) {
    for (const PodEntry* pod : pods->second) ApplyPod(s, state, *pod, +1);
  }
  RefreshHealth(s, state);
  RemeasureNode(s, state);
  RegatherPools(s.dra, state.object);
  return status;
}

bool ClusterSnapshot::RemoveNode(std::string_view name) {
  auto it = state_->node_index.find(name);
  if (it == state_->node_index.end() || !state_->nodes[it->second].present) return false;
  NodeState& node = state_->nodes[it->second];
  node.present = false;
  node.devices.clear();
  node.object = Node{};
  DropNode(state_->dra, name);
  return true;
}

Status ClusterSnapshot::AddPod(const Pod& pod) {
  SnapshotState& s = *state_;
  const std::string* node_name = pod.annotations.Find(s.config.assigned_node_annotation);
  auto existing = s.pods.find(pod.uid);
  if (IsTerminated(pod)) {
    RemovePod(pod.uid);
    return Status();
  }
  UpdateRequests(s, pod, node_name);
  // Only pods placed by a scheduler hold devices. An update that lacks the
  // annotation (a stale watch event racing the Filter's PATCH) keeps what
  // is cached, as HAMi's informer does.
  if (node_name == nullptr) return Status();
  // A terminating pod keeps its usage until it is gone.
  if (existing != s.pods.end() && pod.terminating) return Status();

  PodEntry entry;
  entry.uid = pod.uid;
  entry.pod_namespace = pod.pod_namespace;
  entry.name = pod.name;
  entry.node = *node_name;
  const bool was_released = existing != s.pods.end() && existing->second.released;
  entry.released = was_released || (pod.init_containers_done && !pod.init_containers.empty());
  for (std::uint32_t v = 0; v < s.config.vendors.size(); ++v) {
    const VendorSpec& vendor = s.config.vendors[v];
    const std::string* value = pod.annotations.Find(vendor.allocated_annotation);
    if (value == nullptr) continue;
    Status collapsed = CollapseValue(*value, v, vendor.common_word, pod.init_containers.size(),
                                     !entry.released, entry.usage);
    if (!collapsed.ok()) {
      return Status::Malformed(fmt::format("pod {}/{}: {}: {}", pod.pod_namespace, pod.name,
                                           vendor.allocated_annotation, collapsed.message()),
                               std::string(collapsed.field()), collapsed.offset());
    }
  }
  if (const std::string* mig = pod.annotations.Find(keys::kMigAllocations)) {
    Result<std::vector<MigAllocation>> decoded = DecodeMigAllocations(*mig);
    if (!decoded.ok()) {
      return Status::Malformed(fmt::format("pod {}/{}: {}: {}", pod.pod_namespace, pod.name,
                                           keys::kMigAllocations, decoded.status().message()),
                               std::string(decoded.status().field()), decoded.status().offset());
    }
    entry.mig = std::move(*decoded);
  }
  if (existing != s.pods.end()) RemoveDevicePod(s, pod.uid);
  if (auto it = s.node_index.find(entry.node);
      it != s.node_index.end() && s.nodes[it->second].present) {
    ApplyPod(s, s.nodes[it->second], entry, +1);
  }
  ApplyQuota(s, entry, +1);
  std::string uid = entry.uid;
  const PodEntry& stored = s.pods.emplace(std::move(uid), std::move(entry)).first->second;
  auto by_node = s.pods_by_node.find(stored.node);
  if (by_node == s.pods_by_node.end())
    by_node = s.pods_by_node.emplace(stored.node, std::vector<const PodEntry*>{}).first;
  by_node->second.push_back(&stored);
  return Status();
}

bool ClusterSnapshot::RemovePod(std::string_view uid) {
  const bool devices = RemoveDevicePod(*state_, uid);
  const bool requests = RemoveRequests(*state_, uid);
  return devices || requests;
}

Status ClusterSnapshot::SetQuota(std::string_view pod_namespace, std::string_view quota_name,
                                 const StringMap& hard) {
  RemoveQuota(pod_namespace, quota_name);
  std::vector<std::string> unparsed;
  for (const auto& [key, value] : hard.entries()) {
    if (!key.starts_with("limits.")) continue;
    const std::string_view resource = std::string_view(key).substr(7);
    for (std::size_t v = 0; !resource.empty() && v < state_->config.vendors.size(); ++v) {
      const VendorSpec& vendor = state_->config.vendors[v];
      const bool memory = resource == vendor.memory_resource;
      if (!memory && resource != vendor.core_resource) continue;
      const std::optional<std::int64_t> limit = QuantityAsInt64(value);
      if (!limit) {
        unparsed.push_back(
            fmt::format("{} is \"{}\", not a whole number within int64", key, value));
        break;
      }
      internal::NamespaceQuota& q = QuotaOf(*state_, pod_namespace);
      (memory ? q.memory : q.cores)[v].limits[std::string(quota_name)] = *limit;
    }
  }
  if (unparsed.empty()) return Status();
  return Status::Malformed(
      fmt::format("resource quota {}/{}: spec.hard: {}; it does not limit {} here", pod_namespace,
                  quota_name, fmt::join(unparsed, "; "), unparsed.size() == 1 ? "that" : "those"),
      "spec.hard");
}

bool ClusterSnapshot::RemoveQuota(std::string_view pod_namespace, std::string_view quota_name) {
  auto it = state_->quotas.find(pod_namespace);
  if (it == state_->quotas.end()) return false;
  bool removed = false;
  for (auto* entries : {&it->second.memory, &it->second.cores}) {
    for (internal::QuotaEntry& q : *entries) {
      auto limit = q.limits.find(quota_name);
      if (limit != q.limits.end()) {
        q.limits.erase(limit);
        removed = true;
      }
    }
  }
  return removed;
}

Status ClusterSnapshot::SetFragmentationWorkload(std::span<const WorkloadClass> workload) {
  if (Status valid = internal::ValidateWorkload(workload); !valid.ok()) return valid;
  SnapshotState& s = *state_;
  internal::FragmentationCache& cache = s.fragmentation.emplace();
  cache.workload.assign(workload.begin(), workload.end());
  cache.model = internal::MakeFgdModel(workload);
  internal::TabulateCells(cache.model);
  cache.nodes.resize(s.nodes.size());
  for (const NodeState& node : s.nodes) internal::RemeasureNode(s, node);
  return Status();
}

std::size_t ClusterSnapshot::node_count() const {
  return static_cast<std::size_t>(std::count_if(state_->nodes.begin(), state_->nodes.end(),
                                                [](const NodeState& n) { return n.present; }));
}

std::size_t ClusterSnapshot::pod_count() const { return state_->pods.size(); }

std::vector<std::string> ClusterSnapshot::NodeNames() const {
  std::vector<std::string> names;
  for (std::uint32_t i : state_->by_name) {
    if (state_->nodes[i].present) names.push_back(state_->nodes[i].name);
  }
  return names;
}

Result<std::vector<DeviceView>> ClusterSnapshot::NodeDevices(std::string_view node) const {
  const NodeState* state = state_->FindNode(node);
  if (state == nullptr)
    return Status::NotFound(fmt::format("node {} is not in the snapshot", node));
  std::vector<DeviceView> out;
  out.reserve(state->devices.size());
  const internal::HotDevice* hot = state_->Hot(*state);
  for (std::size_t i = 0; i < state->devices.size(); ++i) {
    out.push_back(DeviceView{state->devices[i].info,
                             DeviceUsage{hot[i].used, hot[i].usedmem, hot[i].usedcores},
                             hot[i].healthy});
  }
  return out;
}

Result<std::vector<PodUsage>> ClusterSnapshot::PodUsageOf(std::string_view uid) const {
  auto it = state_->pods.find(std::string(uid));
  if (it == state_->pods.end()) return Status::NotFound(fmt::format("pod {} is not cached", uid));
  std::vector<PodUsage> out;
  for (const PodUsageItem& item : it->second.usage) out.push_back(item.usage);
  return out;
}

Result<NodeCpuMemory> ClusterSnapshot::NodeCpuMemoryOf(std::string_view node) const {
  const NodeState* state = state_->FindNode(node);
  if (state == nullptr)
    return Status::NotFound(fmt::format("node {} is not in the snapshot", node));
  return NodeCpuMemory{state->cpu_capacity, state->memory_capacity, state->cpu_requested,
                       state->memory_requested};
}

const Node* ClusterSnapshot::FindNode(std::string_view name) const {
  const NodeState* state = state_->FindNode(name);
  return state != nullptr && state->present ? &state->object : nullptr;
}

std::int64_t ClusterSnapshot::QuotaLimit(std::string_view pod_namespace,
                                         std::string_view resource) const {
  const internal::QuotaEntry* q = state_->FindQuota(pod_namespace, resource);
  return q ? q->Limit() : -1;
}

std::vector<QuotaUse> ClusterSnapshot::Quotas() const {
  std::vector<QuotaUse> out;
  for (const auto& [ns, quota] : state_->quotas) {
    for (std::size_t v = 0; v < state_->config.vendors.size(); ++v) {
      const VendorSpec& vendor = state_->config.vendors[v];
      for (const auto& [entry, resource] : {std::pair{&quota.memory[v], &vendor.memory_resource},
                                            std::pair{&quota.cores[v], &vendor.core_resource}}) {
        if (!entry->limits.empty())
          out.push_back(QuotaUse{ns, *resource, entry->Limit(), entry->used});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const QuotaUse& a, const QuotaUse& b) {
    return std::tie(a.pod_namespace, a.resource) < std::tie(b.pod_namespace, b.resource);
  });
  return out;
}

std::int64_t ClusterSnapshot::QuotaUsed(std::string_view pod_namespace,
                                        std::string_view resource) const {
  const internal::QuotaEntry* q = state_->FindQuota(pod_namespace, resource);
  return q ? q->used : 0;
}

}  // namespace devshare
