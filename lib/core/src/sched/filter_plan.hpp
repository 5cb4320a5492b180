// filter_plan.hpp — what one Filter call works with: the GPU policy, the
// per-pod plan computed once (requests, policies, selectors, quota, the fgd
// workload tables), the working copies of a node's devices and the scratch
// space reused from node to node. Private to the core.
#ifndef DEVSHARE_SRC_FILTER_PLAN_HPP_
#define DEVSHARE_SRC_FILTER_PLAN_HPP_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "devshare/annotations.hpp"
#include "devshare/filter.hpp"
#include "devshare/hami_exact.hpp"
#include "devshare/request.hpp"
#include "state/fgd_model.hpp"
#include "state/snapshot_state.hpp"

namespace devshare::internal {

// ---------------------------------------------------------------------------
// Policies

enum class SortKey { kBinpack, kSpread, kNuma };

// Single-policy orderings of spec §5.3.
enum class SingleOrder { kMutex, kBinpack, kOther };

// Volcano's vGPU device orders (its sortedDeviceIndicesByPolicy).
enum class VolcanoOrder { kNone, kBinpack, kSpread };

struct GpuPolicy {
  bool chain = false;
  std::vector<SortKey> keys;                 // chain mode
  SingleOrder single = SingleOrder::kOther;  // single mode
  bool mutex = false;
  bool topology = false;
  bool fgd = false;
  VolcanoOrder volcano = VolcanoOrder::kNone;  // single mode
};

// ---------------------------------------------------------------------------
// Per-pod plan (computed once per Filter)

struct Selectors {
  std::vector<std::string> use_uuid, nouse_uuid;
  std::vector<std::string> use_type, nouse_type;  // upper-cased
  bool has_mode = false;
  std::string mode;
};

struct PodPlan {
  const Pod* pod = nullptr;
  std::vector<ContainerRequests> requests;
  std::vector<std::vector<std::uint32_t>> request_vendor;  // vendor index per request
  std::vector<std::uint32_t> vendors;                      // requested, config order
  std::size_t init_containers = 0;
  bool init_requests = false;  // any init container asks for a device
  bool node_spread = false;
  bool node_fgd = false;
  // The volcano node policy: the score is Volcano's sum over the devices
  // given, under its binpack policy (else 0).
  bool node_volcano = false;
  bool volcano_binpack_score = false;
  GpuPolicy gpu;
  bool numa_bind = false;
  ScoringWeights weights;
  Selectors selectors;
  bool selectors_any = false;
  const DeviceConfig* config = nullptr;
  std::uint32_t nvidia = UINT32_MAX;  // index of the NVIDIA vendor, if configured
  const PodEntry* previous = nullptr;
  // A one-request pod whose feasibility SurelyFits can decide: where its
  // request is (requests[simple_container][simple_index]).
  bool simple = false;
  // Several requests are fitted one after another on a node under an order
  // whose keys can be equal (not a chain or fgd, which end on the index):
  // the order one request's sort leaves breaks the next one's ties.
  bool ties_possible = false;
  bool reasons = true;   // FilterOptions::reasons
  HamiExact hami_exact;  // FilterOptions::hami_exact
  std::size_t simple_container = 0;
  std::size_t simple_index = 0;
  // fgd: the workload as fit tables — the snapshot's when the options'
  // workload is the one it measures (own_fgd then null), else own_fgd — and
  // the CPU and memory the pod asks (released where it already holds them,
  // like `previous`).
  const FgdModel* fgd = nullptr;
  std::unique_ptr<FgdModel> own_fgd;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
  const internal::PodRequestsEntry* previous_requests = nullptr;
  // Quota: effective limits for this pod's namespace, per vendor (-1: none).
  std::vector<std::int64_t> mem_limit, core_limit, mem_used, core_used;
  bool any_quota = false;
};

// ---------------------------------------------------------------------------
// Working devices

// A device being filled during one node's evaluation: its numbers (copied
// from the snapshot's hot array), its strings (slot), its score.
struct WorkDevice : internal::HotDevice {
  const DeviceSlot* slot = nullptr;
  float score = 0;
  std::vector<MigPlacement> mig;  // occupied placements (MIG devices only)
};

struct Pick {
  std::uint32_t device = 0;  // index into the node's devices
  std::int32_t usedmem = 0;
  std::int32_t usedcores = 0;
  const MigProfile* profile = nullptr;
  MigPlacement placement;
};

// Picks per container, per requested vendor (index into plan.vendors).
using ContainerPicks = std::vector<std::vector<Pick>>;

using OrderKey = std::array<float, 4>;

struct Scratch {
  std::vector<WorkDevice> base, work;
  std::vector<std::uint32_t> order;
  std::vector<OrderKey> keys;
  // HAMi sorts one device list in place for every request of the pod's
  // containers, so equal keys keep the order the previous sorts left. With a
  // stable sort that order is the lexicographic one of the earlier requests'
  // keys, latest first, then the index: `history` holds those keys, request
  // after request (n per request, n devices), since the node's first request
  // or the init container's. With Go's unstable sort (HAMi-exact W10, above
  // 12 devices) rank[i] is device i's position in the list instead, and
  // by_rank the list.
  std::vector<OrderKey> history;
  std::vector<std::uint32_t> rank, by_rank;
  std::vector<Pick> picked;
  std::vector<ContainerPicks> placement;
  // fgd: the free share of each working device and the sums over them;
  // frag_valid when they match the working devices (kept in step with the
  // picks). While `borrowed`, they are that measure's (the snapshot's, no
  // pick since), not yet copied here. frag_now: their fragmentation with the
  // classes `after` says fit, when frag_now_valid. memo: the device scores
  // computed for the current sums, per (free, share), with the free share
  // `to` a pick would leave and the fragmentation `after` it.
  std::vector<float> frag_free;
  FragState frag;
  const NodeMeasure* borrowed = nullptr;
  bool frag_valid = false;
  double frag_now = 0;
  bool frag_now_valid = false;
  struct ScoreMemo {
    float free, share, to, score;
    double after;
  };
  std::vector<ScoreMemo> memo;
  std::span<const ScoreMemo> scored;  // the current sums' memo: `memo` or shared
  // fgd: device scores on a borrowed measure, shared by the nodes of one
  // call the snapshot measured alike. A node shares another's scores for the
  // same request and `after` cell when their signatures (NodeMeasure) are
  // equal: the scores (offset into shared_scores), the memo (a range of
  // shared_memo) and frag_now, kept in a direct-mapped table of
  // kSharedSlots (a newer key takes a taken slot).
  struct SharedKey {
    std::uint64_t fingerprint = 0;  // NodeMeasure::fingerprint
    const ContainerRequest* request = nullptr;
    std::uint32_t cell = 0;
    friend bool operator==(const SharedKey&, const SharedKey&) = default;
  };
  struct SharedScores {
    SharedKey key;
    const NodeMeasure* measure = nullptr;  // the node they were computed on; null: empty
    std::uint32_t scores = 0;
    std::uint32_t memo_begin = 0, memo_end = 0;
    double frag_now = 0;
  };
  static constexpr std::size_t kSharedSlots = 256;
  std::vector<SharedScores> shared;  // kSharedSlots once used
  std::vector<float> shared_scores;
  std::vector<ScoreMemo> shared_memo;
  std::vector<float> scores;  // FgdDeviceScores' output, per device
  // fgd: node scores by the rounded decrease, direct-mapped.
  struct NodeScoreMemo {
    bool known = false;
    double decrease = 0;
    double score = 0;
  };
  std::array<NodeScoreMemo, 64> node_scores{};
  // fgd: the classes fitting the node being evaluated, as it is (before)
  // and with the pod placed (after); the cells summed during this call.
  FitWeights before, after;
  FitMemo fits;
  // The volcano node policy: the score of the app containers' picks so far.
  double volcano_score = 0;
};

// Memory a request is counted with when devices are scored (the device score,
// spec §5.2, and fgd's share): the percentage whenever one is set, as HAMi's
// score does — unlike Fit, which takes it only when no MiB are asked.
inline std::int64_t ScoredMemory(const ContainerRequest& r, std::int32_t devmem) {
  if (r.mem_percentage != 0 && r.mem_percentage != ContainerRequest::kPercentageUnset) {
    return static_cast<std::int64_t>(devmem) * r.mem_percentage / 100;
  }
  return r.memreq;
}

// The options' policies and workload are known (kInvalidArgument naming the
// unknown one otherwise; the workload: ValidateWorkload).
Status ValidateOptions(const FilterOptions& options);
// The plan of `pod` on the snapshot `s`. Errors: an invalid
// hami.io/device-scoring-weights annotation.
Result<PodPlan> MakePlan(const SnapshotState& s, const Pod& pod, const FilterOptions& options);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_FILTER_PLAN_HPP_
