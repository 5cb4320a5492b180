// devshare/engine/engine.hpp — the scheduler service, sans I/O.
//
// The engine is what a deployment runs: it holds the cluster snapshot, runs
// node registration with the configured handshake protocol, answers Filter
// and Bind, follows leadership, and counts what it did. It performs no I/O
// and reads no clock: it consumes events (objects observed, time passing,
// requests, the results of the API calls it asked for) and emits commands
// (patch a node or pod, post a Binding, reply to a request). The Kubernetes
// adapter and the simulator drive the same engine.
//
// Registration: HAMi's protocol runs a pass over every node each
// `register_period_ms` (its handshake needs the clock); Volcano's and the
// change-only protocol react to each node event, node by node, so they cost
// nothing while nodes are quiet. Every protocol runs one full pass when the
// engine starts leading; a node seen for the first time is registered at
// once.
//
// Flows (spec/hami-behaviour.md §4, §6, §7, §8, with devshare's fixes):
//   Filter   refused at once (no hanging) unless leading and registered;
//            otherwise the pod's reservation is made in the snapshot and the
//            reply is immediate (HAMi PATCHes the pod's device annotations
//            first and replies after: EngineOptions::pod_writes).
//   Bind     node lock (take over when expired or dangling) -> a Binding
//            carrying the device annotations and bind-phase allocating (HAMi:
//            a bind-phase PATCH, then the Binding); or, lock-free, the
//            Binding alone. Any failure releases the lock and the reservation
//            and marks the pod failed (W8). Every step checks leadership
//            first (Ready): a bind of a replica that stopped leading fails
//            without another write, since the new leader places from a
//            cache that never saw its reservation.
//   Preempt  (EngineOptions::preemption) a pod Filter finds no room for
//            evicts the lower-priority pods PlanPreemption chooses on the
//            best node whose evictions violate no PodDisruptionBudget
//            (devshare/preemption.hpp): an EvictPod per victim, the pod
//            nominated there (NominatePod), and the devices it will take
//            counted as used at once, so that no pod of lower priority
//            takes them meanwhile. Its Filters fail, naming the victims,
//            until they are all gone; the next places it on the devices kept
//            (or anywhere better). A preemption ends when the pod is placed,
//            bound, or deleted; it is given up (the devices released) when
//            an eviction fails, when the victims are not all gone
//            `preemption_timeout_ms` after the evictions, or when the pod is
//            not placed `preemption_hold_ms` after they are. A pod preempts
//            once at a time, and pods being evicted are no victims of
//            another preemption, so no slice is freed twice.
//   Retry    kube-scheduler retries a waiting pod when another pod is
//            deleted, at once, and its Filter may come before the engine
//            has seen the deletion: refused, the pod would then wait for an
//            unrelated event or kube-scheduler's 5-minute flush (HAMi
//            #1368). So when a deletion frees devices, the pods Filter
//            refused in the `retry_window_ms` before are annotated
//            (kRetryAnnotation, a PatchPod): an update of the pod, which
//            kube-scheduler retries it on.
//            kube-scheduler v1.37 cannot preempt for a device it does not
//            see; for the releases that ask an extender about nodes without
//            victims of their own, ExtenderPreempt answers the preempt verb.
//            DRA: a gated pod whose claims fit nowhere preempts the same way
//            the pods holding claims of the served classes that
//            dra::PlanClaimPreemption chooses (devshare/dra_preemption.hpp);
//            the allocations it will get are counted at once (not written),
//            it is held (kPreempting) until its victims are gone and their
//            claims released — by the resourceclaim controller, which
//            deallocates a claim once no pod it is reserved for is left and
//            deletes one made from a template with its pod; devshare itself
//            releases a victim's claim left allocated for no one — then its
//            claims are allocated, on that node if they fit there, and its
//            gate removed.
//
// Thread-safety: none; one engine is driven by one thread.
#ifndef DEVSHARE_ENGINE_ENGINE_HPP_
#define DEVSHARE_ENGINE_ENGINE_HPP_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "devshare/dra_gate.hpp"
#include "devshare/dra_place.hpp"
#include "devshare/engine/audit.hpp"
#include "devshare/enum_names.hpp"
#include "devshare/filter.hpp"
#include "devshare/handshake.hpp"
#include "devshare/lease.hpp"
#include "devshare/nodelock.hpp"
#include "devshare/objects.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/vendor.hpp"

namespace devshare {
struct PreemptionCandidate;  // devshare/preemption.hpp
}  // namespace devshare

namespace devshare::engine {

enum class RegistrationProtocol { kHami, kVolcano, kChangeOnly };
enum class Leadership { kAlways, kFollowLease };
enum class BindMode { kNodeLock, kLockFree };
// What Bind does when the node lock is held by another pod (or its write
// meets a 409): fail at once (HAMi for a plain pod), or retry until
// `lock_retry_timeout_ms` every 100 ms (HAMi for a PodGroup member), or
// with client-go's jittered exponential backoff (100 ms x 2^k x (1 + 0.5u),
// capped at the fourth step), or wait for the release: the bind tries again
// as soon as the watch shows the node's lock free, the binds waiting for one
// node one at a time in the order they began to wait (a lock write of this
// engine in flight counts as held), so they neither poll nor race each other.
enum class LockRetry { kOnce, kFixed, kBackoff, kRelease };
// How a placement reaches the pod. HAMi PATCHes the device annotations in
// Filter and replies after the PATCH, so kube-scheduler's serial scheduling
// cycle waits for the API server on every pod, then PATCHes bind-phase
// allocating before the Binding (kHami: 3 pod writes, 2 of them in the
// way). devshare keeps the placement in memory (the snapshot counts it) and
// lets the Binding carry it with the bind phase: the API server sets a
// Binding's annotations on the pod as it binds it (kWithBinding: 1 write).
// The device plugin reads them at Allocate, after the binding, either way.
enum class PodWrites { kWithBinding, kHami };

// The names the command line, scenario files and Python give these values.
inline constexpr auto kRegistrationNames =
    MakeEnumNames<RegistrationProtocol>({{"hami", RegistrationProtocol::kHami},
                                         {"volcano", RegistrationProtocol::kVolcano},
                                         {"change-only", RegistrationProtocol::kChangeOnly}});
inline constexpr auto kLeadershipNames = MakeEnumNames<Leadership>(
    {{"always", Leadership::kAlways}, {"follow", Leadership::kFollowLease}});
inline constexpr auto kBindModeNames = MakeEnumNames<BindMode>(
    {{"node-lock", BindMode::kNodeLock}, {"lock-free", BindMode::kLockFree}});
inline constexpr auto kLockRetryNames =
    MakeEnumNames<LockRetry>({{"release", LockRetry::kRelease},
                              {"once", LockRetry::kOnce},
                              {"fixed", LockRetry::kFixed},
                              {"backoff", LockRetry::kBackoff}});
inline constexpr auto kPodWritesNames =
    MakeEnumNames<PodWrites>({{"binding", PodWrites::kWithBinding}, {"hami", PodWrites::kHami}});

struct EngineOptions {
  DeviceConfig config = DefaultDeviceConfig();
  // filter.hami_exact also selects HAMi's registration (W4). Under the fgd
  // node or GPU policy the snapshot keeps each node's fragmentation measure
  // for filter.workload (ClusterSnapshot::SetFragmentationWorkload).
  FilterOptions filter;
  RegistrationProtocol registration = RegistrationProtocol::kChangeOnly;  // Default: change-only
  Leadership leadership = Leadership::kAlways;                            // Default: always leader
  std::string hostname;                      // this replica, for kFollowLease
  BindMode bind_mode = BindMode::kNodeLock;  // Default: HAMi's node lock
  NodeLockOptions lock;
  LockRetry lock_retry = LockRetry::kRelease;  // Default: wait for the release
  std::int64_t lock_retry_timeout_ms = 28000;  // Default: HAMi's --node-lock-retry-timeout
  // Under kNodeLock, Filter places a pod on a node whose lock no other bind
  // holds or is about to take (a pod placed there by Filter and not yet
  // bound) whenever such a node fits; when none does, on the least busy
  // nodes that fit (fewest such binds), to wait for the lock in Bind. HAMi places as if no
  // node were locked, so under binpack the pods of a burst all choose the
  // node the first one is binding to and their binds fail (false: as HAMi).
  bool avoid_locked_nodes = true;                  // Default: avoid
  PodWrites pod_writes = PodWrites::kWithBinding;  // Default: on the Binding
  // Backpressure. kube-scheduler binds asynchronously and gives a bind up
  // after its extender timeout (30 s), so binds must not queue longer than
  // that for the API client's token bucket. With `api_qps` the client's
  // QPS (0: unthrottled), Filter holds a request while the binds in flight
  // already need `bind_budget_ms` of the client's writes (a bind writes 1
  // to 3 times: bind_mode, pod_writes); a held Filter is answered, in the
  // order received, as soon as a bind ends, or refused after
  // `filter_hold_ms` (kube-scheduler then retries the pod after its
  // backoff). kube-scheduler's scheduling cycle waits meanwhile, so pods
  // bind at the rate the client can write instead of timing out. A bind
  // admitted at the budget waits about twice it in the client's queue (its
  // lock write and its Binding each queue behind the others), and a lock
  // wait comes on top: hence 10 s.
  double api_qps = 0;                       // Default: unthrottled, no hold
  std::int64_t bind_budget_ms = 10000;      // Default: 10 s of writes in flight
  std::int64_t filter_hold_ms = 10000;      // Default: 10 s, inside the 30 s extender timeout
  std::uint64_t seed = 0;                   // seeds the backoff jitter
  std::int64_t register_period_ms = 15000;  // Default: HAMi's 15 s tick
  std::int32_t zone_offset_seconds = 0;     // handshake stamps (W16)
  // The drift auditor confirms a difference once audits this far apart
  // have both seen it (devshare/engine/audit.hpp).
  std::int64_t audit_grace_ms = 30000;  // Default: 30 s
  // DRA: the DeviceClasses whose claims this engine allocates (empty: none)
  // and the policy choosing node and devices (fgd measures
  // filter.workload). kUpstream is refused: kube-scheduler chooses that way.
  dra::ServedClasses dra_device_classes;
  dra::Policy dra_policy = dra::Policy::kFgd;  // Default: fgd
  // Preemption ("Preempt" above). Off: Filter's failures are all
  // FailedNodes, as before, and nothing is evicted.
  bool preemption = true;                       // Default: on
  std::int64_t preemption_hold_ms = 60000;      // Default: 60 s after the victims are gone
  std::int64_t preemption_timeout_ms = 300000;  // Default: 5 min for the victims to go
  // Retry ("Retry" above): the pods refused this long before a deletion
  // that frees devices are annotated for kube-scheduler to try again (0:
  // none).
  std::int64_t retry_window_ms = 2000;  // Default: 2 s
};

// The annotation a Retry writes (the time of the deletion, in ms).
inline constexpr std::string_view kRetryAnnotation = "devshare.dev/retry-after-release";

// Commands. `id` ties a command to the ApiResult that reports it.
struct PatchNode {
  std::uint64_t id = 0;
  std::string node;
  std::vector<AnnotationWrite> writes;
  // What the write expects to replace: each key holds this value (nullopt:
  // is absent) when written, as the engine saw the node at
  // `resource_version` (its watch cache's; empty: unknown). An adapter makes
  // the check and the write one step: a PATCH carrying that resourceVersion;
  // on a 409 (the node changed since) or with no version, a GET, the check
  // on what it read, and a PATCH carrying the version read (HAMi's
  // SetNodeLock GETs every time). A mismatch or a 409 after the GET is a
  // failure.
  std::vector<AnnotationWrite> preconditions;
  std::string resource_version;
  // A registration (handshake) write. An adapter may send these one at a
  // time, as HAMi's registration loop does, and replace a queued write for
  // the same node with a newer one (reporting the replaced one as failed).
  bool registration = false;
};
struct PatchPod {
  std::uint64_t id = 0;
  std::string pod_namespace;
  std::string name;
  StringMap annotations;
};
struct PostBinding {
  std::uint64_t id = 0;
  std::string pod_namespace;
  std::string name;
  std::string uid;
  std::string node;
  StringMap annotations;  // lock-free mode: the device assignment rides on the Binding
};
struct FilterReply {
  std::uint64_t request = 0;
  std::vector<std::string> nodes;  // the nodes kept: the chosen one, or all for a pod
                                   // asking no device (under the fgd node policy,
                                   // the one it prefers)
  std::vector<NodeFailure> failed;
  std::string error;  // non-empty: the extender's Error field
  // Under preemption, the nodes where no eviction of a lower-priority pod
  // would let the pod fit (FailedAndUnresolvableNodes: kube-scheduler
  // leaves them out of its own preemption); `failed` then holds the others.
  std::vector<NodeFailure> unresolvable;
};
struct BindReply {
  std::uint64_t request = 0;
  std::string error;
};
// DRA: allocate a claim and reserve it for a pod, or release it. The
// finalizer resource.kubernetes.io/delete-protection is added first when
// `add_finalizer`, then status.allocation and status.reservedFor are
// written, each write at the resourceVersion the claim was read at (the
// first write's answer gives the second its version). A 409 or any other
// failure fails the command; an adapter may first read the claim on a 409
// and write again at the version read when the claim is still the same one
// (UID) unallocated. The claims the API server answers with go to
// ResourceClaimObserved, the last write's after its ApiResult, so the cache
// holds the version the write made (a watch event that came during the
// write is not kept once the write succeeds).
struct WriteClaimStatus {
  std::uint64_t id = 0;
  std::string claim_namespace;
  std::string name;
  std::string uid;
  std::string resource_version;
  bool add_finalizer = false;
  std::optional<dra::Allocation> allocation;  // nullopt: deallocate
  std::vector<dra::ClaimConsumer> reserved_for;
};
// DRA: make the claim devshare's webhook named for a pod's extended
// resource (devshare/dra_extended.hpp), owned by the pod (a controller
// ownerReference to `owner_name`, `owner_uid`), so that it goes with it. An
// AlreadyExists (409) is a success; the watch brings the claim.
struct CreateResourceClaim {
  std::uint64_t id = 0;
  dra::ResourceClaim claim;
  std::string owner_name;
  std::string owner_uid;
};
// DRA: remove dra::kSchedulingGate from the pod (its other gates stay).
struct RemoveSchedulingGate {
  std::uint64_t id = 0;
  std::string pod_namespace;
  std::string name;
  std::string uid;
};
// Preemption: evict a victim through the Eviction API (policy/v1), which
// honours its PodDisruptionBudgets and its grace period; the UID as a
// precondition. A pod already gone (404) is a success; a refusal (429: a
// budget) or any other failure fails it.
struct EvictPod {
  std::uint64_t id = 0;
  std::string pod_namespace;
  std::string name;
  std::string uid;
};
// Preemption: set the preemptor's status.nominatedNodeName (no result;
// the engine keeps the devices whether or not the write lands).
struct NominatePod {
  std::string pod_namespace;
  std::string name;
  std::string uid;
  std::string node;
};
// A Warning Event on the pod (no result): why a gated pod stays gated (DRA),
// or what its preemption evicts.
struct PodEvent {
  std::string pod_namespace;
  std::string name;
  std::string uid;
  std::string reason;  // CamelCase, e.g. DevshareNoFit
  std::string message;
};
using Command =
    std::variant<PatchNode, PatchPod, PostBinding, FilterReply, BindReply, WriteClaimStatus,
                 CreateResourceClaim, RemoveSchedulingGate, PodEvent, EvictPod, NominatePod>;

// Why a gated pod waits (Engine::dra_held).
// kPreempting: its victims are being evicted, or their claims released.
enum class DraHoldKind { kWaiting, kNoFit, kRefused, kPreempting };
// Their names in metrics, in DraHoldKind's order.
inline constexpr std::string_view kDraHoldKindNames[] = {"waiting", "no-fit", "refused",
                                                         "preempting"};
struct DraHold {
  DraHoldKind kind = DraHoldKind::kWaiting;
  std::string reason;
};

struct Counters {
  std::uint64_t filters = 0, filters_refused = 0, filters_placed = 0, filters_unschedulable = 0;
  std::uint64_t binds = 0, binds_failed = 0, lock_contention = 0, lock_retries = 0;
  // Placements made among the unlocked nodes while some candidate was locked
  // (EngineOptions::avoid_locked_nodes).
  std::uint64_t filters_around_locks = 0;
  // Filters held back while the binds in flight had the client's writes
  // busy (EngineOptions::api_qps), and those of them refused at the end of
  // the hold.
  std::uint64_t filters_held = 0, filters_hold_expired = 0;
  std::uint64_t node_patches = 0, pod_patches = 0, bindings = 0;
  std::uint64_t registration_passes = 0, registration_writes = 0, nodes_dropped = 0;
  // DRA: claims allocated (written), claim writes that failed, claims
  // released after a restart left them on a node the rest no longer fits,
  // gates removed; gated pods judged (each pod each pass that looked at it);
  // claims made for extended resources.
  std::uint64_t dra_claims_allocated = 0, dra_claim_writes_failed = 0, dra_claims_released = 0,
                dra_gates_removed = 0, dra_pods_judged = 0, dra_claims_created = 0;
  // Preemption: pods that began one, victims evicted, evictions that
  // failed, preemptors placed on what was freed, preemptions given up, and
  // pods that found no room and could not preempt (no node where evictions
  // help, every such node's victims protected by a budget, or a
  // preemptionPolicy of Never).
  std::uint64_t preemptions = 0, preemption_victims = 0, evictions_failed = 0,
                preemptions_placed = 0, preemptions_abandoned = 0, preemptions_refused = 0;
  // Pods annotated to be tried again after a deletion freed devices.
  std::uint64_t retries_requested = 0;
};

// A preemption under way (Engine::preemptions).
struct Preemption {
  std::string pod_namespace, name;
  std::string node;
  std::vector<std::string> victims;  // "namespace/name" of those not yet gone
  // DRA: "namespace/name" of the victims' claims not yet seen released.
  std::vector<std::string> claims;
  std::int64_t started_ms = 0;
  // When the last one went, and (DRA) the last of their claims was
  // released (at the next Tick).
  std::optional<std::int64_t> victims_gone_ms;
};

// The extender's preempt verb: per node, the victims (UIDs) and how many of
// them violate a PodDisruptionBudget.
struct NodeVictims {
  std::vector<std::string> uids;
  std::int64_t budget_violations = 0;
  friend bool operator==(const NodeVictims&, const NodeVictims&) = default;
};

// Events and commands: the contract of every method taking `out`.
//   - It appends: the commands it issues go at the end of `out`, in the
//     order issued; what `out` held before is left as it was. A caller may
//     pass one vector to several calls and execute it once.
//   - No command of a call waits for another of the same call: a step that
//     needs an earlier write's outcome is issued from that write's
//     ApiResult. An adapter may execute one call's commands in any order or
//     at once; the engine orders what must be ordered by waiting.
//   - A command with an `id` expects exactly one ApiResult for that id, in
//     any order relative to other ids. ApiResult for an id the engine did
//     not issue, or reports after the first, does nothing (out untouched).
//   - Unknown objects: NodeDeleted, PodDeleted, ResourceSliceDeleted,
//     DeviceClassDeleted, ResourceClaimDeleted and
//     ResourceClaimTemplateDeleted for an object the engine does not know
//     change nothing (but for a DRA pass at the next Tick); a Bind for a pod or node it does not
//     know (or a pod it did not place) fails at once with a BindReply naming what is missing.
//   - Replies: every Filter gets exactly one FilterReply and every Bind one
//     BindReply, carrying its `request`, from this call or a later one
//     (Filter: after a PATCH, or a hold; Bind: after its writes and lock
//     waits). Held Filters are answered in the order received; the binds
//     waiting for one node's lock try it in the order they began to wait.
//   - `now_ms` is the caller's clock; the engine reads no other. It is
//     taken not to go backwards: a step back only delays what is due
//     (passes, lock retries, the end of holds).
class Engine {
 public:
  explicit Engine(EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Watch events. A pod deletion needs only its UID.
  void NodeObserved(const Node& node, std::int64_t now_ms, std::vector<Command>& out);
  void NodeDeleted(const std::string& name);
  void PodObserved(const Pod& pod);
  void PodDeleted(const std::string& uid);
  void LeaseObserved(const std::optional<LeaseRecord>& lease, std::int64_t now_ms,
                     std::vector<Command>& out);

  // ResourceQuota watch events. A quota's device limits (the `limits.` keys
  // of a vendor's memory and core resources, as HAMi reads them; the
  // tightest of a namespace's quotas wins) bind Filter, Prioritize and the
  // webhook's pre-check from the next call. A device limit that is not a
  // whole number limits nothing and is kept in quota_errors.
  void ResourceQuotaObserved(const ResourceQuota& quota);
  void ResourceQuotaDeleted(const std::string& quota_namespace, const std::string& name);

  // PodDisruptionBudget watch events: preemption avoids the victims they
  // protect.
  void PodDisruptionBudgetObserved(const PodDisruptionBudget& budget);
  void PodDisruptionBudgetDeleted(const std::string& budget_namespace, const std::string& name);

  // DRA watch events (EngineOptions::dra_device_classes). The engine
  // allocates nothing until DraSynced: the first listing of every DRA
  // object has been applied.
  void ResourceSliceObserved(dra::ResourceSlice slice);
  void ResourceSliceDeleted(const std::string& name);
  void DeviceClassObserved(dra::DeviceClass device_class);
  void DeviceClassDeleted(const std::string& name);
  void ResourceClaimObserved(dra::ResourceClaim claim);
  void ResourceClaimDeleted(const std::string& claim_namespace, const std::string& name);
  void ResourceClaimTemplateObserved(dra::ResourceClaimTemplate claim_template);
  void ResourceClaimTemplateDeleted(const std::string& template_namespace, const std::string& name);
  void DraSynced();

  // Time passing: runs a registration pass when one is due, retries node
  // locks whose wait is over, refuses held Filters whose hold is over, and
  // lets leadership lapse.
  void Tick(std::int64_t now_ms, std::vector<Command>& out);

  // The earliest time Tick has work to do (nullopt: none until an event).
  // A driver calls Tick no later than this.
  std::optional<std::int64_t> NextWakeMs() const;

  // Extender requests; the reply comes as a command, now or after the API
  // calls it needs (a Filter: or once the binds in flight allow, see
  // EngineOptions::api_qps).
  void Filter(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
              std::int64_t now_ms, std::vector<Command>& out);
  void Bind(std::uint64_t request, const std::string& pod_namespace, const std::string& name,
            const std::string& uid, const std::string& node, std::int64_t now_ms,
            std::vector<Command>& out);
  // The extender's prioritize: every feasible node among `nodes` with its
  // score (NodeScore::normalized is the contract, 0..100, higher is better,
  // for every node policy). No side effects, so the answer is immediate.
  // Errors: kUnavailable when not Ready (a cache that may be stale must not
  // rank nodes), and Filter's errors.
  Result<std::vector<NodeScore>> Prioritize(const Pod& pod, const std::vector<std::string>& nodes,
                                            std::int64_t now_ms) const;

  // The extender's preempt verb (ExtenderPreemptionArgs): for each node
  // kube-scheduler proposes, with the victims it chose there (UIDs; none
  // for a node it saw no victims on), the victims that make the pod fit by
  // devshare's Filter too: the proposal as it is when the pod fits once
  // they are gone, with the lower-priority pods devshare's plan adds when
  // not; a node where no eviction helps is left out. A pod preempting
  // already gets its own node and victims alone; one whose preemptionPolicy
  // is Never, nothing. No side effects. Errors: kUnavailable when not
  // Ready, and Filter's errors.
  Result<std::map<std::string, NodeVictims>> ExtenderPreempt(
      const Pod& pod, const std::map<std::string, NodeVictims>& proposed,
      std::int64_t now_ms) const;

  // The outcome of a PatchNode/PatchPod/PostBinding/WriteClaimStatus/
  // RemoveSchedulingGate/EvictPod command.
  void ApiResult(std::uint64_t id, bool succeeded, std::int64_t now_ms, std::vector<Command>& out);

  // The drift auditor (devshare/engine/audit.hpp). Compares the engine's
  // view with `listing`, read afresh from the API server; every difference
  // seen now is in the report, and each confirmed one (seen by audits
  // `audit_grace_ms` apart) is counted once and healed: the lock releases
  // go to `out`, the objects to read again are in the report. A follower
  // audits its cache too, but writes nothing (no lock release).
  AuditReport Audit(const AuditListing& listing, std::int64_t now_ms, std::vector<Command>& out);
  // When the earliest suspected difference can be confirmed (nullopt: none
  // is suspected): an audit then decides it.
  std::optional<std::int64_t> AuditFollowUpMs() const;
  // What a read an audit asked for found: the object, or nullopt when the
  // server has none. A node is applied as a watch event would be; a pod
  // that is missing, finished, or another pod under the name (another UID)
  // makes the engine forget `asked.uid`, and an unfinished one is applied.
  void NodeRead(const std::string& name, const std::optional<Node>& node, std::int64_t now_ms,
                std::vector<Command>& out);
  void PodRead(const PodToRead& asked, const std::optional<Pod>& pod);
  // A claim or quota read again (nullopt: the server has none), applied as
  // a watch event would be.
  void ClaimRead(const ObjectToRead& asked, std::optional<dra::ResourceClaim> claim);
  void QuotaRead(const ObjectToRead& asked, const std::optional<ResourceQuota>& quota);
  const AuditTotals& audit_totals() const;

  // /readyz: leading and one registration pass completed since.
  bool Ready(std::int64_t now_ms) const;
  const Counters& counters() const { return counters_; }
  // Nodes whose devices could not all be registered, with why: a register
  // annotation that does not decode (the node is cached without that
  // vendor's devices, as HAMi drops them). An entry goes when the node
  // registers cleanly again or is deleted.
  const std::map<std::string, std::string>& node_errors() const;
  // Pods (by UID) whose device annotations do not decode, with why: they
  // hold no devices here, as in HAMi. An entry goes when the pod decodes or
  // is deleted.
  const std::map<std::string, std::string>& pod_errors() const;
  // Quotas ("namespace/name") with a device limit that is not a whole
  // number, with why. An entry goes when the quota is set cleanly again or
  // deleted.
  const std::map<std::string, std::string>& quota_errors() const;
  std::size_t quota_count() const;  // ResourceQuota objects known
  const ClusterSnapshot& snapshot() const { return snapshot_; }
  // DRA: the gated pods waiting, by UID, with why (those being written
  // are not).
  const std::map<std::string, DraHold>& dra_held() const;
  std::size_t dra_gated() const;  // gated pods this engine knows of
  // The preemptions under way, by the preemptor's UID.
  const std::map<std::string, Preemption>& preemptions() const;

 private:
  struct Impl;
  struct NodeMemory;
  struct BindFlow;
  struct FilterFlow;
  struct Release;
  struct AuditPass;  // audit.cpp
  bool Leading() const;
  // Filter without the hold: place, reserve, reply (or PATCH, then reply).
  void Place(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
             std::int64_t now_ms, std::vector<Command>& out);
  // The binds in flight need `bind_budget_ms` of the client's writes.
  bool BindsBacklogged() const;
  // Places the held Filters, oldest first, while the binds allow.
  void PlaceHeldFilters(std::int64_t now_ms, std::vector<Command>& out);
  void CacheNode(const Node& node);  // snapshot_.AddNode, recording node_errors
  // A node without usable registered devices: cached without them when
  // serving DRA classes, else not cached.
  void CacheDraOnly(const NodeMemory& memory);
  void RegistrationPass(std::int64_t now_ms, std::vector<Command>& out);
  void RegisterNode(const std::string& name, NodeMemory& memory, std::int64_t now_ms,
                    std::vector<Command>& out);
  // Filter among `nodes` (every cached node when empty) by how busy each is
  // for `pod` — the binds of other pods that hold its lock (1) or are about
  // to take it (1 each: placed by Filter, not yet bound) — on the
  // candidates no busier than the least busyness first, then the next, up
  // to but not including the busiest: the first placement made. nullopt
  // when none is made or no candidate is busier than another (usually: no
  // node busy at all, at the cost of a look at the locked and reserved).
  std::optional<Result<FilterResult>> PlaceAroundBusyNodes(const Pod& pod,
                                                           const std::vector<std::string>& nodes,
                                                           std::int64_t now_ms) const;
  // Preemption (engine_preempt.cpp). Preempt: Filter found no room for
  // `pod` (the nodes' reasons in `failed`); replies, preempting when it
  // may. PlaceOnNominatedNode: a pod preempting goes to its node alone
  // while its victims are still there (Filter's answer there; nullopt: no
  // preemption, or its node is out of `nodes`, or the victims are gone and
  // it does not fit there). EndPreemption: it ended (placed, bound,
  // deleted), the devices kept released unless `keep_devices`;
  // GiveUpPreemption: ended without the pod placed. EvictionResult: an
  // EvictPod's ApiResult (false: not one). BeginPreemption: evicts
  // `chosen`'s victims for `pod`, nominates it there and records the
  // preemption; returns the message naming the victims.
  void Preempt(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
               std::vector<NodeFailure> failed, std::int64_t now_ms, std::vector<Command>& out);
  std::optional<Result<FilterResult>> PlaceOnNominatedNode(const Pod& pod,
                                                           const std::vector<std::string>& nodes,
                                                           std::int64_t now_ms) const;
  // The pods `pod` may preempt: bound, of lower priority, not terminating
  // nor another preemption's victim.
  std::vector<Pod> PossibleVictims(const Pod& pod) const;
  std::vector<PodDisruptionBudget> Budgets() const;
  std::string BeginPreemption(const Pod& pod, const PreemptionCandidate& chosen,
                              std::int64_t now_ms, std::vector<Command>& out);
  void EndPreemption(const std::string& uid, bool keep_devices);
  void GiveUpPreemption(const std::string& uid, std::int64_t now_ms);
  void VictimGone(const std::string& uid);  // a pod was deleted
  bool EvictionResult(std::uint64_t id, bool succeeded, std::int64_t now_ms);
  void PreemptionTick(std::int64_t now_ms);
  // Retry: annotates the pods refused within the window before now, once a
  // deletion freed devices.
  void RequestRetries(std::int64_t now_ms, std::vector<Command>& out);
  std::optional<std::int64_t> PreemptionWakeMs() const;
  void TryLock(BindFlow flow, std::int64_t now_ms, std::vector<Command>& out);
  void LockBlocked(BindFlow flow, std::string reason, std::int64_t now_ms,
                   std::vector<Command>& out);
  // LockRetry::kRelease: `node` was observed; if its lock is free, the binds
  // waiting for it try again, in order, until one writes the lock.
  void WakeLockWaiters(const std::string& node, std::int64_t now_ms, std::vector<Command>& out);
  void FailBind(const BindFlow& flow, std::string error, std::vector<Command>& out);
  // Writes the release of `lock` (this engine's) on `node`, conditional on
  // the node still carrying it; `attempt` counts the writes (1: the first).
  void ReleaseLock(const std::string& node, const std::string& lock, int attempt,
                   std::vector<Command>& out);
  void ReplyBind(const BindFlow& flow, std::string error, std::vector<Command>& out);
  void Locked(BindFlow flow, std::int64_t now_ms, std::vector<Command>& out);
  void BindWithPlacement(BindFlow flow, std::int64_t now_ms, std::vector<Command>& out);
  // The results ApiResult routes, by the flow that issued the command (a
  // DRA write's: DraResult). PlaceResult: HAMi's placement PATCH, the
  // Filter's reply. BindResult: a bind's lock write (a failure is
  // contention: LockBlocked), bind-phase PATCH or Binding (a failure fails
  // the bind, releasing its lock and reservation). ReleaseResult: a write
  // with no follow-up (registration, lock release, failed bind phase); a
  // failed lock release is written again later (Tick).
  void PlaceResult(FilterFlow flow, bool succeeded, std::vector<Command>& out);
  void BindResult(BindFlow flow, bool succeeded, std::int64_t now_ms, std::vector<Command>& out);
  void ReleaseResult(const Release& release, bool succeeded, std::int64_t now_ms);
  std::uint64_t NextId() { return next_id_++; }
  // DRA (dra.cpp): when a pass is next due (0: now; nullopt: not until an
  // event), whether it is, the pass, one pod of it — on every node, or on
  // the nodes `gained` alone — and the result of one of its writes (false:
  // not a DRA write).
  struct DraWrite;
  void MakeDraPlacer();  // the constructor's: the placer, or why there is none
  std::optional<std::int64_t> DraNextPassMs() const;
  bool DraPassDue(std::int64_t now_ms) const;
  void DraPass(std::int64_t now_ms, std::vector<Command>& out);
  void DraPlacePod(const Pod& pod, const std::vector<std::string>* gained, std::int64_t now_ms,
                   std::vector<Command>& out);
  void DraHoldPod(const Pod& pod, DraHoldKind kind, std::string reason, std::int64_t now_ms,
                  std::vector<Command>& out);
  // What concerns a gated pod (dra_due.cpp). DraDue: `uid` is judged at the
  // next pass, on every node; DraDueAt: at `at_ms`. DraRoomOn: room may have
  // grown on `node`: the pods held for want of room that may go there are
  // judged there; DraRoomAnywhere: on every node. DraPreemptorsDue: the
  // pods preempting (their victims or claims changed). DraUnhold: no longer
  // held. DraClaimChanged: the snapshot's claim `before` (nullptr: new)
  // becomes `after` (nullptr: deleted). DraClaimSeen: the watch shows
  // `claim`: one fewer for the gates waiting on it (DraWrite::unseen).
  // DraPodChanged: a pod observed
  // (`after`) or deleted (nullptr), `before` as last known (nullptr: new).
  // DraNodeCached: the snapshot is about to cache `node` anew.
  void DraDue(const std::string& uid);
  void DraDueAt(const std::string& uid, std::int64_t at_ms);
  void DraRoomOn(const std::string& node);
  void DraRoomAnywhere();
  void DraPreemptorsDue();
  void DraUnhold(const std::string& uid);
  void DraClaimChanged(const dra::ResourceClaim* before, const dra::ResourceClaim* after);
  void DraClaimSeen(const dra::ResourceClaim& claim);
  void DraPodChanged(const Pod* before, const Pod* after, const std::string& uid);
  void DraNodeCached(const Node& node);
  bool DraResult(std::uint64_t id, bool succeeded, std::int64_t now_ms, std::vector<Command>& out);
  // `w`'s gate asked off (the claims written and shown, or none to write).
  void DraRemoveGate(DraWrite& w, std::vector<Command>& out);
  void DraWriteClaim(DraWrite& w, const dra::ResourceClaim& observed, dra::ResourceClaim assumed,
                     std::vector<Command>& out);
  // The claims the webhook named for `pod`'s extended resources that are not
  // there yet, made (once each until the watch shows them or the write
  // fails); false with `why` when the pod's list does not decode.
  bool DraCreateExtendedClaims(const Pod& pod, std::string& why, std::vector<Command>& out);
  // Counts `uid`'s CPU and memory on `node` until it is seen bound (nullopt:
  // no longer; the room goes back to its node).
  void DraAssume(const std::string& uid, const std::optional<std::string>& node);
  // DRA preemption (dra_preempt.cpp). DraPreempt: `pod`'s `claims` fit
  // nowhere (`no_fit` says why): preempts when it may, else holds it saying
  // why not. DraVictimsGone: for a pod preempting, whether its victims are
  // gone and their claims released, its kept allocations then taken back
  // (DraDropKept) for it to be placed anew; otherwise it holds the pod,
  // releasing a victim's claim left allocated for no one, and is false.
  void DraPreempt(const Pod& pod, const std::vector<dra::ResourceClaim>& claims,
                  const dra::PodResources& resources, std::string no_fit, std::int64_t now_ms,
                  std::vector<Command>& out);
  bool DraVictimsGone(const Pod& pod, std::int64_t now_ms, std::vector<Command>& out);
  void DraDropKept(const std::string& uid);

  EngineOptions options_;
  ClusterSnapshot snapshot_;
  Counters counters_;
  std::unique_ptr<Impl> impl_;
  std::uint64_t next_id_ = 1;
};

}  // namespace devshare::engine

#endif  // DEVSHARE_ENGINE_ENGINE_HPP_
