// devshare/engine/audit.hpp — the drift auditor's vocabulary: what a fresh
// LIST of the API server says, and how the engine's view differs from it.
//
// The engine is built from watch events. A missed event, a restart, a
// delete while a bind was in flight or a node re-created under its name
// leave it believing what is no longer true: a device held by a pod that
// is gone blocks scheduling ("phantom" allocations), a device a pod holds
// is handed out twice. Engine::Audit compares the engine's view with a
// listing read afresh from the API server (never the watch cache the view
// was built from, which would agree with it by construction), names each
// difference, and heals what is safe to heal: it asks for objects to be
// read again (the reading applies what the server says of that one object,
// through the same path a watch event takes) and releases node locks whose
// holder pod does not exist. It never frees a device by itself: a device
// is freed only when the server's own copy of the pod says so.
//
// The listing and the view are not taken at the same instant (the LIST
// takes time, watch events keep arriving), so a difference is only a
// suspicion at first. It is confirmed — counted, logged, healed — once the
// same difference has been seen by audits at least `grace_ms` apart; one
// that goes away before that was the watch catching up. The same means the
// same kind and object, and for what changes by design on a busy node the
// same state throughout: a node's annotations differ while the engine's
// copy stays at one resourceVersion (the engine heard nothing of the node
// meanwhile), a lock is orphaned or lost with one value. A node whose lock
// comes and goes with every bind differs from some listing now and then,
// but never from two with nothing heard in between.
//
// Thread-safety: value types.
#ifndef DEVSHARE_ENGINE_AUDIT_HPP_
#define DEVSHARE_ENGINE_AUDIT_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/objects.hpp"

namespace devshare::engine {

// One object of a LIST, as metadata (what a PartialObjectMetadataList
// carries): enough to compare, never enough to apply.
struct ListedObject {
  std::string object_namespace;  // empty for nodes
  std::string name;
  std::string uid;
  std::string resource_version;  // metadata.resourceVersion; empty when not listed
  StringMap annotations;
};

// A fresh LIST of the API server: every node, every pod that is not
// finished (Succeeded or Failed) and every ResourceQuota; with served
// DeviceClasses (DRA), every ResourceClaim.
struct AuditListing {
  std::vector<ListedObject> nodes;
  std::vector<ListedObject> pods;
  std::vector<ListedObject> claims;
  std::vector<ListedObject> quotas;
};

enum class DriftKind {
  // The engine holds a pod (and what it reserved or was allocated) the
  // server no longer has, or has finished. Healed: the pod is read again.
  kPodGone,
  // The server's pod holds devices (an assigned node and allocation
  // annotations) the engine does not count as it says. Healed: read again.
  kAllocationMissed,
  // The server has an unfinished pod the engine does not know, holding no
  // devices. Healed: read again.
  kPodMissed,
  // A node carries a node lock whose owner pod does not exist, and no bind
  // of this engine holds it. Healed: the lock is released (conditionally:
  // only while it still holds that value).
  kLockOrphaned,
  // A node's register annotation or node lock differs from the engine's
  // copy (an update without an event). Healed: read again.
  kNodeChanged,
  // The node was deleted and re-created under its name (another UID).
  // Healed: read again.
  kNodeReplaced,
  // The engine has a node the server no longer has. Healed: read again.
  kNodeGone,
  // The server has a node the engine does not know. Healed: read again.
  kNodeMissed,
  // A bind of this engine holds a node lock (its write succeeded) that the
  // server's node no longer carries. Reported only: the bind ends either way.
  kLockLost,
  // DRA: the engine has a ResourceClaim the server no longer has (its
  // allocation would keep devices from others). Healed: read again.
  kClaimGone,
  // DRA: the server has a claim the engine does not know (its allocation
  // would be handed out twice). Healed: read again.
  kClaimMissed,
  // DRA: the server's claim is at another resourceVersion than the
  // engine's, which heard nothing of it meanwhile (an update without an
  // event: an allocation made or released). Healed: read again.
  kClaimChanged,
  // The engine has a ResourceQuota the server no longer has (its limits
  // would refuse pods no quota refuses). Healed: read again.
  kQuotaGone,
  // The server has a ResourceQuota the engine does not know (a limit not
  // enforced). Healed: read again.
  kQuotaMissed,
  // The server's quota is at another resourceVersion than the engine's
  // (its limits may have changed without an event). Healed: read again.
  kQuotaChanged,
};
inline constexpr std::size_t kDriftKinds = 15;

// The name of each kind in metrics, logs and JSON ("pod-gone", ...), in
// DriftKind's order.
inline constexpr std::array<std::string_view, kDriftKinds> kDriftKindNames = {
    "pod-gone",      "allocation-missed", "pod-missed",  "lock-orphaned", "node-changed",
    "node-replaced", "node-gone",         "node-missed", "lock-lost",     "claim-gone",
    "claim-missed",  "claim-changed",     "quota-gone",  "quota-missed",  "quota-changed"};
inline constexpr std::string_view DriftKindName(DriftKind kind) {
  return kDriftKindNames[static_cast<std::size_t>(kind)];
}

struct Drift {
  DriftKind kind = DriftKind::kPodGone;
  std::string object;  // "namespace/name" of a pod, claim or quota, the name of a node
  std::string uid;     // a pod's UID as the engine knows it (empty: unknown to it)
  std::string detail;  // what differs, in words
  std::int64_t first_seen_ms = 0;
  bool confirmed = false;  // seen by audits `grace_ms` apart
  bool healed = false;     // confirmed, and a heal was asked for
};

// A pod to read again: on a 404 (or finished), the engine forgets `uid`.
struct PodToRead {
  std::string pod_namespace;
  std::string name;
  std::string uid;  // the UID the engine knows it by (empty: unknown to it)
};

// A claim or quota to read again: on a 404 the engine forgets it.
struct ObjectToRead {
  std::string object_namespace;
  std::string name;
};

struct AuditReport {
  std::int64_t at_ms = 0;
  std::size_t nodes_listed = 0, pods_listed = 0, claims_listed = 0, quotas_listed = 0;
  // Every difference seen now, confirmed or not, by kind then object.
  std::vector<Drift> differences;
  // The heals to execute: read these objects again and hand what is read
  // to Engine::NodeRead / PodRead / ClaimRead / QuotaRead.
  std::vector<std::string> nodes_to_read;
  std::vector<PodToRead> pods_to_read;
  std::vector<ObjectToRead> claims_to_read;
  std::vector<ObjectToRead> quotas_to_read;
};

// Confirmed differences since the engine started, per kind (indexed by
// DriftKind), and how many of them were healed.
struct AuditTotals {
  std::uint64_t audits = 0;
  std::array<std::uint64_t, kDriftKinds> found{};
  std::array<std::uint64_t, kDriftKinds> healed{};
};

}  // namespace devshare::engine

#endif  // DEVSHARE_ENGINE_AUDIT_HPP_
