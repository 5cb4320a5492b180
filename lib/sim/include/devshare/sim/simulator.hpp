// devshare/sim/simulator.hpp — a discrete-event cluster that drives the
// engine: the same scheduler service a deployment runs, against simulated
// API server, kube-scheduler, kubelets and device plugins.
//
// Time is virtual (milliseconds); every random choice comes from one seeded
// generator, so the same scenario and seed give the same report, bit for bit.
//
// Models:
//   API server   every client (each scheduler replica; the plugins and
//                kubelets, which write rarely, unthrottled) waits for its
//                token bucket (client-go's QPS 5 / burst 10 by default); the
//                server serves `max_inflight` requests at once and answers
//                429 with Retry-After beyond that; a request takes a latency
//                with jitter; node writes bump the node's resourceVersion
//                and a write with a stale precondition gets 409. Watch
//                events reach every live replica when a write completes.
//   scheduler    kube-scheduler runs one scheduling cycle at a time in queue
//                order: NodeResourcesFit on CPU and memory, then the
//                engine's Filter as an extender (30 s timeout); the Bind runs
//                asynchronously while the next cycle starts. A pod that fits
//                nowhere is given up (the FGD paper's experiment) or retried
//                with kube-scheduler's backoff (1 s doubling to 10 s). A pod
//                without devices is bound by kube-scheduler itself, on the
//                node the Filter names when it names one (fgd), else on the
//                first node that fits.
//                With several replicas, their kube-schedulers elect a leader
//                through a Lease (client-go's 15 s / 10 s / 2 s) and each
//                replica's engine follows it.
//   kubelet      after the Binding, Allocate runs and the device plugin
//                reports bind-phase success and releases the node lock; a
//                hung or crashed plugin delays Allocate until it is back.
//   plugins      legacy: every heartbeat the register annotation and the
//                handshake stamp are written, changed or not; change-only:
//                a write only when the device list changes.
//   faults       plugin hang (silent), plugin crash (silent and the
//                kubelet reports no devices), a device turning unhealthy,
//                the leading replica crashing — each for a duration; and
//                the drift a real watch suffers: events the replicas miss
//                for a duration (they resume without a relist), a pod
//                deleted while its bind is in flight and a node deleted and
//                re-created under its name with its pods gone, each with
//                its watch events lost.
//   audits       with `audit_period_ms`, each live replica's engine audits
//                its cache against the API objects (Engine::Audit) that
//                often, and the objects it asks for are read at once.
//   pods         run for their duration (forever when 0) and are deleted.
//   quotas       ResourceQuotas held from the start; the engines apply their
//                device limits (HAMi's `limits.<memory or core resource>`)
//                in Filter, and a pod no device fits within its namespace's
//                quota is pending for ResourceQuotaNotFit.
//   preemption   pods carry a priority (and preemptionPolicy); the
//                scheduling queue takes the highest priority first, then
//                the earliest queued. The engines preempt (EngineOptions::
//                preemption): an EvictPod is the Eviction API — refused
//                with 429 when a PodDisruptionBudget of the pod allows no
//                disruption, else the pod turns terminating (the watches
//                say so), keeps its devices, CPU and memory for its
//                termination grace period and is deleted; a NominatePod
//                sets the pod's nominated node. An evicted pod is not
//                created again (its controller is not modelled): its run
//                is lost. Budgets' status is recomputed as pods bind, turn
//                terminating and go, and sent to the engines when it
//                changes. kube-scheduler's own preemption is not modelled
//                (v1.37 finds no victims for a device it does not see).
//
// An invariant checker runs throughout: after every Binding the pod must not
// be bound already, its devices must be on its node, no device may exceed
// its slots, memory or cores (checked on the cluster as the API objects
// say, independent of any engine), no namespace may use more of a device
// resource than its quotas allow (on the same objects), and the leading
// engine's cache must hold the same devices for the pod as its
// annotations; a placement may come only from an engine that had completed
// a registration pass. A preemption's victims must all be of lower
// priority than its preemptor, and every eviction must be a preemption's.
// The first violation ends the run with an error naming the time and the
// pod.
//
// Thread-safety: none; a run is single-threaded.
#ifndef DEVSHARE_SIM_SIMULATOR_HPP_
#define DEVSHARE_SIM_SIMULATOR_HPP_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/dra_place.hpp"
#include "devshare/engine/engine.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"

namespace devshare::sim {

struct NodeSpec {
  std::string name;
  std::int32_t gpus = 0;
  std::int32_t gpu_memory_mib = 16384;
  std::string model;
  std::int64_t cpu_milli = 0;   // 0: unlimited
  std::int64_t memory_mib = 0;  // 0: unlimited
};

struct PodSpec {
  std::string name;
  std::int32_t gpus = 0;       // devices
  std::int32_t gpu_milli = 0;  // share of one device when gpus == 1 (1..1000)
  std::string gpu_spec;        // allowed models, '|'-joined; empty: any
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::int64_t arrive_ms = 0;
  std::int64_t duration_ms = 0;       // from bound to deleted; 0: runs to the end
  std::string pod_namespace = "sim";  // metadata.namespace
  // The `{}` let aggregate initializers leave these out without
  // -Wmissing-field-initializers.
  // NOLINTBEGIN(readability-redundant-member-init)
  StringMap labels{};  // metadata.labels (a scenario file's: kPodClassLabel)
  // spec.priority and spec.preemptionPolicy ("" or "Never"), as the API
  // server's Priority admission sets them from spec.priorityClassName.
  std::int64_t priority = 0;
  std::string preemption_policy{};
  std::string priority_class{};  // spec.priorityClassName (empty: none)
  // NOLINTEND(readability-redundant-member-init)
  std::int64_t termination_grace_seconds = 30;  // Default: Kubernetes' 30 s
};

// The label a scenario file gives each pod: the name of its pod class (a
// budget's `pod_class:` selects it).
inline constexpr std::string_view kPodClassLabel = "sim.devshare.io/class";

// A PodDisruptionBudget (policy/v1) the API server holds from time 0: the
// pods of its namespace its selector matches (an empty selector: none, as
// kube-scheduler reads it), and exactly one of min_available and
// max_unavailable, each a whole number or a percentage ("50%") of the
// budget's pods. Its status is the disruption controller's: the pods it
// expects are the matching pods that exist (created, not yet deleted); the
// healthy ones are those bound and not terminating; disruptionsAllowed =
// max(0, healthy - desired), desired being min_available (a percentage of
// the expected, rounded up), or the expected less max_unavailable (a
// percentage rounded up).
struct DisruptionBudget {
  std::string budget_namespace = "sim";
  std::string name;
  LabelSelector selector;
  std::string min_available;    // empty: not set
  std::string max_unavailable;  // empty: not set
};

struct ApiModel {
  double qps = 5;           // Default: client-go's 5, per scheduler replica
  std::int32_t burst = 10;  // Default: client-go's 10
  std::int64_t latency_ms = 20;
  std::int64_t jitter_ms = 10;
  std::int32_t max_inflight = 400;     // Default: kube-apiserver's 400 read + 200 write, as one
  std::int64_t retry_after_ms = 1000;  // a 429's Retry-After
  std::int64_t allocate_ms = 500;      // Binding to the kubelet's Allocate
};

struct PluginModel {
  enum class Mode { kChangeOnly, kLegacy };
  Mode mode = Mode::kChangeOnly;
  std::int64_t heartbeat_ms = 30000;  // Default: the plugins' 30 s
};

struct SchedulerModel {
  std::int32_t replicas = 1;                 // > 1: leader election through a Lease
  bool retry_unschedulable = false;          // false: a pod that fits nowhere is given up
  std::int64_t initial_backoff_ms = 1000;    // Default: kube-scheduler's 1 s
  std::int64_t max_backoff_ms = 10000;       // Default: kube-scheduler's 10 s
  std::int64_t extender_timeout_ms = 30000;  // Default: HAMi's extender httpTimeout
};

struct Fault {
  enum class Kind {
    kPluginHang,
    kPluginCrash,
    kDeviceUnhealthy,
    kLeaderCrash,
    kMissedEvents,      // the replicas hear no pod or node event for the duration
    kPodDeletedInBind,  // the first pod whose bind is in flight is deleted, unheard
    kNodeReplaced,      // `node` re-created under its name (a new UID), its pods deleted, unheard
  };
  Kind kind = Kind::kPluginHang;
  std::int64_t at_ms = 0;
  std::int64_t duration_ms = 0;  // 0: for good
  std::string node;              // the node of a plugin or device fault
};

// The names scenario files and reports give fault kinds.
inline constexpr auto kFaultKindNames =
    MakeEnumNames<Fault::Kind>({{"plugin-hang", Fault::Kind::kPluginHang},
                                {"plugin-crash", Fault::Kind::kPluginCrash},
                                {"device-unhealthy", Fault::Kind::kDeviceUnhealthy},
                                {"leader-crash", Fault::Kind::kLeaderCrash},
                                {"missed-events", Fault::Kind::kMissedEvents},
                                {"pod-deleted-in-bind", Fault::Kind::kPodDeletedInBind},
                                {"node-replaced", Fault::Kind::kNodeReplaced}});

// DRA mode: the nodes' GPUs are published as ResourceSlices the way HAMi's
// DRA driver publishes them (driver hami-core-gpu.project-hami.io, a pool
// per node, each GPU a device hami-gpu-<i> with attributes type, minor,
// productName (the node's model) and uuid, and consumable capacity
// `cores` (100; default 100, 0..100 step 1) and `memory` (the GPU's; by
// default all of it, 1Mi..all step 1Mi) shared by several claims), and a
// GPU pod's request is a ResourceClaim of the DeviceClass `hami-gpu`: a
// share of one GPU asks `cores` = max(1, gpu_milli / 10) and that
// percentage of `memory` of the smallest GPU in the scenario, in whole MiB
// rounded down as HAMi's percentage is (so cores bind
// on every GPU, as the share does under HAMi's mapping); n whole GPUs ask
// n devices with no capacity named (all of each); `gpu_spec` is a CEL
// selector on productName.
//
// What runs is placement alone, in arrival order, departures first: the
// pod's CPU and memory (NodeResourcesFit) and its claim on each node
// through dra::Placer, and
//   upstream  kube-scheduler v1.37's choice: nodes visited from a rotating
//             start until numFeasibleNodesToFind fit (percentageOfNodesToScore
//             unset: max(5, 50 - nodes/125) %, at least 100 nodes), scored
//             by NodeResourcesFit's LeastAllocated and
//             NodeResourcesBalancedAllocation on CPU and memory (DRA adds no
//             score for exactly-requests), a tie broken at random (the
//             seed's), the devices its allocator takes on that node;
//   binpack, spread, fgd  devshare's choice of node and devices.
// Not modelled here: the API server, binding, kubelets, replicas, faults,
// retries (a pod that fits nowhere is given up). Latencies are 0.
struct DraMode {
  bool enabled = false;
  dra::Policy policy = dra::Policy::kUpstream;  // named as dra::kPolicyNames says
};

struct Scenario {
  std::vector<NodeSpec> nodes;
  std::vector<PodSpec> pods;
  engine::EngineOptions engine;
  ApiModel api;
  PluginModel plugins;
  SchedulerModel scheduler;
  std::vector<Fault> faults;
  std::int64_t end_ms = 0;           // 0: when every pod is bound or given up
  std::int64_t audit_period_ms = 0;  // 0: no drift audits (engine.audit_grace_ms confirms)
  DraMode dra;
  // ResourceQuotas the API server holds from time 0, each engine listing
  // them as it lists the nodes (Engine::ResourceQuotaObserved). A device
  // limit that is not a whole number limits nothing and is reported
  // (Report::quota_warnings). Not modelled in DRA mode (refused).
  std::vector<ResourceQuota> quotas;
  // PodDisruptionBudgets (not in DRA mode). The Eviction API honours them
  // and every engine watches them with their status.
  std::vector<DisruptionBudget> budgets;
};

// The cluster when the GPUs asked by the arrived pods first reach
// `demand_percent` of its GPUs (sampled as the pod reaching it arrives,
// before it is placed): the FGD paper's fragmentation over arrived workload.
struct FragmentationSample {
  double demand_percent = 0;
  double allocation_percent = 0;  // GPUs held by running pods / cluster GPUs
  double gpu_free = 0;
  double gpu_fragmented = 0;
  friend bool operator==(const FragmentationSample&, const FragmentationSample&) = default;
};

// One namespace's pods and, for each device resource a quota limits there
// (the tightest of its quotas), the limit and the most its bound pods used
// at once (measured on the API objects after every Binding). A namespace
// without a device quota has one entry with an empty resource.
struct QuotaReport {
  std::string pod_namespace;
  std::string resource;     // e.g. "nvidia.com/gpumem"; empty: no device quota
  std::int64_t limit = -1;  // -1: no device quota
  std::int64_t peak_used = 0;
  std::uint64_t bound = 0;          // the namespace's pods bound at some point
  std::uint64_t pending = 0;        // arrived, not bound at the end
  std::uint64_t pending_quota = 0;  // of those, refused last for the quota (ResourceQuotaNotFit)
  friend bool operator==(const QuotaReport&, const QuotaReport&) = default;
};

// Preemption, with pods of several priorities. "High-priority" pods are
// those of a priority above the lowest among the scenario's pods. A
// preemption is an engine nominating a pod to a node after evicting pods of
// lower priority there; its victims are the pods the Eviction API accepted.
struct PreemptionReport {
  std::uint64_t high_priority_pods = 0;  // arrived
  std::uint64_t high_priority_bound = 0;
  // Creation to bound, nearest rank; a pod still waiting at the end counts
  // with its wait so far (as Report's latencies).
  std::int64_t high_priority_p50_ms = 0;
  std::int64_t high_priority_p99_ms = 0;
  std::uint64_t preemptions = 0;
  std::uint64_t victims = 0;
  std::uint64_t evictions_refused = 0;      // 429: a budget allowed no disruption
  std::uint64_t preemptions_abandoned = 0;  // given up by the engines (Counters)
  // Per preemption, the GPU memory its victims held less the memory the
  // preemptor takes (0 when the victims held less), in MiB, summed.
  std::int64_t memory_freed_beyond_mib = 0;
  // Victims deleted whose preemptor is not bound on their node at the end
  // (bound elsewhere, given up, or still waiting).
  std::uint64_t evicted_not_helped = 0;
  std::uint64_t victims_terminating = 0;  // evicted, in their grace period at the end
  // Per victim, its GPUs (a share of one, or whole devices) times the time
  // from its binding to its deletion: the run an evicted pod loses.
  double work_lost_gpu_seconds = 0;
  friend bool operator==(const PreemptionReport&, const PreemptionReport&) = default;
};

// Devices with the same free share at the end of a run: the share in
// thousandths of a device (the tighter of free cores and free memory,
// rounded to the nearest 10; 1000: fully free) and how many.
struct FreeShareCount {
  std::int32_t free_milli = 0;
  std::uint64_t devices = 0;
  friend bool operator==(const FreeShareCount&, const FreeShareCount&) = default;
};

struct Report {
  std::uint64_t pods = 0;                                // arrived
  std::uint64_t bound = 0;                               // bound at some point
  std::uint64_t pending = 0;                             // arrived, not bound at the end
  std::map<std::string, std::uint64_t> pending_reasons;  // the last reason, by reason
  double gpu_capacity = 0;                               // devices in the cluster
  double gpu_allocated = 0;                              // GPUs held by running pods at the end
  double allocation_percent = 0;                         // gpu_allocated / gpu_capacity
  double allocation_mean_percent = 0;                    // the same, averaged over the run's time
  // Fragmentation at the end (MeasureFragmentation of the cluster as its API
  // objects say, for the scenario's own mix of GPU pods, or the engine's
  // workload when it names one): the free GPUs, the part of them those pods
  // could not use, and that part as a share of the free GPUs (the FGD
  // paper's fragmentation rate).
  double gpu_free = 0;
  double gpu_fragmented = 0;
  double fragmentation_percent = 0;
  std::vector<FragmentationSample> fragmentation_curve;  // every 10 % of demand
  // The devices not full at the end, by free share ascending (annotation
  // devices; empty in DRA mode): where the free GPUs are, e.g. the 0.19
  // that a 0.81 share leaves.
  std::vector<FreeShareCount> free_by_share;
  // Creation to bound over the arrived pods not given up; a pod still
  // waiting counts with the time it has waited by the end (so a backlog
  // shows, not hides).
  std::int64_t latency_p50_ms = 0;
  std::int64_t latency_p99_ms = 0;
  std::vector<std::int64_t> latency_percentiles;   // 0 % .. 100 %, 101 values
  std::int64_t throttled_ms = 0;                   // time the replicas' writes waited for tokens
  std::map<std::string, std::uint64_t> api_calls;  // by verb
  std::uint64_t rejected_429 = 0, conflicts_409 = 0;
  std::uint64_t filters_refused = 0, extender_timeouts = 0;
  std::uint64_t lock_contention = 0, lock_retries = 0, binds_failed = 0;
  std::uint64_t registration_writes = 0, nodes_dropped = 0;
  std::uint64_t duplicate_registration_writes = 0;  // by a replica not holding the Lease
  std::int64_t unavailable_ms = 0;                  // leader crash to the next placement
  // Drift: the faults injected (by the fault kind's scenario name), the
  // differences the engines' audits confirmed and healed (by kind,
  // engine::kDriftKindNames), and the devices on which the leading
  // engine's cache disagrees with the API objects at the end.
  std::map<std::string, std::uint64_t> drift_injected, drift_found, drift_healed;
  std::uint64_t cache_mismatched_devices = 0;
  // With quotas in the scenario: by namespace, then resource; and each
  // quota's device limit that is not a whole number (ignored), in words.
  std::vector<QuotaReport> quotas;
  std::vector<std::string> quota_warnings;
  PreemptionReport preemption;
  std::int64_t end_ms = 0;
  friend bool operator==(const Report&, const Report&) = default;
};

// Told how far a run is: pods handled (bound or given up) of all the
// scenario's pods, or, for a run with an end time, simulated seconds of the
// total. Called about every 1 % and once at the end.
using Progress = std::function<void(std::uint64_t handled, std::uint64_t total)>;

// Runs a scenario. Errors: kInvalidArgument for a scenario that cannot run
// (a pod asking more than 8 devices, a node without a name or named twice,
// a fault on an unknown node, retries without an end time, a quota without
// a namespace or name or named twice, quotas in DRA mode, a budget without
// a name, named twice, or without exactly one valid min_available or
// max_unavailable, budgets or priorities in DRA mode, a negative grace
// period); kInternal for a violated invariant, naming the time and the pod.
Result<Report> Run(const Scenario& scenario, std::uint64_t seed, const Progress& progress = {});

// The placement invariant the simulator checks after every bind: the pod
// `pod_uid` holds devices in `snapshot`, all of them on `node`, and no device
// of `node` is over its slots, memory or cores. kInternal names the first
// violation.
Status CheckPlacement(const ClusterSnapshot& snapshot, std::string_view node,
                      std::string_view pod_uid);

// The FGD paper's experiment on the openb traces: GPU pods sampled with
// replacement from `pods_csv` arrive one every `interval_ms`, with no
// departures, until their GPU requests reach `demand` (1.3) times the GPUs
// of `nodes_csv`. Rows that cannot be mapped are an error naming the line.
Result<Scenario> OpenbScenario(std::string_view nodes_csv, std::string_view pods_csv, double demand,
                               std::uint64_t seed, std::int64_t interval_ms = 1000);

// The openb traces with departures: the pods OpenbScenario draws under
// `seed` until their GPU requests reach `turnover` times the cluster's GPUs,
// arriving one a second as there, each living as long as its row did
// (deletion_time - creation_time; a row never deleted lives to the end)
// times one factor, chosen so that the pods alive ask `demand` times the
// cluster's GPUs on average over the arrivals' span (a pod that fits nowhere
// is given up, as there). Both must be positive, and the turnover enough to
// offer the demand; a row without a creation time, or deleted before it was
// created, is an error naming it.
Result<Scenario> OpenbChurn(std::string_view nodes_csv, std::string_view pods_csv, double demand,
                            double turnover, std::uint64_t seed);

// The openb traces replayed in time order: every row of `pods_csv` arrives
// at its creation_time (seconds, shifted so the first arrival is at 0) and
// is deleted at its deletion_time; CPU-only rows take CPU and memory only.
// A row without a creation time, or deleted before it was created, is an
// error naming the row.
Result<Scenario> OpenbReplay(std::string_view nodes_csv, std::string_view pods_csv);

// A self-contained scenario shaped like the openb traces: `nodes` nodes of
// 8 GPUs (T4, V100 16/32 GiB, A10) with CPU and memory, and GPU pods —
// fractions of one GPU, whole GPUs, 2/4/8-GPU jobs — arriving one a second
// until they ask `demand` times the cluster's GPUs.
Scenario SyntheticScenario(std::uint64_t seed, std::int32_t nodes = 200, double demand = 1.3);

}  // namespace devshare::sim

#endif  // DEVSHARE_SIM_SIMULATOR_HPP_
