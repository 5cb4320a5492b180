// The engine's private state, shared by its source files (engine.cpp: time
// and the result router; engine_register.cpp, engine_place.cpp,
// engine_bind.cpp, engine_preempt.cpp, dra.cpp, dra_preempt.cpp: the flows;
// audit.cpp: the drift auditor).
#ifndef DEVSHARE_ENGINE_SRC_ENGINE_IMPL_HPP_
#define DEVSHARE_ENGINE_SRC_ENGINE_IMPL_HPP_

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <utility>

#include "devshare/engine/engine.hpp"
#include "devshare/preemption.hpp"

namespace devshare::engine {

// The candidate a preemption goes for: the best whose evictions violate no
// PodDisruptionBudget; nullptr when there is none.
inline const PreemptionCandidate* WithinBudgets(const PreemptionPlan& plan) {
  for (const PreemptionCandidate& c : plan.candidates) {
    if (c.budget_violations == 0) return &c;
  }
  return nullptr;
}

// A ResourceClaim's namespace and name.
using ClaimKey = std::pair<std::string, std::string>;
inline ClaimKey KeyOf(const dra::ResourceClaim& claim) {
  return {claim.claim_namespace, claim.name};
}

// The time handshakes, node locks and bind phases stamp: whole seconds.
inline std::int64_t Seconds(std::int64_t now_ms) { return now_ms / 1000; }

// The node's annotation `key` (nullopt: absent, or no key).
inline std::optional<std::string> Annotation(const Node& node, std::string_view key) {
  if (key.empty()) return std::nullopt;
  const std::string* v = node.annotations.Find(key);
  return v != nullptr ? std::optional<std::string>(*v) : std::nullopt;
}

struct Engine::NodeMemory {
  Node object;
  std::vector<HamiNodeMemory> hami;                    // by vendor
  std::vector<std::optional<std::string>> registered;  // change-only: last annotation, by vendor
  LockSighting lock_sighting;
  bool usable = false;
};

struct Engine::BindFlow {
  enum class Step { kLock, kPhase, kBinding } step = Step::kLock;
  std::uint64_t request = 0;
  std::string pod_namespace, name, uid, node;
  StringMap placement;              // the reservation's device annotations
  std::optional<std::string> lock;  // the lock value this bind holds; none until locked
  int attempt = 0;                  // lock attempts so far
  std::int64_t deadline_ms = 0;     // lock retries stop here
};

// A Filter whose reply waits for HAMi's placement PATCH.
struct Engine::FilterFlow {
  std::uint64_t request;
  std::string uid;
  FilterReply reply;
};

// A write with no follow-up; a failed bind's lock release carries what it
// released, to write it again when the write fails (ReleaseRetry).
struct Engine::Release {
  std::string node;
  std::string lock;  // empty: not a lock release
  int attempt = 1;
};

// DRA: the writes of one gated pod in flight — its claims' allocations
// (or their release), then the gate's removal. The gate is removed once
// every claim is written and the watch has shown each allocated for the
// pod (kube-scheduler's informers, fed by the same API server, then have
// them too), or a while after the writes should the watch not show them.
struct Engine::DraWrite {
  DraWrite() = default;
  DraWrite(const Pod& pod, bool releasing_claims)
      : pod_namespace(pod.pod_namespace),
        name(pod.name),
        uid(pod.uid),
        releasing(releasing_claims) {}

  std::string pod_namespace, name, uid;
  std::map<std::uint64_t, std::pair<std::string, std::string>> claim_writes;  // id -> claim
  bool failed = false;
  bool releasing = false;  // the claims are being released, not allocated
  std::uint64_t gate_write = 0;
  std::set<ClaimKey> unseen;                  // allocated, not yet shown so by the watch
  std::optional<std::int64_t> written_at_ms;  // every claim written, the gate not yet asked off
};

struct Engine::Impl {
  // DRA (dra.cpp).
  struct Dra {
    std::optional<dra::Placer> placer;
    std::string placer_error;  // why there is no placer
    bool synced = false;
    std::uint64_t next_seq = 0;
    std::map<std::uint64_t, std::string> queue;             // gated pods in arrival order: UIDs
    std::unordered_map<std::string, std::uint64_t> seq_of;  // UID -> its key in queue
    std::map<std::string, DraHold> held;                    // UID -> why it waits
    // What the next pass judges (dra_due.cpp): the queued pods something
    // concerning them changed for, by queue key, each on every node or only
    // on the nodes that gained room since it fitted nowhere; or, with
    // `all_due`, every queued pod on every node.
    struct Due {
      bool anywhere = false;
      std::vector<std::string> gained;  // ascending; empty when anywhere
    };
    std::map<std::uint64_t, Due> due;
    bool all_due = true;
    std::set<std::uint64_t> no_fit;  // queue keys of the pods held for want of room (kNoFit)
    // (when, queue key): a pod judged again then (a backoff's end, an Event
    // that waited); and when every held pod is judged again anyway.
    std::set<std::pair<std::int64_t, std::uint64_t>> timers;
    std::int64_t sweep_at_ms = 0;
    std::optional<std::int64_t> retry_at_ms;  // not ready for a pass: the next try
    // (driver, pool) -> the node whose slices publish it (node-local pools):
    // where a released claim's devices give room.
    std::map<std::pair<std::string, std::string>, std::string> pool_node;
    std::map<ClaimKey, std::set<std::string>> claim_users;  // a claim -> the gated pods naming it
    // Claims being made for extended resources (CreateResourceClaim), until
    // the watch shows them or the write fails: the command's id, and back.
    std::map<ClaimKey, std::uint64_t> creating;
    // Pods placed (their claims written or being written) and not yet seen
    // bound: UID -> the node, where the snapshot counts their CPU and memory
    // meanwhile, as kube-scheduler's assume cache does.
    std::unordered_map<std::string, std::string> assumed_on;
    std::unordered_map<std::uint64_t, std::pair<ClaimKey, std::string>>
        created_by;                                                    // -> claim, UID
    std::unordered_map<std::string, std::vector<ClaimKey>> claims_of;  // UID -> the claims it names
    struct Evented {                                                   // a pod's last PodEvent
      DraHoldKind kind;
      std::string reason;
      std::int64_t at_ms;
    };
    std::unordered_map<std::string, Evented> evented;             // by UID
    std::unordered_map<std::string, std::int64_t> waiting_since;  // UID -> since when (kWaiting)
    std::unordered_map<std::string, DraWrite> writing;            // UID -> its writes in flight
    std::unordered_map<std::uint64_t, std::string> write_of;      // command id -> UID
    // The claims with a write in flight, as last observed (restored when
    // the write fails).
    std::map<ClaimKey, dra::ResourceClaim> before;
    std::set<std::string> released;  // UIDs whose gate is removed; the watch has yet to show it
    // UIDs whose write failed, until when they are left alone (the watch
    // brings the claims as they are now meanwhile).
    std::unordered_map<std::string, std::int64_t> backoff_until;
    // Preemptors (UIDs) -> their claims whose allocation is kept for them
    // in the snapshot, unwritten, while their victims go (the observed
    // claims are in `before`); an entry stays, emptied, until the
    // preemption ends.
    std::unordered_map<std::string, std::vector<ClaimKey>> kept;
  };

  struct ReleaseRetry {
    std::int64_t at_ms;
    Release release;
  };
  struct LockWait {
    std::int64_t at_ms;
    BindFlow flow;
  };
  struct Reservation {
    StringMap annotations;  // the Filter's patch
    std::string node;
  };
  struct HeldFilter {
    std::uint64_t request;
    Pod pod;
    std::vector<std::string> nodes;
    std::int64_t until_ms;
  };

  std::map<std::string, NodeMemory, std::less<>> nodes;  // by name: passes run in a fixed order
  std::map<std::string, std::string> node_errors;        // Engine::node_errors
  std::map<std::string, std::string> pod_errors;         // Engine::pod_errors, by UID
  std::map<std::string, std::string> quota_errors;       // Engine::quota_errors
  // The quotas known, "namespace/name" -> resourceVersion (the auditor's).
  std::map<std::string, std::string, std::less<>> quota_versions;
  std::unordered_map<std::string, Pod> pods;  // by UID
  // How many of `pods` are bound, by priority: a pod has possible victims
  // only when the lowest is below its own (PossibleVictims).
  std::map<std::int64_t, std::size_t> bound_by_priority;
  void CountBound(const Pod& pod, bool add) {
    if (pod.node_name.empty()) return;
    auto it = bound_by_priority.try_emplace(pod.priority, 0).first;
    if (add) {
      ++it->second;
    } else if (--it->second == 0) {
      bound_by_priority.erase(it);
    }
  }
  std::unordered_map<std::string, std::string> uid_of;        // "namespace/name" -> UID
  std::unordered_map<std::string, Reservation> reservations;  // by UID, until bound
  std::map<std::string, int, std::less<>> reserved_on;        // node -> reservations there
  std::set<std::string, std::less<>> locked;  // nodes whose object carries a node lock
  std::unordered_map<std::uint64_t, std::variant<FilterFlow, BindFlow, Release>> pending;
  std::vector<LockWait> lock_waits;               // binds waiting to retry the node lock, in order
  std::vector<ReleaseRetry> release_retries;      // lock releases to write again, in order
  std::unordered_map<std::string, int> waits_on;  // node -> its entries in lock_waits
  std::deque<HeldFilter> held;                    // Filters held back, in order
  std::size_t binds_in_flight = 0;                // Bind requests not yet answered
  std::set<std::string, std::less<>> locking;     // nodes with a lock write of ours in flight
  // The drift auditor: differences seen and not yet gone, by kind and
  // object, with when each was first seen and whether it was counted.
  struct Suspect {
    std::int64_t first_seen_ms = 0;
    bool counted = false;
    std::string state;  // what must stay the same until confirmed (audit.hpp)
  };
  std::map<std::pair<DriftKind, std::string>, Suspect> suspects;
  AuditTotals audit_totals;
  LeaseFollower follower;
  bool registered = false;  // kAlways: a pass has completed
  std::optional<std::int64_t> last_pass_ms;
  std::mt19937_64 rng;
  Dra dra;
  // Retry (engine_place.cpp): the pods Filter last refused, by UID, with
  // when; and whether a deletion freed devices since the last Tick.
  struct Refused {
    std::string pod_namespace, name;
    std::int64_t at_ms = 0;
  };
  std::unordered_map<std::string, Refused> refused;
  bool devices_freed = false;
  // Preemption (engine_preempt.cpp).
  std::map<std::string, PodDisruptionBudget, std::less<>> budgets;  // "namespace/name"
  std::map<std::string, Preemption> preemptions;                    // Engine::preemptions
  std::unordered_map<std::string, std::string> victim_of;           // victim UID -> preemptor UID
  std::unordered_map<std::uint64_t, std::string> eviction_of;       // EvictPod id -> victim UID
  // Preemptors whose preemption was given up, until when they may not
  // preempt again.
  std::unordered_map<std::string, std::int64_t> preempt_backoff;

  void Reserve(const std::string& uid, StringMap annotations, const std::string& node) {
    Unreserve(uid);
    reservations.emplace(uid, Reservation{std::move(annotations), node});
    ++reserved_on[node];
  }
  void Unreserve(const std::string& uid) {
    auto it = reservations.find(uid);
    if (it == reservations.end()) return;
    auto count = reserved_on.find(it->second.node);
    if (--count->second == 0) reserved_on.erase(count);
    reservations.erase(it);
  }

  void Park(LockWait wait) {
    ++waits_on[wait.flow.node];
    lock_waits.push_back(std::move(wait));
  }
  // Takes out the waits `pick` chooses, in order.
  template <typename Pick>
  std::vector<LockWait> Unpark(Pick pick) {
    auto split = std::stable_partition(lock_waits.begin(), lock_waits.end(),
                                       [&](const LockWait& w) { return !pick(w); });
    std::vector<LockWait> picked(std::make_move_iterator(split),
                                 std::make_move_iterator(lock_waits.end()));
    lock_waits.erase(split, lock_waits.end());
    for (const LockWait& w : picked) {
      auto count = waits_on.find(w.flow.node);
      if (--count->second == 0) waits_on.erase(count);
    }
    return picked;
  }

  static std::string NameKey(std::string_view pod_namespace, std::string_view name) {
    return fmt::format("{}/{}", pod_namespace, name);
  }
  const Pod* FindPod(std::string_view pod_namespace, std::string_view name) const {
    auto uid = uid_of.find(NameKey(pod_namespace, name));
    if (uid == uid_of.end()) return nullptr;
    auto pod = pods.find(uid->second);
    return pod == pods.end() ? nullptr : &pod->second;
  }
};

}  // namespace devshare::engine

#endif  // DEVSHARE_ENGINE_SRC_ENGINE_IMPL_HPP_
