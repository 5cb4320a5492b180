// The drift auditor: the engine's view against a fresh listing of the API
// server (devshare/engine/audit.hpp).
#include "devshare/engine/audit.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "devshare/annotations.hpp"
#include "devshare/engine/engine.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

namespace {

const std::string* Find(const StringMap& annotations, std::string_view key) {
  return key.empty() ? nullptr : annotations.Find(key);
}

std::string_view Shown(const std::string* value) {
  return value == nullptr ? std::string_view("(none)") : std::string_view(*value);
}

// The annotations that say which devices a pod holds: its assigned node and
// each vendor's allocation.
std::vector<std::string_view> AllocationKeys(const DeviceConfig& config) {
  std::vector<std::string_view> keys{config.assigned_node_annotation};
  for (const VendorSpec& vendor : config.vendors) {
    if (!vendor.allocated_annotation.empty()) keys.push_back(vendor.allocated_annotation);
  }
  return keys;
}

// The first of `keys` whose value differs between the two copies, with
// both values; nullopt when they agree.
struct KeyDifference {
  std::string_view key;
  const std::string* server;
  const std::string* cached;
};
std::optional<KeyDifference> FirstDifference(const std::vector<std::string_view>& keys,
                                             const StringMap& server, const StringMap& cached) {
  for (std::string_view key : keys) {
    const std::string* s = Find(server, key);
    const std::string* c = Find(cached, key);
    if ((s == nullptr) != (c == nullptr) || (s != nullptr && *s != *c))
      return KeyDifference{key, s, c};
  }
  return std::nullopt;
}

// The annotations of a node the auditor compares: each vendor's register
// annotation and the node lock (handshakes change by design).
std::vector<std::string_view> NodeKeys(const DeviceConfig& config) {
  std::vector<std::string_view> keys;
  for (const VendorSpec& vendor : config.vendors) {
    if (vendor.registration == Registration::kAnnotation && !vendor.register_annotation.empty())
      keys.push_back(vendor.register_annotation);
  }
  keys.push_back(keys::kNodeLock);
  return keys;
}

// "namespace/name" as the object to read.
ObjectToRead Namespaced(std::string_view object) {
  const std::size_t slash = object.find('/');
  return ObjectToRead{std::string(object.substr(0, slash)), std::string(object.substr(slash + 1))};
}

}  // namespace

// One audit: the differences between the engine's view and a listing,
// section by section (pods, nodes, DRA claims, quotas), then Settle: suspicion,
// confirmation and healing.
struct Engine::AuditPass {
  AuditPass(Engine& engine_in, Impl& impl, const AuditListing& listing_in, std::int64_t now)
      : engine(engine_in), s(impl), listing(listing_in), now_ms(now) {}

  Engine& engine;
  Impl& s;
  const AuditListing& listing;
  std::int64_t now_ms;
  // What this engine has in flight is newer than any listing: pods being
  // bound (or about to be) and the nodes whose locks its binds hold.
  std::unordered_set<std::string_view> binding;                   // pod UIDs
  std::unordered_map<std::string_view, const BindFlow*> holding;  // node -> a bind holding its lock
  std::unordered_set<std::string> listed_pod_names;               // namespace/name
  std::vector<Drift> seen;
  std::vector<std::string> states;  // per difference in `seen`: Suspect::state
  std::vector<std::pair<std::string, std::string>> orphaned_locks;  // node, lock value

  void Differ(DriftKind kind, std::string object, std::string detail, std::string uid = {},
              std::string state = {}) {
    seen.push_back(
        Drift{kind, std::move(object), std::move(uid), std::move(detail), now_ms, false, false});
    states.push_back(std::move(state));
  }
  void NoteInFlight();
  void ComparePods();
  void CompareNodes();
  void CompareClaims();
  void CompareQuotas();
  // Each difference suspected, confirmed once seen `audit_grace_ms` apart
  // in the same state, counted once and healed (Heal); into `report`.
  void Settle(AuditReport& report, std::vector<Command>& out);
  // What heals a confirmed difference: a read asked for in `report`, or
  // (kLockOrphaned, leading) the lock's release written to `out`. False
  // when nothing does (kLockLost: the bind's own result decides it).
  bool Heal(const Drift& d, AuditReport& report, std::vector<Command>& out);
};

void Engine::AuditPass::NoteInFlight() {
  auto in_flight = [&](const BindFlow& flow) {
    binding.insert(flow.uid);
    if (flow.lock && flow.step != BindFlow::Step::kLock) holding.emplace(flow.node, &flow);
  };
  for (const auto& [id, flow] : s.pending) {
    if (const auto* b = std::get_if<BindFlow>(&flow)) in_flight(*b);
    if (const auto* f = std::get_if<FilterFlow>(&flow)) binding.insert(f->uid);
  }
  for (const Impl::LockWait& wait : s.lock_waits) in_flight(wait.flow);
  for (const Impl::HeldFilter& held : s.held) binding.insert(held.pod.uid);
}

// Pods gone, missed, or holding other devices than the cache says.
void Engine::AuditPass::ComparePods() {
  const DeviceConfig& config = engine.options_.config;
  const std::vector<std::string_view> allocation_keys = AllocationKeys(config);
  std::unordered_map<std::string_view, const ListedObject*> listed_pods;  // by UID
  listed_pods.reserve(listing.pods.size());
  for (const ListedObject& pod : listing.pods) {
    listed_pods.emplace(pod.uid, &pod);
    listed_pod_names.insert(Impl::NameKey(pod.object_namespace, pod.name));
  }
  for (const auto& [uid, pod] : s.pods) {
    if (listed_pods.contains(uid)) continue;
    const bool reserved = s.reservations.contains(uid);
    const bool holds = engine.snapshot_.PodUsageOf(uid).ok();
    Differ(DriftKind::kPodGone, Impl::NameKey(pod.pod_namespace, pod.name),
           fmt::format("uid {}: the API server has no such unfinished pod; the cache {}", uid,
                       reserved ? "holds a reservation for it"
                       : holds  ? "counts its devices"
                                : "holds it"),
           uid);
  }
  for (const ListedObject& listed : listing.pods) {
    const std::string key = Impl::NameKey(listed.object_namespace, listed.name);
    const std::string* assigned = Find(listed.annotations, config.assigned_node_annotation);
    auto cached = s.pods.find(listed.uid);
    if (cached == s.pods.end()) {
      if (assigned != nullptr) {
        Differ(DriftKind::kAllocationMissed, key,
               fmt::format("uid {}: the cache does not know the pod, which holds devices on {}",
                           listed.uid, *assigned));
      } else {
        Differ(DriftKind::kPodMissed, key,
               fmt::format("uid {}: the cache does not know the pod", listed.uid));
      }
      continue;
    }
    // A placement of this engine's own, not yet on the server, is newer.
    if (binding.contains(listed.uid) || s.reservations.contains(listed.uid)) continue;
    if (std::optional<KeyDifference> d =
            FirstDifference(allocation_keys, listed.annotations, cached->second.annotations)) {
      Differ(DriftKind::kAllocationMissed, key,
             fmt::format("{}: the API server has {}, the cache {}", d->key, Shown(d->server),
                         Shown(d->cached)),
             listed.uid);
    }
  }
}

// Nodes gone, missed, re-created or changed without an event; node locks a
// bind of this engine lost, or whose owner pod does not exist (after
// ComparePods, which lists the pods' names).
void Engine::AuditPass::CompareNodes() {
  const std::vector<std::string_view> node_keys = NodeKeys(engine.options_.config);
  std::unordered_map<std::string_view, const ListedObject*> listed_nodes;
  listed_nodes.reserve(listing.nodes.size());
  for (const ListedObject& node : listing.nodes) listed_nodes.emplace(node.name, &node);
  for (const auto& [name, memory] : s.nodes) {
    if (!listed_nodes.contains(name))
      Differ(DriftKind::kNodeGone, name, "the API server has no such node");
  }
  for (const ListedObject& listed : listing.nodes) {
    auto cached = s.nodes.find(listed.name);
    if (cached == s.nodes.end()) {
      Differ(DriftKind::kNodeMissed, listed.name, "the cache does not know the node");
    } else if (!listed.uid.empty() && !cached->second.object.uid.empty() &&
               listed.uid != cached->second.object.uid) {
      Differ(DriftKind::kNodeReplaced, listed.name,
             fmt::format("re-created: uid {} on the API server, {} in the cache", listed.uid,
                         cached->second.object.uid));
    } else if (listed.resource_version.empty() ||
               listed.resource_version != cached->second.object.resource_version) {
      if (std::optional<KeyDifference> d =
              FirstDifference(node_keys, listed.annotations, cached->second.object.annotations)) {
        Differ(DriftKind::kNodeChanged, listed.name,
               fmt::format("{} changed without an event: the API server has {}, the cache {}",
                           d->key, d->server == nullptr ? "none" : "another value",
                           d->cached == nullptr ? "none" : "another value"),
               {}, cached->second.object.resource_version);
      }
    }
    const std::string* lock = Find(listed.annotations, keys::kNodeLock);
    auto holder = holding.find(listed.name);
    if (holder != holding.end()) {
      if (lock == nullptr || *lock != *holder->second->lock) {
        Differ(DriftKind::kLockLost, listed.name,
               fmt::format("the bind of {} holds its lock, which the API server shows as {}",
                           Impl::NameKey(holder->second->pod_namespace, holder->second->name),
                           Shown(lock)),
               {}, *holder->second->lock);
      }
      continue;
    }
    if (lock == nullptr || s.locking.contains(listed.name)) continue;
    Result<NodeLock> decoded = DecodeNodeLock(*lock);
    if (!decoded.ok() || !decoded->has_owner) continue;  // no owner to look for
    const std::string owner = Impl::NameKey(decoded->pod_namespace, decoded->pod_name);
    if (listed_pod_names.contains(owner)) continue;
    Differ(DriftKind::kLockOrphaned, listed.name,
           fmt::format("locked by {}, which does not exist", owner), {}, *lock);
    orphaned_locks.emplace_back(listed.name, *lock);
  }
}

// DRA claims gone, missed or changed (with served DeviceClasses): a claim
// with a write of this engine in flight is newer than any listing.
void Engine::AuditPass::CompareClaims() {
  std::map<std::pair<std::string_view, std::string_view>, const ListedObject*> listed_claims;
  for (const ListedObject& claim : listing.claims)
    listed_claims.emplace(
        std::pair{std::string_view(claim.object_namespace), std::string_view(claim.name)}, &claim);
  std::set<std::pair<std::string_view, std::string_view>> cached_claims;
  for (const dra::ResourceClaim* claim : engine.snapshot_.ResourceClaims()) {
    const std::pair<std::string_view, std::string_view> key{claim->claim_namespace, claim->name};
    cached_claims.insert(key);
    if (s.dra.before.contains({claim->claim_namespace, claim->name})) continue;
    const std::string object = Impl::NameKey(claim->claim_namespace, claim->name);
    auto listed = listed_claims.find(key);
    if (listed == listed_claims.end()) {
      Differ(DriftKind::kClaimGone, object,
             fmt::format("the API server has no such claim; the cache {}",
                         claim->allocation ? "counts its allocation" : "holds it"));
    } else if (listed->second->resource_version != claim->resource_version) {
      Differ(DriftKind::kClaimChanged, object,
             fmt::format("resourceVersion {} on the API server, {} in the cache",
                         listed->second->resource_version, claim->resource_version),
             {}, claim->resource_version);
    }
  }
  for (const ListedObject& listed : listing.claims) {
    if (cached_claims.contains({listed.object_namespace, listed.name})) continue;
    Differ(DriftKind::kClaimMissed, Impl::NameKey(listed.object_namespace, listed.name),
           "the cache does not know the claim");
  }
}

// Quotas gone, missed or changed: a quota is at one resourceVersion in the
// engine from its last event, so another in the listing, with nothing heard
// in between, is an update missed.
void Engine::AuditPass::CompareQuotas() {
  std::set<std::string_view> listed_quotas;
  for (const ListedObject& listed : listing.quotas) {
    std::string object = Impl::NameKey(listed.object_namespace, listed.name);
    auto cached = s.quota_versions.find(object);
    if (cached == s.quota_versions.end()) {
      Differ(DriftKind::kQuotaMissed, std::move(object), "the cache does not know the quota");
    } else {
      listed_quotas.insert(cached->first);
      if (cached->second != listed.resource_version) {
        Differ(DriftKind::kQuotaChanged, std::move(object),
               fmt::format("resourceVersion {} on the API server, {} in the cache",
                           listed.resource_version, cached->second),
               {}, cached->second);
      }
    }
  }
  for (const auto& [object, version] : s.quota_versions) {
    if (!listed_quotas.contains(object))
      Differ(DriftKind::kQuotaGone, object, "the API server has no such quota; its limits apply");
  }
}

bool Engine::AuditPass::Heal(const Drift& d, AuditReport& report, std::vector<Command>& out) {
  switch (d.kind) {
    case DriftKind::kPodGone:
    case DriftKind::kAllocationMissed:
    case DriftKind::kPodMissed: {
      const std::size_t slash = d.object.find('/');
      report.pods_to_read.push_back(
          PodToRead{d.object.substr(0, slash), d.object.substr(slash + 1), d.uid});
      return true;
    }
    case DriftKind::kNodeChanged:
    case DriftKind::kNodeReplaced:
    case DriftKind::kNodeGone:
    case DriftKind::kNodeMissed:
      report.nodes_to_read.push_back(d.object);
      return true;
    case DriftKind::kLockOrphaned: {
      if (!engine.Leading()) return false;  // a follower writes nothing
      bool healed = false;
      for (const auto& [node, value] : orphaned_locks) {
        if (node != d.object) continue;
        const std::uint64_t id = engine.NextId();
        s.pending.emplace(id, Release{});
        ++engine.counters_.node_patches;
        out.push_back(PatchNode{id,
                                node,
                                {AnnotationWrite{std::string(keys::kNodeLock), std::nullopt}},
                                {AnnotationWrite{std::string(keys::kNodeLock), value}},
                                {},
                                false});
        healed = true;
      }
      return healed;
    }
    case DriftKind::kLockLost:
      return false;
    case DriftKind::kClaimGone:
    case DriftKind::kClaimMissed:
    case DriftKind::kClaimChanged:
      report.claims_to_read.push_back(Namespaced(d.object));
      return true;
    case DriftKind::kQuotaGone:
    case DriftKind::kQuotaMissed:
    case DriftKind::kQuotaChanged:
      report.quotas_to_read.push_back(Namespaced(d.object));
      return true;
  }
  return false;
}

void Engine::AuditPass::Settle(AuditReport& report, std::vector<Command>& out) {
  std::map<std::pair<DriftKind, std::string>, Impl::Suspect> still;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    Drift& d = seen[i];
    auto key = std::make_pair(d.kind, d.object);
    auto before = s.suspects.find(key);
    Impl::Suspect suspect = before != s.suspects.end() && before->second.state == states[i]
                                ? before->second
                                : Impl::Suspect{now_ms, false, std::move(states[i])};
    d.first_seen_ms = suspect.first_seen_ms;
    d.confirmed = now_ms - suspect.first_seen_ms >= engine.options_.audit_grace_ms;
    if (d.confirmed) {
      const auto k = static_cast<std::size_t>(d.kind);
      const bool count = !suspect.counted;
      suspect.counted = true;
      if (count) ++s.audit_totals.found[k];
      d.healed = Heal(d, report, out);
      if (count && d.healed) ++s.audit_totals.healed[k];
    }
    still.emplace(std::move(key), suspect);
  }
  s.suspects = std::move(still);
  std::sort(seen.begin(), seen.end(), [](const Drift& a, const Drift& b) {
    return std::tie(a.kind, a.object) < std::tie(b.kind, b.object);
  });
  report.differences = std::move(seen);
}

AuditReport Engine::Audit(const AuditListing& listing, std::int64_t now_ms,
                          std::vector<Command>& out) {
  ++impl_->audit_totals.audits;
  AuditReport report;
  report.at_ms = now_ms;
  report.nodes_listed = listing.nodes.size();
  report.pods_listed = listing.pods.size();
  report.claims_listed = listing.claims.size();
  report.quotas_listed = listing.quotas.size();
  AuditPass pass(*this, *impl_, listing, now_ms);
  pass.NoteInFlight();
  pass.ComparePods();
  pass.CompareNodes();
  if (!options_.dra_device_classes.empty()) pass.CompareClaims();
  pass.CompareQuotas();
  pass.Settle(report, out);
  return report;
}

std::optional<std::int64_t> Engine::AuditFollowUpMs() const {
  std::optional<std::int64_t> earliest;
  for (const auto& [key, suspect] : impl_->suspects) {
    if (suspect.counted) continue;  // confirmed already: the regular audits look again
    const std::int64_t at = suspect.first_seen_ms + options_.audit_grace_ms;
    earliest = earliest ? std::min(*earliest, at) : at;
  }
  return earliest;
}

void Engine::NodeRead(const std::string& name, const std::optional<Node>& node, std::int64_t now_ms,
                      std::vector<Command>& out) {
  if (!node) return NodeDeleted(name);
  // Another node under the name: what the cache knew of the old one goes.
  auto cached = impl_->nodes.find(name);
  if (cached != impl_->nodes.end() && !node->uid.empty() && !cached->second.object.uid.empty() &&
      cached->second.object.uid != node->uid) {
    NodeDeleted(name);
  }
  NodeObserved(*node, now_ms, out);
}

void Engine::PodRead(const PodToRead& asked, const std::optional<Pod>& pod) {
  const bool finished = pod && (pod->phase == "Succeeded" || pod->phase == "Failed");
  if (!asked.uid.empty() && (!pod || finished || pod->uid != asked.uid)) PodDeleted(asked.uid);
  if (pod && !finished) PodObserved(*pod);
}

void Engine::ClaimRead(const ObjectToRead& asked, std::optional<dra::ResourceClaim> claim) {
  if (!claim) return ResourceClaimDeleted(asked.object_namespace, asked.name);
  ResourceClaimObserved(std::move(*claim));
}

void Engine::QuotaRead(const ObjectToRead& asked, const std::optional<ResourceQuota>& quota) {
  if (!quota) return ResourceQuotaDeleted(asked.object_namespace, asked.name);
  ResourceQuotaObserved(*quota);
}

const AuditTotals& Engine::audit_totals() const { return impl_->audit_totals; }

}  // namespace devshare::engine
