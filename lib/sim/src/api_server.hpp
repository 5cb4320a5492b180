// Private: the API server model — the objects it stores and the way
// requests reach it.
//
// Objects: the nodes (in name order; a node is named by its index), the
// pods (by the scenario's index, once created), the ResourceQuotas, the
// PodDisruptionBudgets, the scheduler's Lease, and
// `truth()`: the cluster as these objects say, independent of any engine
// (a node's devices as registered, a pod's devices from its annotations
// once it is bound).
//
// Requests: each scheduler replica writes through a client of its own that
// waits for its token bucket (client-go's QPS and burst); the plugins and
// kubelets write through clients of their own, which their rare writes
// never throttle. The server serves `max_inflight` requests at once and
// answers 429 with Retry-After beyond that; a request takes the model's
// latency with jitter. A node write with a stale precondition, a Binding
// of a pod bound already and a Lease write from a stale read get 409. An
// eviction (policy/v1 Eviction) of a bound pod a budget covers is refused
// with 429 when the budget allows no disruption (500 when two budgets cover
// it, as the Eviction API does); otherwise the pod turns terminating: the
// coordinator deletes it once its grace period is over.
// Reads are free (watch caches), so the models read the objects directly.
//
// The server applies a request when it completes and says what it did
// (`Completion`); who hears of it (the engine that asked, the watches) is
// the coordinator's business.
//
// Thread-safety: none; a run is single-threaded.
#ifndef DEVSHARE_SIM_SRC_API_SERVER_HPP_
#define DEVSHARE_SIM_SRC_API_SERVER_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "devshare/engine/engine.hpp"
#include "devshare/lease.hpp"
#include "devshare/objects.hpp"
#include "devshare/sim/simulator.hpp"
#include "devshare/snapshot.hpp"
#include "event_queue.hpp"

namespace devshare::sim::internal {

// Requests by who sends them; the name is the report's.
enum class Verb : std::uint8_t {
  kPatchNode,    // "patch-node": an engine's node write (lock, handshake)
  kPatchPod,     // "patch-pod": an engine's pod write (assignment, bind-phase)
  kBinding,      // "binding": an engine's Binding
  kPluginNode,   // "plugin-patch-node": a device plugin's node write
  kPluginPod,    // "plugin-patch-pod": a device plugin's pod write
  kKubeletNode,  // "kubelet-patch-node": the kubelet's node status
  kLease,        // "lease": a kube-scheduler's leader-election write
  kEviction,     // "eviction": an engine's eviction of a preemption victim
  kNominate,     // "patch-pod-status": an engine's nominatedNodeName
};
inline constexpr std::size_t kVerbCount = 9;
std::string_view VerbName(Verb verb);

// A plugin's or kubelet's node write: annotations and, when set, the
// allocatable GPUs.
struct NodeWrite {
  std::size_t node;
  std::vector<AnnotationWrite> writes;
  std::optional<std::string> gpu_allocatable;
};
// A plugin's pod write.
struct PodWrite {
  std::size_t pod;
  StringMap annotations;
};
// A Lease create or update as the elector decided it.
struct LeaseWrite {
  ElectionDecision decision;
};

struct Request {
  Verb verb;
  // The scheduler replica whose engine (or elector) hears the outcome and
  // whose token bucket the request waits for; -1: nobody waits.
  int client;
  std::variant<engine::PatchNode, engine::PatchPod, engine::PostBinding, NodeWrite, PodWrite,
               LeaseWrite, engine::EvictPod, engine::NominatePod>
      body;
};

// A request the server has applied, or refused.
struct Completion {
  Request request;
  bool ok = false;       // false: 404 (no such object), 409, or an eviction refused
  std::size_t node = 0;  // the node written (a PatchNode that succeeded, a NodeWrite)
  // The pod written (a PatchPod or Binding that succeeded, a PodWrite, a
  // pod evicted or nominated).
  std::size_t pod = 0;
  bool evicted = false;  // an EvictPod turned the pod terminating
};

class ApiServer {
 public:
  // `clients`: the scheduler replicas, each with a full token bucket.
  // `pods`: the scenario's pods, none created yet. `register_key`: the
  // annotation whose writes change a node's devices. `rng` draws the
  // latencies' jitter.
  ApiServer(const ApiModel& model, std::size_t clients, std::size_t pods, std::string register_key,
            EventQueue& events, std::mt19937_64& rng);
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // ---- the objects

  // Adds the next node, at resourceVersion 1; nodes are added in name
  // order.
  void AddNode(Node object);
  std::size_t node_count() const { return nodes_.size(); }
  const Node& node(std::size_t index) const { return nodes_[index].object; }
  // REQUIRES: a node named `name` exists.
  std::size_t NodeIndex(const std::string& name) const { return node_index_.at(name); }

  // Creates the scenario's pod `index`.
  void CreatePod(std::size_t index, Pod object);
  bool created(std::size_t pod) const { return pods_[pod].created; }
  std::size_t pod_count() const { return pods_.size(); }
  const Pod& pod(std::size_t index) const { return pods_[index].object; }
  // kube-scheduler's own Binding of a pod without devices (not modelled as
  // a request): the pod names its node and counts in `truth()`.
  void BindPod(std::size_t pod, const std::string& node);
  // The pod is deleted: its devices, CPU and memory leave `truth()` (the
  // object stays for the report); a Binding of it fails from then on.
  void DeletePod(std::size_t pod);
  // Created and not deleted: what a LIST of the pods shows.
  bool exists(std::size_t pod) const { return pods_[pod].created && !pods_[pod].deleted; }
  // The created pod named `name`: names are unique in a scenario, whatever
  // the namespace (Run checks).
  std::optional<std::size_t> PodIndex(const std::string& name) const;
  // The node a NominatePod last set (empty: none).
  const std::string& nominated_node(std::size_t pod) const { return pods_[pod].nominated_node; }
  // The node is deleted and created again under its name as `object`
  // (another UID): a new object at the next resourceVersion, its devices
  // registered afresh in `truth()`.
  void ReplaceNode(std::size_t index, Node object);

  // Adds a ResourceQuota, at resourceVersion 1; `truth()` applies its
  // device limits. Errors: ClusterSnapshot::SetQuota's (a device limit that
  // is not a whole number: the quota is kept, that limit ignored).
  Status AddQuota(ResourceQuota quota);
  const std::vector<ResourceQuota>& quotas() const { return quotas_; }

  // Adds a PodDisruptionBudget. REQUIRES: CheckBudget(budget).ok().
  void AddBudget(DisruptionBudget budget) { budgets_.push_back(std::move(budget)); }
  std::size_t budget_count() const { return budgets_.size(); }
  // Budget `index` with its status now (disruption.hpp).
  PodDisruptionBudget BudgetStatus(std::size_t index) const;

  const std::optional<LeaseRecord>& lease() const { return lease_; }
  const ClusterSnapshot& truth() const { return truth_; }
  // The first refusal of `truth()` to take an object: the simulator writes
  // every annotation itself, so anything but ok is a bug the run reports.
  const Status& truth_error() const { return truth_error_; }

  // ---- requests

  // Sends a request: it reaches the server when its client's token bucket
  // lets it (the replicas' writes), else now.
  void Submit(Request request);
  // kRequestStart: the server takes the request, or answers 429 and the
  // client sends it again after Retry-After.
  void Receive(std::uint64_t id);
  // kRequestDone: the request is applied (or refused) and handed back.
  Completion Complete(std::uint64_t id);

  // What the report counts of the server: calls by verb, 429s, 409s, the
  // evictions budgets refused and the time the replicas' writes waited for
  // tokens.
  void AddTo(Report& report) const;

 private:
  struct StoredNode {
    Node object;
    std::uint64_t resource_version = 1;
  };
  struct StoredPod {
    Pod object;
    bool created = false;
    bool deleted = false;
    std::string nominated_node;
  };
  struct TokenBucket {
    double tokens = 0;
    std::int64_t refilled_at = 0;
  };

  static bool Throttled(const Request& request);
  std::int64_t TokenAt(int client, std::int64_t from);

  bool Apply(Completion& done, engine::PatchNode& c);
  bool Apply(Completion& done, engine::PatchPod& c);
  bool Apply(Completion& done, engine::PostBinding& c);
  bool Apply(Completion& done, NodeWrite& w);
  bool Apply(Completion& done, PodWrite& w);
  bool Apply(Completion& done, LeaseWrite& w);
  bool Apply(Completion& done, engine::EvictPod& c);
  bool Apply(Completion& done, engine::NominatePod& c);
  // The eviction of `pod` would leave a budget covering it below 0
  // disruptions (or two budgets cover it).
  bool EvictionRefused(const Pod& pod) const;

  static bool Holds(const Node& node, const std::vector<AnnotationWrite>& preconditions);
  void WriteNode(std::size_t index, const std::vector<AnnotationWrite>& writes,
                 const std::optional<std::string>& gpu_allocatable);

  const ApiModel& model_;
  const std::string register_key_;
  EventQueue& events_;
  std::mt19937_64& rng_;

  std::vector<StoredNode> nodes_;  // by name
  std::unordered_map<std::string, std::size_t> node_index_;
  std::vector<StoredPod> pods_;  // by the scenario's index
  std::unordered_map<std::string, std::size_t> pod_by_name_;
  std::vector<ResourceQuota> quotas_;
  std::vector<DisruptionBudget> budgets_;
  std::optional<LeaseRecord> lease_;
  std::uint64_t lease_version_ = 0;
  ClusterSnapshot truth_;
  Status truth_error_;
  void Record(Status status) {
    if (truth_error_.ok() && !status.ok()) truth_error_ = std::move(status);
  }

  std::vector<TokenBucket> buckets_;  // by client
  std::unordered_map<std::uint64_t, Request> requests_;
  std::uint64_t next_request_ = 1;
  std::int32_t inflight_ = 0;

  std::array<std::uint64_t, kVerbCount> calls_{};
  std::uint64_t rejected_429_ = 0, conflicts_409_ = 0, evictions_refused_ = 0;
  std::int64_t throttled_ms_ = 0;
};

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_API_SERVER_HPP_
