// devshare/sim/simulator.hpp — a discrete-event cluster that drives the
// engine: the same scheduler service a deployment runs, against simulated
// API server, kube-scheduler, kubelets and device plugins.
//
// Time is virtual (milliseconds); every random choice comes from one seeded
// generator, so the same scenario and seed give the same report, bit for bit.
//
// Models (first cut):
//   API server   the engine's writes wait for a client-side token bucket
//                (client-go's QPS 5 / burst 10 by default) and then take a
//                latency with jitter; watch events reach the engine after the
//                write completes.
//   scheduler    kube-scheduler places one pod at a time in arrival order:
//                NodeResourcesFit on CPU and memory, then the engine's Filter
//                and Bind as an extender; a pod that fits nowhere is counted
//                unschedulable. A pod without devices is bound by
//                kube-scheduler itself, on the node the Filter names when it
//                names one (fgd), else on the first node that fits.
//   nodes        report their CPU and memory as allocatable cpu and memory.
//   kubelet      after the Binding, Allocate runs and the device plugin
//                reports bind-phase success and releases the node lock.
//   pods         run for their duration (forever when 0) and are deleted.
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

#include "devshare/engine/engine.hpp"
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
  std::int32_t gpus = 0;        // devices
  std::int32_t gpu_milli = 0;   // share of one device when gpus == 1 (1..1000)
  std::string gpu_spec;         // allowed models, '|'-joined; empty: any
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::int64_t arrive_ms = 0;
  std::int64_t duration_ms = 0;  // 0: runs to the end
};

struct ApiModel {
  double qps = 5;               // Default: client-go's 5
  std::int32_t burst = 10;      // Default: client-go's 10
  std::int64_t latency_ms = 20;
  std::int64_t jitter_ms = 10;
  std::int64_t allocate_ms = 500;  // Binding to the plugin's bind-phase success
};

struct Scenario {
  std::vector<NodeSpec> nodes;
  std::vector<PodSpec> pods;
  engine::EngineOptions engine;
  ApiModel api;
  std::int64_t end_ms = 0;  // 0: when the last pod has been handled
};

struct Report {
  std::uint64_t pods = 0;
  std::uint64_t bound = 0;
  std::uint64_t unschedulable = 0;
  double gpu_capacity = 0;        // devices in the cluster
  double gpu_allocated = 0;       // GPUs held by bound pods at the end
  double allocation_percent = 0;  // gpu_allocated / gpu_capacity
  std::int64_t latency_p50_ms = 0;  // arrival to bound
  std::int64_t latency_p99_ms = 0;
  std::int64_t throttled_ms = 0;    // time the engine's writes waited for tokens
  std::map<std::string, std::uint64_t> api_calls;  // by verb
  std::int64_t end_ms = 0;
  friend bool operator==(const Report&, const Report&) = default;
};

// Told how far a run is: pods handled (bound or unschedulable) of all the
// scenario's pods. Called about every 1 % and once at the end.
using Progress = std::function<void(std::uint64_t handled, std::uint64_t total)>;

// Runs a scenario. After every bind an invariant checker verifies that the
// pod is not allocated twice, that its devices are on its node and held by
// the engine, and that no device is over its slots, memory or cores.
// Errors: kInvalidArgument for a scenario that cannot run (a pod asking
// more than 8 devices, a node without a name); kInternal for a violated
// invariant, naming the time and the pod.
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
Result<Scenario> OpenbScenario(std::string_view nodes_csv, std::string_view pods_csv,
                               double demand, std::uint64_t seed, std::int64_t interval_ms = 1000);

// A self-contained scenario shaped like the openb traces: `nodes` nodes of
// 8 GPUs (T4, V100 16/32 GiB, A10) with CPU and memory, and GPU pods —
// fractions of one GPU, whole GPUs, 2/4/8-GPU jobs — arriving one a second
// until they ask `demand` times the cluster's GPUs.
Scenario SyntheticScenario(std::uint64_t seed, std::int32_t nodes = 200, double demand = 1.3);

}  // namespace devshare::sim

#endif  // DEVSHARE_SIM_SIMULATOR_HPP_
