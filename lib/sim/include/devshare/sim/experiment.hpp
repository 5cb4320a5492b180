// devshare/sim/experiment.hpp — scenario files: a cluster, a workload,
// faults and model settings in YAML, with variants to compare and seeds to
// repeat them over; and the scenarios shipped with devshare.
//
// A file (every key optional unless said; durations are "500ms", "30s",
// "10m", "1h" or milliseconds as a number):
//
//   name: handshake-storm
//   description: what it shows
//   seeds: [0, 1, 2]                # Default: [0]
//   end: 1h                         # Default: when every pod is handled
//   nodes:                          # groups of identical nodes, named <prefix><index>
//     - {count: 200, prefix: node-, gpus: 8, model: A100, gpu_memory: 40960,
//        cpu: 128000, memory: 1048576}          # cpu in millicores, memory in MiB
//   pods:                           # classes of pods arriving over time
//     - {name: infer, every: 2s, count: 1800, start: 0s, arrival: steady|poisson,
//        gpus: 1, gpu_milli: 500, gpu_spec: "A100", cpu: 4000, memory: 16384,
//        duration: 10m, namespace: sim,          # namespace: Default "sim"
//        priority_class: high, termination_grace_seconds: 30, labels: {team: a}}
//       # priority_class: one of priority_classes (else an error naming the
//       # line, as the Priority admission refuses the pod); without it the
//       # global default class's priority, else 0. Every pod is labelled
//       # sim.devshare.io/class: <name> (kPodClassLabel). Grace Default: 30
//   priority_classes:               # PriorityClasses, by name
//     high: {value: 1000, preemption_policy: Never, global_default: false}
//       # value required (at most 1000000000); preemption_policy
//       # PreemptLowerPriority (Default) or Never; one global default at most
//   budgets:                        # PodDisruptionBudgets (not in DRA mode)
//     - {namespace: sim, name: train, pod_class: train, min_available: 2}
//       # selector: {label: value} or pod_class (exactly one); min_available
//       # or max_unavailable (exactly one): a whole number or "50%";
//       # name Default budget<index>; namespace Default "sim"
//   quotas:                         # ResourceQuotas, held from time 0 (not in DRA mode)
//     - {namespace: team-a, name: gpu, hard: {limits.nvidia.com/gpumem: "65536",
//                                             limits.nvidia.com/gpucores: 400}}
//       # namespace required; name Default quota<index>; each hard value a
//       # string or a number; as HAMi, the devices' limits.<memory or core
//       # resource> keys apply (MiB, percent of a GPU), the tightest of a
//       # namespace's quotas winning; one that is not a whole number is
//       # ignored and reported (Report::quota_warnings)
//   openb:                          # or the openb traces (nodes and pods)
//     {dir: path, pods: openb_pod_list_default.csv, mode: inflate|churn|replay, demand: 1.3,
//      order: arrival|largest-first,   # largest-first: inflate's pods, most GPUs first
//      turnover: 4}                    # churn: pods until they ask 4 clusters' GPUs
//   engine: {registration: hami|volcano|change-only, policy: hami-default|binpack|spread|fgd,
//            preemption: true|false, preemption_hold: 60s, preemption_timeout: 5m,
//            retry_window: 2s,
//            bind: node-lock|lock-free, lock_retry: release|once|fixed|backoff,
//            avoid_locked_nodes: true|false, pod_writes: binding|hami,
//            hami_exact: none|all|W1,W2,W4,W10, lock_retry_timeout: 28s,
//            register_period: 15s}
//            # each but policy and the preemption keys read by
//            # engine::SetEngineOption, as the CLI and Python options are
//            # (devshare/engine/engine_options.hpp)
//   api: {qps: 5, burst: 10, latency: 20ms, jitter: 10ms, max_inflight: 400,
//         retry_after: 1s, allocate: 500ms}
//   plugins: {mode: change-only|legacy, heartbeat: 30s}
//   scheduler: {replicas: 1, retry_unschedulable: false, extender_timeout: 30s,
//               initial_backoff: 1s, max_backoff: 10s}
//   faults:
//     - {kind: plugin-hang|plugin-crash|device-unhealthy|leader-crash|missed-events|
//              pod-deleted-in-bind|node-replaced, node: node-3, at: 10m, for: 2m}
//   audit: {period: 1m, grace: 30s}  # drift audits; Default: none
//   dra: {policy: upstream|binpack|spread|fgd}   # DRA mode (Scenario::dra); Default: off
//   summary:                        # what `devshare simulate` shows (--wide: everything)
//     columns: [bound, pending, allocated, p99]   # kSummaryFigures; Default: a standard set
//     notes: {pending: "why pods are pending here"}   # said under the table when not 0
//   variants:                       # each overrides the keys it names (mappings
//     - {name: legacy, plugins: {mode: legacy}}   # merge key by key; lists replace)
//
// Every error names the line and the key: an unknown key, a value of the
// wrong type or out of range, a file that cannot be read.
//
// Thread-safety: value types and functions without shared state.
#ifndef DEVSHARE_SIM_EXPERIMENT_HPP_
#define DEVSHARE_SIM_EXPERIMENT_HPP_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/sim/simulator.hpp"
#include "devshare/status.hpp"

namespace devshare::sim {

struct NodeGroup {
  std::int32_t count = 1;
  std::string prefix = "node-";
  NodeSpec shape;  // the name is <prefix><index>
};

struct PodClass {
  enum class Arrival { kSteady, kPoisson };
  std::int32_t count = 0;        // 0: until the end
  std::int64_t every_ms = 1000;  // mean time between arrivals
  std::int64_t start_ms = 0;
  Arrival arrival = Arrival::kSteady;
  PodSpec shape;  // the name is <name>-<index>
};

struct OpenbWorkload {
  // Inflate: no departures (OpenbScenario); churn: the same pods with
  // their trace lifetimes (OpenbChurn); replay: the trace's own times.
  enum class Mode { kInflate, kChurn, kReplay };
  // The order the inflated pods arrive in: as sampled, or the same pods with
  // the most GPUs first (ties in sampled order), a clairvoyant reference
  // that knows every pod in advance. Replay keeps the trace's times.
  enum class Order { kArrival, kLargestFirst };
  std::string nodes_csv;  // the files' contents
  std::string pods_csv;
  Mode mode = Mode::kInflate;
  Order order = Order::kArrival;
  double demand = 1.3;
  double turnover = 4;  // churn: the GPUs the pods ask in all, in clusters
};

// One variant of an experiment, before the seed is known.
struct ScenarioTemplate {
  std::vector<NodeGroup> node_groups;
  std::vector<PodClass> pod_classes;
  std::optional<OpenbWorkload> openb;
  Scenario settings;  // engine, api, plugins, scheduler, faults, quotas, budgets, end_ms; no
                      // nodes or pods
};

struct Variant {
  std::string name;
  ScenarioTemplate scenario;
};

// The figures of a run a summary can show, by key: a report's fields and
// what is derived from them (fragmented_90: the fragmented GPUs when the
// pods first asked 90 % of the GPUs; writes_per_min: the scheduler's writes;
// writes_by_verb: the API writes per minute by verb, a table of its own).
inline constexpr std::string_view kSummaryFigures[] = {"pods",
                                                       "bound",
                                                       "pending",
                                                       "allocated",
                                                       "mean_allocated",
                                                       "free_gpus",
                                                       "fragmented_90",
                                                       "p50",
                                                       "p99",
                                                       "writes_per_min",
                                                       "throttled",
                                                       "rejected_429",
                                                       "conflicts_409",
                                                       "timeouts",
                                                       "refused",
                                                       "lock_collisions",
                                                       "lock_retries",
                                                       "binds_failed",
                                                       "nodes_dropped",
                                                       "duplicate_handshakes",
                                                       "unavailable",
                                                       "drift_found",
                                                       "drift_healed",
                                                       "cache_wrong",
                                                       "writes_by_verb"};

// What a summary of the experiment shows: the figures that answer its
// question, and a line on a figure that would look like a failure without
// it (both by kSummaryFigures key; empty: the summary's own choice).
struct Summary {
  std::vector<std::string> columns;
  std::map<std::string, std::string> notes;
};

struct Experiment {
  std::string name;
  std::string description;
  std::vector<std::uint64_t> seeds = {0};
  std::vector<Variant> variants;  // at least one; a file without variants has one, "default"
  Summary summary;
};

// Reads a file the experiment names (the openb traces), given its path.
using FileReader = std::function<Result<std::string>(const std::string& path)>;

struct LoadOptions {
  FileReader read;                // required when the file names openb traces
  std::string base_dir;           // relative paths in the file are resolved here
  std::string openb_dir;          // when set, replaces the file's openb.dir
  std::string openb_default_dir;  // when set, the traces' directory for a file
                                  // that names none (else base_dir)
  std::string what = "scenario";  // how errors name the file
};

// Parses an experiment. Errors: kInvalidConfig (YAML syntax, unknown key,
// wrong type, out-of-range value) naming `what`, the key and the line;
// kNotFound for a file that cannot be read.
Result<Experiment> ParseExperiment(std::string_view yaml, const LoadOptions& options);

// The scenario a variant runs with `seed`: `t`'s node groups and openb node
// list expanded, its pod classes and openb pods drawn with the seed.
Result<Scenario> Expand(const ScenarioTemplate& t, std::uint64_t seed);

// The scenarios shipped with devshare, by name: default, handshake-storm,
// lock-storm, failover, plugin-faults, drift, openb, openb-churn,
// openb-replay, openb-dra, preemption.
std::vector<std::string_view> BuiltinScenarioNames();
// The YAML text of a shipped scenario; kNotFound lists the names.
Result<std::string_view> BuiltinScenario(std::string_view name);

struct VariantResult {
  std::string name;
  std::vector<std::uint64_t> seeds;
  std::vector<Report> reports;  // one per seed
};

// Told how far an experiment is: the variant and seed running, and that
// run's progress (see Progress).
using ExperimentProgress = std::function<void(std::string_view variant, std::uint64_t seed,
                                              std::uint64_t done, std::uint64_t total)>;

// Runs every variant with every seed, in order.
Result<std::vector<VariantResult>> RunExperiment(const Experiment& experiment,
                                                 const ExperimentProgress& progress = {});

// The results as JSON: {"name", "description", "variants": [{"name",
// "runs": [{"seed", and every field of the Report in camelCase}]}]}.
std::string ResultsJson(const Experiment& experiment, const std::vector<VariantResult>& results);

// One report as ResultsJson writes it in a run, without the seed; one sample
// of its fragmentation curve; one of its quota rows ({"namespace",
// "resource", "limit", "peakUsed", "bound", "pending", "pendingQuota"});
// its preemption figures ({"highPriorityPods", "highPriorityBound",
// "highPriorityP50Ms", "highPriorityP99Ms", "preemptions", "victims",
// "evictionsRefused", "preemptionsAbandoned", "memoryFreedBeyondMib",
// "evictedNotHelped", "victimsTerminating", "workLostGpuSeconds"}).
std::string ReportJson(const Report& report);
std::string FragmentationSampleJson(const FragmentationSample& sample);
std::string QuotaReportJson(const QuotaReport& quota);
std::string PreemptionReportJson(const PreemptionReport& preemption);

}  // namespace devshare::sim

#endif  // DEVSHARE_SIM_EXPERIMENT_HPP_
