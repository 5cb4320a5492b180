// devshare/filter.hpp — which node and which devices for a pod, and why not
// the others (spec/hami-behaviour.md §4, §5, §9; differences from HAMi in
// docs/compatibility.md).
//
// For every candidate node: init containers are fitted one at a time on the
// node as it is, app containers one after another on one working copy, every
// vendor's request through Fit (§4.4) over the devices ordered by the GPU
// policy (§5.3). Feasible nodes get the node score (§5.1, or fgd); the chosen
// node is the best score under the node policy.
//
// Tie-breaks (deterministic, unlike HAMi — W10): nodes with equal scores are
// ordered by name ascending, the first wins; devices keep registration order
// under equal keys (stable sort); vendors are tried in DeviceConfig order.
//
// Cost, for N candidates of D devices: a one-request pod is checked without
// fitting a working copy, O(N x D), and only the chosen node is fitted. The
// fgd node policy scores every feasible node by placing the pod there. With
// a snapshot that keeps each node's fragmentation measure for the call's
// workload (ClusterSnapshot::SetFragmentationWorkload, as the engine's
// does), a node's measure is loaded, not taken, and a one-device pod under
// fgd as node and GPU policy is scored without a working copy: O(D) per node
// plus O(S) (S: the workload's GPU shapes) per distinct (free share, ask)
// not already scored on a node measured alike in the same call. Without it,
// or for other pods under fgd, each node also costs O(D x S) to measure and
// a full fit.
//
// Thread-safety: Filter only reads the snapshot; several filters may run at
// once on one snapshot.
#ifndef DEVSHARE_FILTER_HPP_
#define DEVSHARE_FILTER_HPP_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devshare/device.hpp"
#include "devshare/enum_names.hpp"
#include "devshare/export.hpp"
#include "devshare/hami_exact.hpp"
#include "devshare/objects.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"
#include "devshare/workload.hpp"

namespace devshare {

// The node policies FilterOptions::node_policy names.
enum class NodePolicy { kBinpack, kSpread, kFgd, kVolcano };
inline constexpr auto kNodePolicyNames =
    MakeEnumNames<NodePolicy>({{"binpack", NodePolicy::kBinpack},
                               {"spread", NodePolicy::kSpread},
                               {"fgd", NodePolicy::kFgd},
                               {"volcano", NodePolicy::kVolcano}});

// The words of FilterOptions::gpu_policy: the first six chain, Volcano's two
// stand alone.
enum class GpuPolicyWord {
  kBinpack,
  kSpread,
  kTopologyAware,
  kMutex,
  kNuma,
  kFgd,
  kVolcanoBinpack,
  kVolcanoSpread,
};
inline constexpr auto kGpuPolicyNames =
    MakeEnumNames<GpuPolicyWord>({{"binpack", GpuPolicyWord::kBinpack},
                                  {"spread", GpuPolicyWord::kSpread},
                                  {"topology-aware", GpuPolicyWord::kTopologyAware},
                                  {"mutex", GpuPolicyWord::kMutex},
                                  {"numa", GpuPolicyWord::kNuma},
                                  {"fgd", GpuPolicyWord::kFgd},
                                  {"volcano-binpack", GpuPolicyWord::kVolcanoBinpack},
                                  {"volcano-spread", GpuPolicyWord::kVolcanoSpread}});

// Scheduler-wide options (HAMi's flags); a pod's annotations override them.
struct FilterOptions {
  // One of kNodePolicyNames. Default: binpack
  // (--node-scheduler-policy). "volcano" is Volcano's vGPU node score, the
  // highest winning: under the GPU policy binpack or volcano-binpack, the
  // sum over the devices given to the app containers of 100 × used / total
  // memory, each read right after its pick is counted; otherwise 0 (Volcano
  // reads its spread score after counting the pod, so it is always 0).
  std::string node_policy = "binpack";
  // Of kGpuPolicyNames: "binpack" | "spread" | "topology-aware" | "mutex" |
  // "numa" | "fgd", or a comma chain; or, alone, Volcano's device orders "volcano-binpack" (the
  // most memory used first) or "volcano-spread" (the fewest slots used
  // first), each then the lowest index. Default: spread
  // (--gpu-scheduler-policy).
  std::string gpu_policy = "spread";
  // The workload distribution fgd minimises fragmentation for; empty means
  // a default mix of fractional and whole-GPU requests that ask no CPU or
  // memory. Errors (kInvalidArgument): a negative weight, CPU or memory, or
  // neither gpus > 0 nor gpu_milli in 1..999.
  std::vector<WorkloadClass> workload;
  // Give every rejected node its reason. Default: true. When false (a
  // simulation that only needs the placement), FilterResult::failed lists
  // the rejected nodes with empty reasons, and rejections cost less.
  bool reasons = true;
  // HAMi's behaviour instead of devshare's on the rows set. Default: none.
  HamiExact hami_exact;
};

// A feasible node's score under the node policy. `score` is the policy's
// raw value (HAMi's formula for binpack and spread, where spread prefers the
// lower; fgd's and volcano's, higher preferred). `normalized` is the one
// contract for every policy: 0..100, higher is better, over the nodes of one
// Filter call — the most preferred 100, the least 0, linear in the raw score
// between them; 100 for all when they score the same. The chosen node has
// 100.
struct NodeScore {
  std::string node;
  double score = 0;
  double normalized = 0;
  friend bool operator==(const NodeScore&, const NodeScore&) = default;
};

struct NodeFailure {
  std::string node;
  std::string reason;  // HAMi's text, for example "1/8 CardInsufficientMemory"
  friend bool operator==(const NodeFailure&, const NodeFailure&) = default;
};

struct FilterResult {
  // The chosen node, or nullopt when no node fits or the pod asks for no
  // device (except under the fgd node policy, which places such a pod too:
  // where its CPU and memory strand the least GPU, among equal scores the
  // node with the fewest free GPUs; no annotations or devices then).
  std::optional<std::string> node;
  // The devices per vendor and container (init containers first), every
  // container present for every requested vendor (W1 fixed).
  PodDevices devices;
  // The annotation patch for the pod: hami.io/vgpu-node, hami.io/vgpu-time
  // (the config's assigned node and time keys),
  // each vendor's to-allocate and allocated keys, MIG allocations.
  StringMap annotations;
  // Every rejected candidate with its reasons, by node name.
  std::vector<NodeFailure> failed;
  // Every feasible node's score, by node name.
  std::vector<NodeScore> scores;
  // False when the pod asks for no device (every node passes; under fgd,
  // `node` and `scores` are still given).
  bool has_requests = true;
};

// Filters `pod` over `candidates` (every node of the snapshot when empty),
// at time `now` (Unix seconds, written to hami.io/vgpu-time). A reservation
// the pod already holds in the snapshot is ignored (as HAMi releases it).
// Candidates unknown to the snapshot fail with "node unregistered".
// Errors: an invalid hami.io/device-scoring-weights annotation (kMalformed),
// an unknown policy name (kInvalidArgument).
DEVSHARE_EXPORT Result<FilterResult> Filter(const ClusterSnapshot& snapshot, const Pod& pod,
                                            std::span<const std::string> candidates,
                                            std::int64_t now, const FilterOptions& options = {});

// One node's fragmentation under fgd's measure (see WorkloadClass): of its
// free GPUs (the free share of every healthy device with a free slot,
// summed), the part the workload is expected not to be able to use, as the
// weighted mean over the classes.
struct NodeFragmentation {
  std::string node;
  double free_gpus = 0;
  double fragmented_gpus = 0;
  friend bool operator==(const NodeFragmentation&, const NodeFragmentation&) = default;
};

struct ClusterFragmentation {
  double free_gpus = 0;                  // Σ over the nodes
  double fragmented_gpus = 0;            // Σ over the nodes; at most free_gpus
  std::vector<NodeFragmentation> nodes;  // every node, by name
  friend bool operator==(const ClusterFragmentation&, const ClusterFragmentation&) = default;
};

// Whether `options` name fgd as the node or GPU policy: then the snapshot
// Filter runs on is worth keeping each node's fragmentation measure for
// options.workload (ClusterSnapshot::SetFragmentationWorkload).
DEVSHARE_EXPORT bool UsesFgd(const FilterOptions& options);

// Measures the snapshot's fragmentation for `workload` (the default mix of
// FilterOptions::workload when empty), with each node's free CPU and memory
// deciding which classes it can host, as the fgd policy scores placements
// (Weng et al., ATC '23, where fragmented / free is the cluster's
// fragmentation rate). O(devices + nodes x classes).
// Errors: kInvalidArgument for a workload class FilterOptions refuses.
DEVSHARE_EXPORT Result<ClusterFragmentation> MeasureFragmentation(
    const ClusterSnapshot& snapshot, std::span<const WorkloadClass> workload = {});

}  // namespace devshare

#endif  // DEVSHARE_FILTER_HPP_
