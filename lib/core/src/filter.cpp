#include "devshare/filter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include "devshare/annotations.hpp"
#include "devshare/pod_codec.hpp"
#include "devshare/request.hpp"
#include "go_sort.hpp"
#include "snapshot_state.hpp"
#include "text.hpp"

namespace devshare {

namespace {

using internal::DeviceSlot;
using internal::NodeState;
using internal::PodEntry;
using internal::SnapshotState;

// ---------------------------------------------------------------------------
// Reasons (HAMi's constants and GenReason format)

enum Reason : std::size_t {
  kCardNotHealth,
  kCardCordoned,
  kCardTypeMismatch,
  kNumaNotFit,
  kCardUuidMismatch,
  kCardTimeSlicingExhausted,
  kExclusiveDeviceAllocateConflict,
  kResourceQuotaNotFit,
  kCardInsufficientMemory,
  kCardInsufficientCore,
  kCardComputeUnitsExhausted,
  kCardMigTopologyInfeasible,
  kAllocatedCardsInsufficientRequest,
  kReasonCount,
};

constexpr std::array<std::string_view, kReasonCount> kReasonNames = {
    "CardNotHealth",
    "CardCordoned",
    "CardTypeMismatch",
    "NumaNotFit",
    "CardUuidMismatch",
    "CardTimeSlicingExhausted",
    "ExclusiveDeviceAllocateConflict",
    "ResourceQuotaNotFit",
    "CardInsufficientMemory",
    "CardInsufficientCore",
    "CardComputeUnitsExhausted",
    "CardMigTopologyInfeasible",
    "AllocatedCardsInsufficientRequest",
};

using ReasonCounts = std::array<std::int32_t, kReasonCount>;

// "<count>/<devices> <Reason>" pieces sorted as whole strings, joined by
// ", " (HAMi's GenReason). Pieces are formatted on the stack; the result is
// the only allocation.
std::string GenReason(const ReasonCounts& counts, std::size_t devices) {
  struct Piece {
    std::array<char, 64> text;
    std::size_t size;
    std::string_view view() const { return {text.data(), size}; }
  };
  std::array<Piece, kReasonCount> pieces;
  std::size_t n = 0;
  std::size_t total = 0;
  for (std::size_t r = 0; r < kReasonCount; ++r) {
    if (counts[r] <= 0) continue;
    Piece& p = pieces[n++];
    auto end = fmt::format_to_n(p.text.data(), p.text.size(), "{}/{} {}", counts[r], devices, kReasonNames[r]);
    p.size = std::min(end.size, p.text.size());
    total += p.size + 2;
  }
  std::sort(pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(n),
            [](const Piece& a, const Piece& b) { return a.view() < b.view(); });
  std::string out;
  out.reserve(total);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    out += pieces[i].view();
  }
  return out;
}

// ---------------------------------------------------------------------------
// Policies

enum class SortKey { kBinpack, kSpread, kNuma };

// Single-policy orderings of spec §5.3.
enum class SingleOrder { kMutex, kBinpack, kOther };

// Volcano's vGPU device orders (its sortedDeviceIndicesByPolicy).
enum class VolcanoOrder { kNone, kBinpack, kSpread };

struct GpuPolicy {
  bool chain = false;
  std::vector<SortKey> keys;    // chain mode
  SingleOrder single = SingleOrder::kOther;  // single mode
  bool mutex = false;
  bool topology = false;
  bool fgd = false;
  VolcanoOrder volcano = VolcanoOrder::kNone;  // single mode
};

GpuPolicy ParseGpuPolicy(std::string_view text, bool numa_bind) {
  GpuPolicy p;
  internal::ForEachSplit(text, ',', [&](std::string_view token, std::size_t) {
    token = internal::TrimSpace(token);
    if (token == "mutex") p.mutex = true;
    if (token == "topology-aware") p.topology = true;
    if (token == "fgd") p.fgd = true;
    SortKey key;
    if (token == "binpack") {
      key = SortKey::kBinpack;
    } else if (token == "spread") {
      key = SortKey::kSpread;
    } else if (token == "numa") {
      key = SortKey::kNuma;
    } else {
      return true;
    }
    if (std::find(p.keys.begin(), p.keys.end(), key) == p.keys.end()) p.keys.push_back(key);
    return true;
  });
  p.chain = text.find(',') != std::string_view::npos || text == "numa";
  if (p.chain) {
    if (p.keys.empty()) p.keys.push_back(SortKey::kSpread);
    if (numa_bind && p.keys.front() != SortKey::kNuma) {
      p.keys.erase(std::remove(p.keys.begin(), p.keys.end(), SortKey::kNuma), p.keys.end());
      p.keys.insert(p.keys.begin(), SortKey::kNuma);
    }
  } else {
    const std::string_view word = internal::TrimSpace(text);
    p.single = word == "mutex"     ? SingleOrder::kMutex
               : word == "binpack" ? SingleOrder::kBinpack
                                   : SingleOrder::kOther;
    p.volcano = word == "volcano-binpack"  ? VolcanoOrder::kBinpack
                : word == "volcano-spread" ? VolcanoOrder::kSpread
                                           : VolcanoOrder::kNone;
  }
  return p;
}

constexpr std::int64_t kMaxClassMemoryMib = std::int64_t{1} << 40;  // bytes stay within int64

Status ValidateWorkload(std::span<const WorkloadClass> workload) {
  for (const WorkloadClass& c : workload) {
    if (!(c.weight >= 0) || c.gpus < 0 || c.gpu_milli < 0 || c.gpu_milli >= 1000 ||
        (c.gpus == 0) == (c.gpu_milli == 0)) {
      return Status::InvalidArgument(
          "workload class: want weight >= 0 and either gpus > 0 or gpu_milli in 1..999");
    }
    if (c.cpu_milli < 0 || c.memory_mib < 0 || c.memory_mib > kMaxClassMemoryMib) {
      return Status::InvalidArgument(
          "workload class: want cpu_milli >= 0 and memory_mib in 0..2^40");
    }
  }
  return Status();
}

Status ValidateOptions(const FilterOptions& options) {
  if (options.node_policy != "binpack" && options.node_policy != "spread" &&
      options.node_policy != "fgd" && options.node_policy != "volcano") {
    return Status::InvalidArgument(fmt::format("unknown node policy {} (want binpack, spread, fgd or volcano)",
                                               internal::Quote(options.node_policy)));
  }
  Status status;
  internal::ForEachSplit(options.gpu_policy, ',', [&](std::string_view token, std::size_t) {
    token = internal::TrimSpace(token);
    static constexpr std::string_view kKnown[] = {"binpack", "spread", "topology-aware", "mutex", "numa", "fgd"};
    static constexpr std::string_view kAlone[] = {"volcano-binpack", "volcano-spread"};
    const bool alone = std::find(std::begin(kAlone), std::end(kAlone), token) != std::end(kAlone);
    if (alone && internal::TrimSpace(options.gpu_policy) != token) {
      status = Status::InvalidArgument(
          fmt::format("GPU policy {} cannot be part of a chain", internal::Quote(token)));
      return false;
    }
    if (!alone && std::find(std::begin(kKnown), std::end(kKnown), token) == std::end(kKnown)) {
      status = Status::InvalidArgument(fmt::format(
          "unknown GPU policy {} (want binpack, spread, topology-aware, mutex, numa, fgd, "
          "volcano-binpack or volcano-spread, or a comma chain)",
          internal::Quote(token)));
      return false;
    }
    return true;
  });
  if (!status.ok()) return status;
  return ValidateWorkload(options.workload);
}

const std::vector<WorkloadClass>& DefaultWorkload() {
  // A mix shaped like production GPU clusters (openb): many fractional pods,
  // most of the rest one whole GPU, a tail of multi-GPU pods.
  static const std::vector<WorkloadClass> kWorkload = {
      {0.10, 0, 250}, {0.30, 0, 500}, {0.40, 1, 0}, {0.10, 2, 0}, {0.05, 4, 0}, {0.05, 8, 0},
  };
  return kWorkload;
}

// ---------------------------------------------------------------------------
// Per-pod plan (computed once per Filter)

struct Selectors {
  std::vector<std::string> use_uuid, nouse_uuid;
  std::vector<std::string> use_type, nouse_type;  // upper-cased
  bool has_mode = false;
  std::string mode;
};

// The workload of the fgd policy prepared for one Filter call. Classes are
// grouped by GPU shape (gpus, gpu_milli); what depends on a node's CPU and
// memory is only which classes fit there, so the weight of the fitting
// classes per shape is tabulated by free CPU: row r holds the classes whose
// CPU ask is at most cpu_steps[r - 1] (row 0: the classes asking no CPU).
// A row serves a node directly when its free memory covers the row's largest
// memory ask; otherwise the classes are checked one by one.
struct FgdShape {
  std::int32_t gpus = 0;
  std::int32_t gpu_milli = 0;
  float need = 0;  // gpu_milli / 1000 (fractional shapes)
};

struct FgdClass {
  std::uint32_t shape = 0;
  std::int64_t cpu_milli = 0;     // 0: any node
  std::int64_t memory_bytes = 0;  // 0: any node
  double weight = 0;
};

struct FgdModel {
  std::vector<FgdShape> shapes;
  std::vector<FgdClass> classes;
  std::vector<std::int64_t> cpu_steps;   // ascending distinct CPU asks (> 0)
  std::vector<double> rows;              // (cpu_steps + 1) rows x shapes: fitting weight
  std::vector<double> row_unfit;         // per row: weight of the classes that do not fit
  std::vector<std::int64_t> row_memory;  // per row: largest memory ask of a fitting class
  double total = 0;                      // Σ weight
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
  bool reasons = true;  // FilterOptions::reasons
  HamiExact hami_exact;  // FilterOptions::hami_exact
  std::size_t simple_container = 0;
  std::size_t simple_index = 0;
  // fgd: the workload as fit tables, and the CPU and memory the pod asks
  // (released where it already holds them, like `previous`).
  FgdModel fgd;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
  const internal::PodRequestsEntry* previous_requests = nullptr;
  // Quota: effective limits for this pod's namespace, per vendor (-1: none).
  std::vector<std::int64_t> mem_limit, core_limit, mem_used, core_used;
  bool any_quota = false;
};

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

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

// Fragmentation sums of one node (see Fragmentation below).
constexpr float kWholeDevice = 0.999f;

struct FragState {
  std::vector<double> below;  // per fractional shape: Σ free of the devices below its need
  double all = 0;             // Σ free
  double partial = 0;         // Σ free of the devices not fully free
  std::int32_t whole = 0;     // fully free devices
};

// The classes that fit one node by CPU and memory: the weight per shape
// (`fit`, one per FgdModel shape) and the weight of the others.
struct FitWeights {
  const double* fit = nullptr;
  double unfit = 0;
};

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
  // picks), and device scores already computed per (free, share).
  std::vector<float> frag_free;
  FragState frag, frag_changed;
  bool frag_valid = false;
  struct ScoreMemo {
    float free, share, score;
  };
  std::vector<ScoreMemo> memo;
  // fgd: the classes fitting the node being evaluated, as it is (before)
  // and with the pod placed (after); own storage for rows computed class
  // by class.
  FitWeights before, after;
  std::vector<double> before_fit, after_fit;
  // The volcano node policy: the score of the app containers' picks so far.
  double volcano_score = 0;
};

void CopyDevices(const std::vector<WorkDevice>& from, std::vector<WorkDevice>& to) {
  to.resize(from.size());
  for (std::size_t i = 0; i < from.size(); ++i) {
    WorkDevice& t = to[i];
    const WorkDevice& f = from[i];
    static_cast<internal::HotDevice&>(t) = f;
    t.slot = f.slot;
    t.score = f.score;
    if (f.is_mig || !t.mig.empty()) t.mig = f.mig;
  }
}

void LoadNode(const SnapshotState& s, const NodeState& node, const PodPlan& plan,
              std::vector<WorkDevice>& out) {
  out.resize(node.devices.size());
  const internal::HotDevice* hot = s.Hot(node);
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    WorkDevice& w = out[i];
    static_cast<internal::HotDevice&>(w) = hot[i];
    w.slot = &node.devices[i];
    w.score = 0;
    w.mig.clear();
    if (w.is_mig) {
      for (const internal::MigInUse& m : node.devices[i].mig_in_use) w.mig.push_back(m.placement);
    }
  }
  // The pod's own reservation is released first (spec §4.2 step 4).
  if (plan.previous != nullptr && plan.previous->node == node.name) {
    for (const internal::PodUsageItem& item : plan.previous->usage) {
      for (WorkDevice& w : out) {
        if (w.vendor == item.vendor && w.slot->info.id == item.usage.uuid) {
          w.used -= std::max(item.usage.slots, 1);
          w.usedmem -= item.usage.usedmem;
          w.usedcores -= item.usage.usedcores;
          break;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Scores

// Node score (spec §5.1), float32 as HAMi, O(1) from the node's aggregates
// (less the pod's own previous reservation, released first):
//   S = 10 * (ΣUsed/ΣCount + ΣUsedcores/ΣTotalcore + ΣUsedmem/ΣTotalmem), 0 when a total is 0.
float NodeBaseScore(const NodeState& node, const PodPlan& plan) {
  std::int64_t used = node.used_slots, cores = node.used_cores, mem = node.used_mem;
  if (plan.previous != nullptr && plan.previous->node == node.name) {
    for (const internal::PodUsageItem& item : plan.previous->usage) {
      bool on_node = false;
      for (const DeviceSlot& d : node.devices) {
        on_node = on_node || (d.vendor == item.vendor && d.info.id == item.usage.uuid);
      }
      if (!on_node) continue;
      used -= std::max(item.usage.slots, 1);
      cores -= item.usage.usedcores;
      mem -= item.usage.usedmem;
    }
  }
  if (node.total_slots == 0 || node.total_cores == 0 || node.total_mem == 0) return 0;
  return 10.0f * (static_cast<float>(used) / static_cast<float>(node.total_slots) +
                  static_cast<float>(cores) / static_cast<float>(node.total_cores) +
                  static_cast<float>(mem) / static_cast<float>(node.total_mem));
}

// Device score (spec §5.2) with W2 fixed: a request counts on the devices of
// its vendor, whatever their model name (HAMi-exact: only on devices whose
// type is the request's type word).
//   score = 10 * (Ws*(req+Used)/Count + Wc*(core+Usedcores)/Totalcore + Wm*(mem+Usedmem)/Totalmem)
void ScoreDevices(std::vector<WorkDevice>& devices, const ContainerRequests& requests,
                  const std::vector<std::uint32_t>& request_vendor, const ScoringWeights& w,
                  bool type_match) {
  for (WorkDevice& d : devices) {
    const internal::HotDevice& info = d;
    if (info.count == 0 || info.devcore == 0 || info.devmem == 0) {
      d.score = 0;
      continue;
    }
    std::int64_t req = 0, core = 0, mem = 0;
    for (std::size_t r = 0; r < requests.size(); ++r) {
      if (request_vendor[r] != d.vendor) continue;
      if (type_match && d.slot->info.type != requests[r].vendor) continue;
      const ContainerRequest& q = requests[r];
      req += 1;
      core += q.coresreq;
      if (q.mem_percentage != 0 && q.mem_percentage != ContainerRequest::kPercentageUnset) {
        mem += static_cast<std::int64_t>(info.devmem) * q.mem_percentage / 100;
      } else {
        mem += q.memreq;
      }
    }
    d.score = 10.0f * (static_cast<float>(w.slot * (req + d.used)) / static_cast<float>(info.count) +
                       static_cast<float>(w.core * (core + d.usedcores)) / static_cast<float>(info.devcore) +
                       static_cast<float>(w.memory * (mem + d.usedmem)) / static_cast<float>(info.devmem));
  }
}

// ---------------------------------------------------------------------------
// Fragmentation (the fgd policy)

// Free share of a device in [0, 1]: the tighter of free cores and free
// memory; 0 when it has no free slot or is unhealthy.
float FreeShare(const WorkDevice& d) {
  const internal::HotDevice& info = d;
  if (!d.healthy || info.count <= d.used || info.devcore <= 0 || info.devmem <= 0) return 0;
  const float cores = 1.0f - static_cast<float>(d.usedcores) / static_cast<float>(info.devcore);
  const float mem = 1.0f - static_cast<float>(d.usedmem) / static_cast<float>(info.devmem);
  return std::clamp(std::min(cores, mem), 0.0f, 1.0f);
}

// Expected fragmentation of a node (FGD, Weng et al. ATC'23): for each
// workload class, the free GPU share that class cannot use, weighted by the
// class's share. A class the node's free CPU or memory cannot host can use
// none of it. Otherwise a fractional class r cannot use a device with less
// than r free; a k-GPU class can use only fully free devices, and nothing at
// all when fewer than k are fully free.
//
// The sums behind it are kept in a FragState so that changing one device's
// free share costs O(shapes), not O(devices x classes).
void AddDevice(FragState& s, float f, const PodPlan& plan, double sign) {
  const std::vector<FgdShape>& shapes = plan.fgd.shapes;
  for (std::size_t g = 0; g < shapes.size(); ++g) {
    if (shapes[g].gpu_milli > 0 && f < shapes[g].need) s.below[g] += sign * f;
  }
  s.all += sign * f;
  if (f >= kWholeDevice) {
    s.whole += sign > 0 ? 1 : -1;
  } else {
    s.partial += sign * f;
  }
}

void Measure(const std::vector<float>& free, const PodPlan& plan, FragState& s) {
  s.below.assign(plan.fgd.shapes.size(), 0.0);
  s.all = s.partial = 0;
  s.whole = 0;
  for (float f : free) AddDevice(s, f, plan, +1);
}

double Fragmentation(const FragState& s, const PodPlan& plan, const FitWeights& w) {
  const std::vector<FgdShape>& shapes = plan.fgd.shapes;
  double total = w.unfit * s.all;
  for (std::size_t g = 0; g < shapes.size(); ++g) {
    const FgdShape& shape = shapes[g];
    const double frag = shape.gpu_milli > 0 ? s.below[g] : (s.whole >= shape.gpus ? s.partial : s.all);
    total += w.fit[g] * frag;
  }
  return plan.fgd.total > 0 ? total / plan.fgd.total : 0;
}

// Measures the working devices into scratch.frag unless it matches them.
void EnsureMeasured(const std::vector<WorkDevice>& devices, const PodPlan& plan, Scratch& scratch) {
  if (scratch.frag_valid) return;
  scratch.frag_free.resize(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) scratch.frag_free[i] = FreeShare(devices[i]);
  Measure(scratch.frag_free, plan, scratch.frag);
  scratch.frag_valid = true;
}

// Keeps scratch.frag in step with picks just applied to the devices.
void TrackPicks(const std::vector<WorkDevice>& devices, const std::vector<Pick>& picked, const PodPlan& plan,
                Scratch& scratch) {
  if (!scratch.frag_valid) return;
  for (const Pick& p : picked) {
    const float was = scratch.frag_free[p.device];
    const float now = FreeShare(devices[p.device]);
    if (now == was) continue;
    AddDevice(scratch.frag, was, plan, -1);
    AddDevice(scratch.frag, now, plan, +1);
    scratch.frag_free[p.device] = now;
  }
}

// The fgd node score from the decrease in fragmentation (GPUs) a placement
// brings, on kube-scheduler's scale as the FGD authors' scheduler plugin
// computes it: 100 * sigmoid(decrease), rounded down. Placements whose
// decreases differ by less than about 0.04 GPU (more for large changes)
// score the same, and the first name wins among them.
// The decrease is first rounded to a millionth of a GPU, so that summation
// noise in equal fragmentations cannot cross a step.
double FgdNodeScore(double decrease) {
  const double rounded = std::nearbyint(decrease * 1e6) / 1e6;
  return std::floor(100.0 / (1.0 + std::exp(-rounded)));
}

// Free CPU (millicores) and memory (bytes) of a node, the pod's own
// placement released first; unknown capacity is unlimited.
struct Room {
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
};
constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();

Room NodeRoom(const NodeState& node, const PodPlan& plan) {
  Room room{node.cpu_capacity < 0 ? kUnlimited : node.cpu_capacity - node.cpu_requested,
            node.memory_capacity < 0 ? kUnlimited : node.memory_capacity - node.memory_requested};
  const internal::PodRequestsEntry* previous = plan.previous_requests;
  if (previous != nullptr && previous->node == node.name) {
    if (room.cpu != kUnlimited) room.cpu += previous->requests.cpu_milli;
    if (room.memory != kUnlimited) room.memory += previous->requests.memory_bytes;
  }
  return room;
}

Room Less(Room room, const PodPlan& plan) {
  if (room.cpu != kUnlimited) room.cpu -= plan.cpu_milli;
  if (room.memory != kUnlimited) room.memory -= plan.memory_bytes;
  return room;
}

// The weights of the classes that fit `room`: a table row when the row's
// memory asks fit too, else summed class by class into `storage`. Both sum
// the fitting classes in ascending CPU order and the others in descending
// order, so that equal sets of classes give equal sums to the last bit (and
// no class left out gives exactly 0).
FitWeights FitFor(const FgdModel& m, Room room, std::vector<double>& storage) {
  const auto row = static_cast<std::size_t>(
      std::upper_bound(m.cpu_steps.begin(), m.cpu_steps.end(), room.cpu) - m.cpu_steps.begin());
  const std::size_t n = m.shapes.size();
  if (m.row_memory[row] <= room.memory) return FitWeights{m.rows.data() + row * n, m.row_unfit[row]};
  auto fits = [&](const FgdClass& c) {
    return (c.cpu_milli == 0 || c.cpu_milli <= room.cpu) && (c.memory_bytes == 0 || c.memory_bytes <= room.memory);
  };
  storage.assign(n, 0.0);
  for (const FgdClass& c : m.classes) {
    if (fits(c)) storage[c.shape] += c.weight;
  }
  double unfit = 0;
  for (auto c = m.classes.rbegin(); c != m.classes.rend(); ++c) {
    if (!fits(*c)) unfit += c->weight;
  }
  return FitWeights{storage.data(), unfit};
}

// Prepares the fgd tables for one Filter call: O(classes log classes +
// CPU steps x shapes).
FgdModel MakeFgdModel(std::span<const WorkloadClass> workload) {
  FgdModel m;
  for (const WorkloadClass& c : workload) {
    const std::int32_t gpus = c.gpu_milli > 0 ? 0 : c.gpus;
    auto shape = std::find_if(m.shapes.begin(), m.shapes.end(), [&](const FgdShape& s) {
      return s.gpus == gpus && s.gpu_milli == c.gpu_milli;
    });
    if (shape == m.shapes.end()) {
      shape = m.shapes.insert(m.shapes.end(), FgdShape{gpus, c.gpu_milli,
                                                        static_cast<float>(c.gpu_milli) / 1000.0f});
    }
    m.classes.push_back(FgdClass{static_cast<std::uint32_t>(shape - m.shapes.begin()), c.cpu_milli,
                                 c.memory_mib * 1024 * 1024, c.weight});
    m.total += c.weight;
    if (c.cpu_milli > 0) m.cpu_steps.push_back(c.cpu_milli);
  }
  std::stable_sort(m.classes.begin(), m.classes.end(),
                   [](const FgdClass& a, const FgdClass& b) { return a.cpu_milli < b.cpu_milli; });
  std::sort(m.cpu_steps.begin(), m.cpu_steps.end());
  m.cpu_steps.erase(std::unique(m.cpu_steps.begin(), m.cpu_steps.end()), m.cpu_steps.end());
  const std::size_t n = m.shapes.size();
  const std::size_t rows = m.cpu_steps.size() + 1;
  m.rows.assign(rows * n, 0.0);
  m.row_unfit.assign(rows, 0.0);
  m.row_memory.assign(rows, 0);
  // unfit_from[i]: the weight of classes i.. (summed from the last one).
  std::vector<double> unfit_from(m.classes.size() + 1, 0.0);
  for (std::size_t i = m.classes.size(); i > 0; --i) unfit_from[i - 1] = unfit_from[i] + m.classes[i - 1].weight;
  // Row r extends row r - 1 by the classes asking exactly cpu_steps[r - 1].
  std::size_t next = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double* row = m.rows.data() + r * n;
    if (r > 0) {
      std::copy(row - n, row, row);
      m.row_memory[r] = m.row_memory[r - 1];
    }
    const std::int64_t cpu = r == 0 ? 0 : m.cpu_steps[r - 1];
    for (; next < m.classes.size() && m.classes[next].cpu_milli <= cpu; ++next) {
      const FgdClass& c = m.classes[next];
      row[c.shape] += c.weight;
      m.row_memory[r] = std::max(m.row_memory[r], c.memory_bytes);
    }
    m.row_unfit[r] = unfit_from[next];
  }
  return m;
}

// fgd as a GPU policy: the increase in node fragmentation if `request`'s
// share of one device were placed on each device (lower is better).
void FgdDeviceScores(std::vector<WorkDevice>& devices, const ContainerRequest& request,
                     const PodPlan& plan, Scratch& scratch) {
  EnsureMeasured(devices, plan, scratch);
  const double before = Fragmentation(scratch.frag, plan, scratch.after);
  scratch.memo.clear();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const internal::HotDevice& info = devices[i];
    if (info.devcore <= 0 || info.devmem <= 0) {
      devices[i].score = 0;
      continue;
    }
    std::int64_t mem = request.memreq;
    if (request.mem_percentage != 0 && request.mem_percentage != ContainerRequest::kPercentageUnset) {
      mem = static_cast<std::int64_t>(info.devmem) * request.mem_percentage / 100;
    }
    const float share =
        std::max(static_cast<float>(std::min<std::int32_t>(request.coresreq, 100)) / static_cast<float>(info.devcore),
                 static_cast<float>(mem) / static_cast<float>(info.devmem));
    const float f = scratch.frag_free[i];
    // Devices with the same free share and ask score the same.
    auto memo = std::find_if(scratch.memo.begin(), scratch.memo.end(), [&](const Scratch::ScoreMemo& m) {
      return m.free == f && m.share == share;
    });
    if (memo != scratch.memo.end()) {
      devices[i].score = memo->score;
      continue;
    }
    FragState& changed = scratch.frag_changed;
    changed = scratch.frag;
    AddDevice(changed, f, plan, -1);
    AddDevice(changed, std::max(0.0f, f - share), plan, +1);
    devices[i].score = static_cast<float>(Fragmentation(changed, plan, scratch.after) - before);
    if (scratch.memo.size() < 16) scratch.memo.push_back({f, share, devices[i].score});
  }
}

// ---------------------------------------------------------------------------
// Device order (spec §5.3): Fit visits from the end, so "last" is preferred.

// The order of spec §5.3 as a key per device, compared lexicographically:
// ascending key = earlier; Fit visits from the end, so the last is preferred.
OrderKey KeyOf(const WorkDevice& d, const PodPlan& plan) {
  const GpuPolicy& p = plan.gpu;
  const auto numa = static_cast<float>(d.numa);
  const auto index = static_cast<float>(d.index);
  if (p.fgd) {
    // Smallest fragmentation increase last; then the fuller device; then index.
    return {-d.score, static_cast<float>(d.used), -index, 0};
  }
  // Volcano: the most memory used, or the fewest slots, then the lowest index.
  if (p.volcano == VolcanoOrder::kBinpack) return {static_cast<float>(d.usedmem), -index, 0, 0};
  if (p.volcano == VolcanoOrder::kSpread) return {-static_cast<float>(d.used), -index, 0, 0};
  if (p.chain) {
    OrderKey key{0, 0, 0, 0};
    std::size_t k = 0;
    for (SortKey s : p.keys) {
      key[k++] = s == SortKey::kBinpack ? d.score : s == SortKey::kSpread ? -d.score : numa;
    }
    key[k] = index;  // final tie-break: Index ascending
    return key;
  }
  if (p.single == SingleOrder::kMutex) return {-static_cast<float>(d.used), numa, 0, 0};
  const bool binpack = p.single == SingleOrder::kBinpack;
  if (plan.numa_bind) return binpack ? OrderKey{-numa, d.score, 0, 0} : OrderKey{numa, -d.score, 0, 0};
  return binpack ? OrderKey{d.score, numa, 0, 0} : OrderKey{-d.score, numa, 0, 0};
}


// ---------------------------------------------------------------------------
// Selectors (spec §1.2)

bool TypeAllowed(const PodPlan& plan, const WorkDevice& d) {
  const Selectors& s = plan.selectors;
  if (s.has_mode && !d.slot->info.mode.empty() && s.mode.find(d.slot->info.mode) == std::string::npos) {
    return false;
  }
  if (s.use_type.empty() && s.nouse_type.empty()) return true;
  const std::string type = Upper(d.slot->info.type);
  auto match = [&](const std::vector<std::string>& list) {
    return std::any_of(list.begin(), list.end(),
                       [&](const std::string& t) { return type.find(t) != std::string::npos; });
  };
  if (!s.use_type.empty() && !match(s.use_type)) return false;
  if (!s.nouse_type.empty() && match(s.nouse_type)) return false;
  return true;
}

bool UuidAllowed(const PodPlan& plan, const WorkDevice& d) {
  const Selectors& s = plan.selectors;
  const std::string& id = d.slot->info.id;
  auto match = [&](const std::vector<std::string>& list) {
    return std::find(list.begin(), list.end(), id) != list.end();
  };
  if (!s.use_uuid.empty() && !match(s.use_uuid)) return false;
  if (!s.nouse_uuid.empty() && match(s.nouse_uuid)) return false;
  return true;
}

// ---------------------------------------------------------------------------
// MIG (spec §4.6)

bool Overlaps(const MigPlacement& a, const MigPlacement& b) {
  return a.start < b.start + b.size && b.start < a.start + a.size;
}

struct MigChoice {
  const MigProfile* profile = nullptr;
  MigPlacement placement;
};

// The smallest profile with at least `memory` MiB that has a free placement.
MigChoice ChooseMig(const Device& info, const std::vector<MigPlacement>& occupied,
                    std::int64_t memory) {
  std::vector<const MigProfile*> profiles;
  for (const MigProfile& p : info.mig_profiles) profiles.push_back(&p);
  std::stable_sort(profiles.begin(), profiles.end(), [](const MigProfile* a, const MigProfile* b) {
    if (a->memory_mb != b->memory_mb) return a->memory_mb < b->memory_mb;
    return a->slice_count < b->slice_count;
  });
  for (const MigProfile* p : profiles) {
    if (p->memory_mb < memory) continue;
    std::vector<MigPlacement> placements = p->placements;
    const bool high_first = p->name.starts_with("1g.") || p->name.starts_with("3g.");
    std::stable_sort(placements.begin(), placements.end(),
                     [&](const MigPlacement& a, const MigPlacement& b) {
                       return high_first ? a.start > b.start : a.start < b.start;
                     });
    for (const MigPlacement& candidate : placements) {
      const bool free = std::none_of(occupied.begin(), occupied.end(), [&](const MigPlacement& o) {
        return Overlaps(candidate, o);
      });
      if (free) return MigChoice{p, candidate};
    }
  }
  return MigChoice{};
}

// CustomFilterRule: the picks already made on this device in this container
// and the new request must all find placements.
bool MigFeasible(const WorkDevice& d, const std::vector<Pick>& picked, std::uint32_t device,
                 std::int64_t memory) {
  std::vector<MigPlacement> occupied = d.mig;
  for (const Pick& p : picked) {
    if (p.device != device) continue;
    MigChoice c = ChooseMig(d.slot->info, occupied, p.usedmem);
    if (c.profile == nullptr) return false;
    occupied.push_back(c.placement);
  }
  return ChooseMig(d.slot->info, occupied, memory).profile != nullptr;
}

// ---------------------------------------------------------------------------
// Quota (spec §9.1, check 10 of Fit)

// The pod's memory and cores on `vendor` if `candidate` were added:
// containers fitted so far, this container's picks and the candidate,
// collapsed over init and app containers.
std::pair<std::int64_t, std::int64_t> HypotheticalUsage(
    const PodPlan& plan, const std::vector<ContainerPicks>& placement, std::size_t container,
    std::size_t vendor_slot, const std::vector<Pick>& picked, const Pick& candidate,
    const NodeState& node) {
  PodSingleDevice pod(container + 1);
  auto add = [&](std::size_t c, const Pick& p) {
    pod[c].push_back(ContainerDevice{node.devices[p.device].info.id, "", p.usedmem, p.usedcores});
  };
  for (std::size_t c = 0; c < container && c < placement.size(); ++c) {
    if (vendor_slot < placement[c].size()) {
      for (const Pick& p : placement[c][vendor_slot]) add(c, p);
    }
  }
  for (const Pick& p : picked) add(container, p);
  add(container, candidate);
  std::int64_t mem = 0, cores = 0;
  for (const PodUsage& u : CollapseUsage(pod, "", plan.init_containers)) {
    mem += u.usedmem;
    cores += u.usedcores;
  }
  return {mem, cores};
}

bool QuotaFits(const PodPlan& plan, std::uint32_t vendor, std::int64_t mem, std::int64_t cores,
               std::int32_t memory_factor) {
  if (plan.mem_limit[vendor] >= 0) {
    const std::int64_t limit =
        memory_factor > 1 ? plan.mem_limit[vendor] * memory_factor : plan.mem_limit[vendor];
    if (plan.mem_used[vendor] + mem > limit) return false;
  }
  if (plan.core_limit[vendor] >= 0 && plan.core_used[vendor] + cores > plan.core_limit[vendor]) {
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Topology (spec §5.6), W14 fixed: a missing pair score counts 0.

std::int64_t PairScore(const NodeState& node, const std::string& a, const std::string& b) {
  auto it = std::lower_bound(node.pair_scores.begin(), node.pair_scores.end(), a,
                             [](const DevicePairScore& s, const std::string& id) { return s.uuid < id; });
  if (it == node.pair_scores.end() || it->uuid != a) return 0;
  auto peer = std::lower_bound(it->scores.begin(), it->scores.end(), b,
                               [](const auto& s, const std::string& id) { return s.first < id; });
  if (peer == it->scores.end() || peer->first != b) return 0;
  return peer->second;
}

void ChooseTopology(const NodeState& node, std::vector<Pick>& picked, std::size_t want) {
  auto id = [&](const Pick& p) -> const std::string& { return node.devices[p.device].info.id; };
  if (want == 1) {
    std::size_t best = 0;
    std::int64_t best_total = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < picked.size(); ++i) {
      std::int64_t total = 0;
      for (std::size_t j = 0; j < picked.size(); ++j) {
        if (i != j) total += PairScore(node, id(picked[i]), id(picked[j]));
      }
      if (total < best_total) {
        best_total = total;
        best = i;
      }
    }
    picked = {picked[best]};
    return;
  }
  // All `want`-combinations in lexicographic order; the highest total wins,
  // the earliest on ties. Bounded: beyond 200000 combinations the first
  // `want` collected devices are kept.
  const std::size_t n = picked.size();
  double combinations = 1;
  for (std::size_t i = 0; i < want; ++i) combinations = combinations * static_cast<double>(n - i) / static_cast<double>(i + 1);
  if (combinations > 200000) {
    picked.resize(want);
    return;
  }
  std::vector<std::size_t> idx(want), best;
  for (std::size_t i = 0; i < want; ++i) idx[i] = i;
  std::int64_t best_total = std::numeric_limits<std::int64_t>::min();
  while (true) {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < want; ++i) {
      for (std::size_t j = i + 1; j < want; ++j) total += PairScore(node, id(picked[idx[i]]), id(picked[idx[j]]));
    }
    if (total > best_total) {
      best_total = total;
      best = idx;
    }
    std::size_t k = want;
    while (k > 0 && idx[k - 1] == n - want + k - 1) --k;
    if (k == 0) break;
    ++idx[k - 1];
    for (std::size_t j = k; j < want; ++j) idx[j] = idx[j - 1] + 1;
  }
  std::vector<Pick> chosen;
  for (std::size_t i : best) chosen.push_back(picked[i]);
  picked = std::move(chosen);
}

// ---------------------------------------------------------------------------
// Fit (spec §4.4) for one container and one vendor.

struct FitContext {
  const PodPlan& plan;
  const NodeState& node;
  std::vector<WorkDevice>& devices;
  std::vector<std::uint32_t>& order;       // the vendor's devices; consumed by Fit
  const std::vector<OrderKey>& keys;       // by device index
  const std::vector<OrderKey>& history;   // the earlier requests' keys (see Scratch)
  const std::vector<std::uint32_t>* rank;  // by device index, under Go's sort; else null
  const std::vector<ContainerPicks>& placement;
  std::size_t container;
  std::size_t vendor_slot;
};

// Whether Fit visits device `a` before device `b` when their keys are equal.
bool VisitedBeforeOnTie(const FitContext& ctx, std::uint32_t a, std::uint32_t b) {
  if (ctx.rank != nullptr) return (*ctx.rank)[a] > (*ctx.rank)[b];
  const std::size_t n = ctx.devices.size();
  for (std::size_t end = ctx.history.size(); n > 0 && end >= n; end -= n) {
    const OrderKey& ka = ctx.history[end - n + a];
    const OrderKey& kb = ctx.history[end - n + b];
    if (kb < ka) return true;
    if (ka < kb) return false;
  }
  return a > b;
}

// Whether Fit visits device `a` before device `b`.
inline bool VisitedBefore(const FitContext& ctx, std::uint32_t a, std::uint32_t b) {
  if (ctx.keys[b] < ctx.keys[a]) return true;
  if (ctx.keys[a] < ctx.keys[b]) return false;
  if (ctx.rank == nullptr && ctx.history.empty()) return a > b;  // a node's first request
  return VisitedBeforeOnTie(ctx, a, b);
}

bool Fit(const FitContext& ctx, const ContainerRequest& request, std::uint32_t vendor,
         std::vector<Pick>& picked, std::string& reason) {
  const PodPlan& plan = ctx.plan;
  const VendorSpec& spec = plan.config->vendors[vendor];
  const bool selectors = plan.selectors_any && vendor == plan.nvidia;
  const bool cordons = !ctx.node.cordoned.empty();
  ReasonCounts counts{};
  ContainerRequest k = request;
  const std::int32_t origin = request.nums;
  std::int32_t prevnuma = -1;
  picked.clear();
  // Devices are visited in the order HAMi visits its sorted list from the
  // end: descending key, equal keys in the order of the list before the sort
  // (see Scratch), by picking the next one when it is needed: a fit found
  // early costs one pass, not a sort.
  std::vector<std::uint32_t>& remaining = ctx.order;
  const std::size_t n = remaining.size();
  std::size_t next = 0;  // position in `remaining` of the device being visited
  auto select_next = [&] {
    next = 0;
    for (std::size_t j = 1; j < remaining.size(); ++j) {
      const std::uint32_t a = remaining[j], b = remaining[next];
      if (VisitedBefore(ctx, a, b)) next = j;
    }
  };
  if (!remaining.empty()) select_next();
  while (!remaining.empty()) {
    const std::uint32_t index = remaining[next];
    WorkDevice& d = ctx.devices[index];
    const internal::HotDevice& info = d;
    bool revisit = false;
    do {
      if (!d.healthy) {
        ++counts[kCardNotHealth];
        break;
      }
      if (cordons && std::binary_search(ctx.node.cordoned.begin(), ctx.node.cordoned.end(), d.slot->info.id)) {
        ++counts[kCardCordoned];
        break;
      }
      if (selectors && !TypeAllowed(plan, d)) {
        ++counts[kCardTypeMismatch];
        break;
      }
      if (plan.numa_bind && info.numa != prevnuma) {
        if (k.nums != origin) counts[kNumaNotFit] += static_cast<std::int32_t>(picked.size());
        k.nums = origin;
        prevnuma = info.numa;
        picked.clear();
      }
      if (selectors && !UuidAllowed(plan, d)) {
        ++counts[kCardUuidMismatch];
        break;
      }
      if (info.count <= d.used) {
        ++counts[kCardTimeSlicingExhausted];
        break;
      }
      if (plan.gpu.mutex && d.used > 0) {
        ++counts[kExclusiveDeviceAllocateConflict];
        break;
      }
      if (k.coresreq > 100) k.coresreq = 100;
      std::int32_t memreq = k.memreq > 0 ? k.memreq : 0;
      if (k.mem_percentage != ContainerRequest::kPercentageUnset && k.memreq == 0) {
        memreq = static_cast<std::int32_t>(static_cast<std::int64_t>(info.devmem) * k.mem_percentage / 100);
      }
      Pick candidate{index, memreq, k.coresreq, nullptr, {}};
      if (plan.any_quota) {
        auto [mem, cores] = HypotheticalUsage(plan, ctx.placement, ctx.container, ctx.vendor_slot,
                                              picked, candidate, ctx.node);
        if (!QuotaFits(plan, vendor, mem, cores, spec.memory_factor)) {
          ++counts[kResourceQuotaNotFit];
          break;
        }
      }
      if (info.devmem - d.usedmem < memreq) {
        ++counts[kCardInsufficientMemory];
        break;
      }
      if (info.devcore - d.usedcores < k.coresreq) {
        ++counts[kCardInsufficientCore];
        break;
      }
      if (info.devcore == 100 && k.coresreq == 100 && d.used > 0) {
        ++counts[kExclusiveDeviceAllocateConflict];
        break;
      }
      if (info.devcore != 0 && d.usedcores == info.devcore && k.coresreq == 0) {
        ++counts[kCardComputeUnitsExhausted];
        break;
      }
      if (d.is_mig && !MigFeasible(d, picked, index, memreq)) {
        ++counts[kCardMigTopologyInfeasible];
        break;
      }
      if (k.nums > 0) {
        picked.push_back(candidate);
        if (!plan.gpu.topology) --k.nums;
      }
      if (k.nums == 0 && !plan.gpu.topology) return true;
      // One container may take several MIG instances of one GPU.
      revisit = d.is_mig;
    } while (false);
    if (!revisit) {
      remaining[next] = remaining.back();
      remaining.pop_back();
      if (!remaining.empty()) select_next();
    }
  }
  if (plan.gpu.topology) {
    const auto want = static_cast<std::size_t>(origin);
    if (picked.size() == want) return true;
    if (picked.size() > want && want >= 1) {
      ChooseTopology(ctx.node, picked, want);
      return true;
    }
  }
  if (!picked.empty()) counts[kAllocatedCardsInsufficientRequest] = static_cast<std::int32_t>(picked.size());
  reason = GenReason(counts, n);
  return false;
}

// Applies picks to the working devices (HAMi's AddResourceUsage); MIG picks
// take a profile and placement and their usage becomes the profile's.
bool AddUsage(std::vector<WorkDevice>& devices, std::vector<Pick>& picked, std::string& reason) {
  for (Pick& p : picked) {
    WorkDevice& d = devices[p.device];
    if (d.is_mig) {
      MigChoice c = ChooseMig(d.slot->info, d.mig, p.usedmem);
      if (c.profile == nullptr) {
        reason = fmt::format("AddResourceUsage failed for device {}", d.slot->info.id);
        return false;
      }
      p.profile = c.profile;
      p.placement = c.placement;
      p.usedmem = c.profile->memory_mb;
      p.usedcores = c.profile->core;
      d.mig.push_back(c.placement);
    }
    d.used += 1;
    d.usedmem += p.usedmem;
    d.usedcores += p.usedcores;
  }
  return true;
}

// Volcano's binpack score of the devices just given (its GPUScore, read
// after the pick is counted): 100 × used / total memory each, in double as
// Volcano; a device registered without memory adds 0 (Volcano: NaN). One
// request never picks a device twice, so each device's usage is the one
// right after its own pick.
void AddVolcanoScore(const std::vector<WorkDevice>& devices, const std::vector<Pick>& picked, double& score) {
  for (const Pick& p : picked) {
    const WorkDevice& d = devices[p.device];
    if (d.devmem > 0) score += 100 * (static_cast<double>(d.usedmem) / static_cast<double>(d.devmem));
  }
}

// ---------------------------------------------------------------------------
// One node (spec §4.5)

struct NodeVerdict {
  bool fits = false;
  double score = 0;
  double free_gpus = 0;  // fgd: the node's free GPU share before the placement
  std::string reason;
};

bool IsMigRequest(const PodPlan& plan, const NodeState& node, std::uint32_t vendor) {
  if (vendor != plan.nvidia) return false;
  if (plan.selectors.has_mode && plan.selectors.mode.find("mig") == std::string::npos) return false;
  return std::any_of(node.devices.begin(), node.devices.end(),
                     [](const DeviceSlot& d) { return d.is_mig; });
}

// Forgets the earlier requests' order: registration order, as HAMi's list
// is before a node's first sort (and each init container's). The ranks are
// only kept for Go's sort (`go_sort`).
void ResetOrder(Scratch& scratch, std::size_t devices, bool go_sort) {
  scratch.history.clear();
  if (!go_sort) return;
  scratch.rank.resize(devices);
  for (std::uint32_t i = 0; i < devices; ++i) scratch.rank[i] = i;
}

// HAMi-exact W10: the list after Go's sort.Sort (not stable above 12
// elements) by the keys in scratch.keys, from the list the previous sort left.
void GoSortRanks(Scratch& scratch) {
  const std::size_t n = scratch.rank.size();
  std::vector<std::uint32_t>& list = scratch.by_rank;
  list.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) list[scratch.rank[i]] = i;
  internal::GoSort(
      static_cast<std::int64_t>(n),
      [&](std::int64_t a, std::int64_t b) {
        return scratch.keys[list[static_cast<std::size_t>(a)]] < scratch.keys[list[static_cast<std::size_t>(b)]];
      },
      [&](std::int64_t a, std::int64_t b) {
        std::swap(list[static_cast<std::size_t>(a)], list[static_cast<std::size_t>(b)]);
      });
  for (std::uint32_t p = 0; p < n; ++p) scratch.rank[list[p]] = p;
}

// Fits one container on `devices`, recording its picks in scratch.placement.
bool FitContainer(const PodPlan& plan, const NodeState& node, std::vector<WorkDevice>& devices,
                  std::size_t container, Scratch& scratch, std::string& reason) {
  const ContainerRequests& requests = plan.requests[container];
  ContainerPicks& picks = scratch.placement[container];
  for (auto& v : picks) v.clear();
  if (requests.empty()) return true;
  if (!plan.gpu.fgd) {
    ScoreDevices(devices, requests, plan.request_vendor[container], plan.weights,
                 plan.hami_exact.device_score_type_match);
  }
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const ContainerRequest& request = requests[r];
    const std::uint32_t vendor = plan.request_vendor[container][r];
    if (plan.gpu.fgd) FgdDeviceScores(devices, request, plan, scratch);
    scratch.order.clear();
    scratch.keys.resize(devices.size());
    for (std::uint32_t i = 0; i < devices.size(); ++i) {
      scratch.keys[i] = KeyOf(devices[i], plan);
      if (devices[i].vendor == vendor) scratch.order.push_back(i);
    }

    if (static_cast<std::size_t>(request.nums) > scratch.order.size() &&
        !IsMigRequest(plan, node, vendor)) {
      reason = "NodeInsufficientDevice";
      return false;
    }
    const std::size_t slot = static_cast<std::size_t>(
        std::find(plan.vendors.begin(), plan.vendors.end(), vendor) - plan.vendors.begin());
    // HAMi sorts its device list before each request; equal keys then keep
    // the order that list had (see Scratch).
    const bool go_sort = plan.hami_exact.go_device_sort && devices.size() > 12 && !plan.gpu.chain &&
                         !plan.gpu.fgd;
    if (go_sort) GoSortRanks(scratch);
    FitContext ctx{plan, node, devices, scratch.order, scratch.keys, scratch.history,
                   go_sort ? &scratch.rank : nullptr, scratch.placement, container, slot};
    if (!Fit(ctx, request, vendor, scratch.picked, reason)) return false;
    const bool more_follow = r + 1 < requests.size() || container + 1 < plan.requests.size();
    if (!go_sort && plan.ties_possible && more_follow) {
      scratch.history.insert(scratch.history.end(), scratch.keys.begin(), scratch.keys.end());
    }
    if (!AddUsage(devices, scratch.picked, reason)) return false;
    TrackPicks(devices, scratch.picked, plan, scratch);
    if (plan.volcano_binpack_score) AddVolcanoScore(devices, scratch.picked, scratch.volcano_score);
    picks[slot].insert(picks[slot].end(), scratch.picked.begin(), scratch.picked.end());
  }
  return true;
}

// Whether one request fits without choosing devices: for a single request
// whose checks do not depend on what else was picked (no NUMA binding,
// topology, quota or MIG), Fit succeeds exactly when `nums` devices pass
// every check. Used for the nodes that are not chosen, whose devices nobody
// needs; kFails is exact too but carries no reason, and kUnknown (a MIG
// device) needs the full evaluation.
enum class Feasibility { kFits, kFails, kUnknown };

Feasibility QuickFeasibility(const SnapshotState& s, const PodPlan& plan, const NodeState& node) {
  const ContainerRequest& r = plan.requests[plan.simple_container][plan.simple_index];
  const std::uint32_t vendor = plan.request_vendor[plan.simple_container][plan.simple_index];
  const bool selectors = plan.selectors_any && vendor == plan.nvidia;
  const bool cordons = !node.cordoned.empty();
  const std::int32_t cores = std::min(r.coresreq, 100);
  const internal::HotDevice* hot = s.Hot(node);
  std::int32_t passing = 0;
  for (std::size_t i = 0; i < node.devices.size(); ++i) {
    const internal::HotDevice& d = hot[i];
    if (d.is_mig) return Feasibility::kUnknown;
    if (d.vendor != vendor || !d.healthy || d.count <= d.used) continue;
    if (plan.gpu.mutex && d.used > 0) continue;
    const std::int32_t memreq =
        r.memreq > 0 || r.mem_percentage == ContainerRequest::kPercentageUnset
            ? std::max(r.memreq, 0)
            : static_cast<std::int32_t>(static_cast<std::int64_t>(d.devmem) * r.mem_percentage / 100);
    if (d.devmem - d.usedmem < memreq || d.devcore - d.usedcores < cores) continue;
    if (d.devcore == 100 && cores == 100 && d.used > 0) continue;
    if (d.devcore != 0 && d.usedcores == d.devcore && cores == 0) continue;
    if (cordons || selectors) {
      WorkDevice w;
      static_cast<internal::HotDevice&>(w) = d;
      w.slot = &node.devices[i];
      if (cordons && std::binary_search(node.cordoned.begin(), node.cordoned.end(), w.slot->info.id)) continue;
      if (selectors && (!TypeAllowed(plan, w) || !UuidAllowed(plan, w))) continue;
    }
    if (++passing == r.nums) return Feasibility::kFits;
  }
  return Feasibility::kFails;
}

NodeVerdict EvaluateNode(const SnapshotState& s, const PodPlan& plan, const NodeState& node,
                         Scratch& scratch, bool need_devices) {
  NodeVerdict verdict;
  if (!need_devices && plan.simple) {
    const Feasibility quick = QuickFeasibility(s, plan, node);
    // fgd and volcano score the placement itself.
    if (quick == Feasibility::kFits && !plan.node_fgd && !plan.node_volcano) {
      verdict.fits = true;
      verdict.score = NodeBaseScore(node, plan);
      return verdict;
    }
    if (quick == Feasibility::kFails && !plan.reasons) return verdict;
  }
  scratch.placement.resize(plan.requests.size());
  for (ContainerPicks& c : scratch.placement) c.resize(plan.vendors.size());
  if (plan.node_fgd || plan.gpu.fgd) {
    // Devices are scored with the pod's CPU and memory placed on the node.
    const Room room = NodeRoom(node, plan);
    scratch.before = FitFor(plan.fgd, room, scratch.before_fit);
    scratch.after = FitFor(plan.fgd, Less(room, plan), scratch.after_fit);
  }
  // Init containers run one at a time, each on the node as it is; the
  // unchanged node is kept in `base` only when there are any.
  if (plan.init_requests) {
    LoadNode(s, node, plan, scratch.base);
    for (std::size_t c = 0; c < plan.init_containers; ++c) {
      if (plan.requests[c].empty()) continue;
      CopyDevices(scratch.base, scratch.work);
      ResetOrder(scratch, scratch.work.size(), plan.hami_exact.go_device_sort);
      scratch.frag_valid = false;
      if (!FitContainer(plan, node, scratch.work, c, scratch, verdict.reason)) return verdict;
    }
    CopyDevices(scratch.base, scratch.work);
  } else {
    LoadNode(s, node, plan, scratch.work);
  }
  ResetOrder(scratch, scratch.work.size(), plan.hami_exact.go_device_sort);
  scratch.frag_valid = false;
  scratch.volcano_score = 0;  // app containers only: Volcano does not see init containers
  double before = 0;
  if (plan.node_fgd) {
    EnsureMeasured(scratch.work, plan, scratch);
    before = Fragmentation(scratch.frag, plan, scratch.before);
    verdict.free_gpus = scratch.frag.all;
  }
  for (std::size_t c = plan.init_containers; c < plan.requests.size(); ++c) {
    if (!FitContainer(plan, node, scratch.work, c, scratch, verdict.reason)) return verdict;
  }
  verdict.fits = true;
  if (plan.node_fgd) {
    EnsureMeasured(scratch.work, plan, scratch);
    verdict.score = FgdNodeScore(before - Fragmentation(scratch.frag, plan, scratch.after));
  } else if (plan.node_volcano) {
    verdict.score = scratch.volcano_score;
  } else {
    verdict.score = NodeBaseScore(node, plan);
  }
  return verdict;
}

// NodeScore::normalized: min-max over the feasible nodes, inverted when the
// policy prefers the lower raw score.
void NormalizeScores(std::vector<NodeScore>& scores, bool lower_is_better) {
  if (scores.empty()) return;
  auto [lo, hi] = std::minmax_element(scores.begin(), scores.end(),
                                      [](const NodeScore& a, const NodeScore& b) { return a.score < b.score; });
  const double min = lo->score, range = hi->score - lo->score;
  for (NodeScore& s : scores) {
    if (!(range > 0)) {
      s.normalized = 100;
      continue;
    }
    const double up = (s.score - min) / range;
    s.normalized = 100 * (lower_is_better ? 1 - up : up);
  }
}

// ---------------------------------------------------------------------------
// Plan

Result<PodPlan> MakePlan(const SnapshotState& s, const Pod& pod, const FilterOptions& options) {
  PodPlan plan;
  plan.pod = &pod;
  plan.config = &s.config;
  plan.requests = PodRequests(pod, s.config);
  plan.init_containers = pod.init_containers.size();
  for (std::size_t c = 0; c < plan.init_containers; ++c) {
    plan.init_requests = plan.init_requests || !plan.requests[c].empty();
  }
  for (std::uint32_t v = 0; v < s.config.vendors.size(); ++v) {
    if (s.config.vendors[v].common_word == "NVIDIA") plan.nvidia = v;
  }
  std::vector<bool> requested(s.config.vendors.size(), false);
  plan.request_vendor.resize(plan.requests.size());
  for (std::size_t c = 0; c < plan.requests.size(); ++c) {
    for (const ContainerRequest& r : plan.requests[c]) {
      std::uint32_t v = 0;
      while (s.config.vendors[v].common_word != r.vendor) ++v;
      plan.request_vendor[c].push_back(v);
      requested[v] = true;
    }
  }
  for (std::uint32_t v = 0; v < requested.size(); ++v) {
    if (requested[v]) plan.vendors.push_back(v);
  }
  const StringMap& annotations = pod.annotations;
  if (const std::string* w = annotations.Find(keys::kDeviceScoringWeights)) {
    Result<ScoringWeights> weights = DecodeScoringWeights(*w);
    if (!weights.ok()) return weights.status();
    plan.weights = *weights;
  }
  std::string node_policy = options.node_policy;
  if (const std::string* p = annotations.Find(keys::kNodeSchedulerPolicy)) node_policy = *p;
  plan.node_spread = node_policy == "spread";
  plan.node_fgd = node_policy == "fgd";
  if (const std::string* b = annotations.Find(keys::kNumaBind)) {
    plan.numa_bind = internal::ParseGoBool(*b).value_or(false);
  }
  std::string gpu_policy = options.gpu_policy;
  if (const std::string* p = annotations.Find(keys::kGpuSchedulerPolicy)) gpu_policy = *p;
  plan.gpu = ParseGpuPolicy(gpu_policy, plan.numa_bind);
  plan.node_volcano = node_policy == "volcano";
  plan.volcano_binpack_score =
      plan.node_volcano && (plan.gpu.volcano == VolcanoOrder::kBinpack ||
                            (!plan.gpu.chain && plan.gpu.single == SingleOrder::kBinpack));
  Selectors& sel = plan.selectors;
  if (const std::string* v = annotations.Find(s.config.use_uuid_annotation)) sel.use_uuid = DecodeNameList(*v);
  if (const std::string* v = annotations.Find(s.config.nouse_uuid_annotation)) sel.nouse_uuid = DecodeNameList(*v);
  if (const std::string* v = annotations.Find(keys::kUseGpuType)) {
    for (std::string& t : DecodeNameList(*v)) sel.use_type.push_back(Upper(t));
  }
  if (const std::string* v = annotations.Find(keys::kNoUseGpuType)) {
    for (std::string& t : DecodeNameList(*v)) sel.nouse_type.push_back(Upper(t));
  }
  if (const std::string* v = annotations.Find(keys::kVgpuMode)) {
    sel.has_mode = true;
    sel.mode = *v;
  }
  plan.selectors_any = !sel.use_uuid.empty() || !sel.nouse_uuid.empty() || !sel.use_type.empty() ||
                       !sel.nouse_type.empty() || sel.has_mode;
  if (auto it = s.pods.find(pod.uid); it != s.pods.end() && !pod.uid.empty()) {
    plan.previous = &it->second;
  }
  if (plan.node_fgd || plan.gpu.fgd) {
    plan.fgd = MakeFgdModel(options.workload.empty() ? DefaultWorkload() : options.workload);
    plan.cpu_milli = std::max<std::int64_t>(pod.cpu_milli, 0);
    plan.memory_bytes = std::max<std::int64_t>(pod.memory_bytes, 0);
    if (auto it = s.requests.find(pod.uid); it != s.requests.end() && !pod.uid.empty()) {
      plan.previous_requests = &it->second;
    }
  }
  plan.reasons = options.reasons;
  plan.hami_exact = options.hami_exact;
  std::size_t request_count = 0;
  for (std::size_t c = 0; c < plan.requests.size(); ++c) {
    for (std::size_t r = 0; r < plan.requests[c].size(); ++r) {
      ++request_count;
      plan.simple_container = c;
      plan.simple_index = r;
    }
  }

  const std::size_t vendors = s.config.vendors.size();
  plan.mem_limit.assign(vendors, -1);
  plan.core_limit.assign(vendors, -1);
  plan.mem_used.assign(vendors, 0);
  plan.core_used.assign(vendors, 0);
  for (std::uint32_t v = 0; v < vendors; ++v) {
    const VendorSpec& spec = s.config.vendors[v];
    auto load = [&](const std::string& resource, std::int64_t& limit, std::int64_t& used) {
      if (resource.empty()) return;
      const internal::QuotaEntry* q = s.FindQuota(pod.pod_namespace, resource);
      if (q == nullptr) return;
      limit = q->Limit();
      used = q->used;
      plan.any_quota = plan.any_quota || limit >= 0;
    };
    load(spec.memory_resource, plan.mem_limit[v], plan.mem_used[v]);
    load(spec.core_resource, plan.core_limit[v], plan.core_used[v]);
    // The pod's own reservation is released before the quota check.
    if (plan.previous != nullptr) {
      for (const internal::PodUsageItem& item : plan.previous->usage) {
        if (item.vendor != v) continue;
        plan.mem_used[v] = std::max<std::int64_t>(0, plan.mem_used[v] - item.usage.usedmem);
        plan.core_used[v] = std::max<std::int64_t>(0, plan.core_used[v] - item.usage.usedcores);
      }
    }
  }
  plan.simple = request_count == 1 && !plan.numa_bind && !plan.gpu.topology && !plan.any_quota;
  plan.ties_possible =
      request_count > 1 && !plan.gpu.chain && !plan.gpu.fgd && plan.gpu.volcano == VolcanoOrder::kNone;
  return plan;
}

}  // namespace

Result<FilterResult> Filter(const ClusterSnapshot& snapshot, const Pod& pod,
                            std::span<const std::string> candidates, std::int64_t now,
                            const FilterOptions& options) {
  Status valid = ValidateOptions(options);
  if (!valid.ok()) return valid;
  const SnapshotState& s = snapshot.state();
  Result<PodPlan> made = MakePlan(s, pod, options);
  if (!made.ok()) return made.status();
  const PodPlan& plan = *made;

  FilterResult result;
  if (!HasRequests(plan.requests)) {
    result.has_requests = false;
    // fgd places a pod without devices too: its CPU and memory can leave a
    // node's GPUs unusable.
    if (!plan.node_fgd) return result;
  }

  // Candidates: the given names (deduplicated), or every node; by name.
  std::vector<const NodeState*> nodes;
  if (candidates.empty()) {
    nodes.reserve(s.by_name.size());
    for (std::uint32_t i : s.by_name) {
      if (s.nodes[i].present) nodes.push_back(&s.nodes[i]);
    }
  } else {
    std::vector<std::string_view> names(candidates.begin(), candidates.end());
    // Sorted and deduplicated, unless they already ascend strictly.
    if (std::adjacent_find(names.begin(), names.end(), std::greater_equal<>()) != names.end()) {
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
    }
    // Both ascend: one merge walk with the snapshot's nodes by name.
    nodes.reserve(names.size());
    auto known = s.by_name.begin();
    for (std::string_view name : names) {
      while (known != s.by_name.end() && s.nodes[*known].name < name) ++known;
      const bool found = known != s.by_name.end() && s.nodes[*known].name == name && s.nodes[*known].present;
      if (found) {
        nodes.push_back(&s.nodes[*known]);
      } else {
        result.failed.push_back(NodeFailure{std::string(name), "node unregistered"});
      }
    }
  }

  Scratch scratch;
  const NodeState* best = nullptr;
  double best_score = 0;
  double best_free_gpus = 0;
  result.scores.reserve(nodes.size());
  for (const NodeState* node : nodes) {
    NodeVerdict v = EvaluateNode(s, plan, *node, scratch, /*need_devices=*/false);
    if (!v.fits) {
      if (!plan.reasons) v.reason.clear();
      result.failed.push_back(NodeFailure{node->name, std::move(v.reason)});
      continue;
    }
    result.scores.push_back(NodeScore{node->name, v.score});
    // Names ascend, so a strictly better score is needed to replace: ties go
    // to the first name.
    bool better = best == nullptr || (plan.node_spread ? v.score < best_score : v.score > best_score);
    // A pod without devices: among equal scores, the node with the fewest
    // free GPUs, which its CPU and memory can strand the least later.
    if (!result.has_requests && !better && v.score == best_score && v.free_gpus < best_free_gpus) {
      better = true;
    }
    if (better) {
      best = node;
      best_score = v.score;
      best_free_gpus = v.free_gpus;
    }
  }
  NormalizeScores(result.scores, plan.node_spread);
  // Unregistered candidates were listed first; merge them into name order.
  auto by_name = [](const NodeFailure& a, const NodeFailure& b) { return a.node < b.node; };
  if (!std::is_sorted(result.failed.begin(), result.failed.end(), by_name)) {
    std::stable_sort(result.failed.begin(), result.failed.end(), by_name);
  }
  if (best == nullptr) return result;
  if (!result.has_requests) {
    result.node = best->name;
    return result;
  }

  // Materialise the winner's placement.
  EvaluateNode(s, plan, *best, scratch, /*need_devices=*/true);  // fills scratch.placement
  result.node = best->name;
  const std::size_t containers = plan.requests.size();
  for (std::size_t slot = 0; slot < plan.vendors.size(); ++slot) {
    const VendorSpec& vendor = s.config.vendors[plan.vendors[slot]];
    // Which containers have an entry: all (W1 fixed), or, HAMi-exact, on a
    // node without a device typed as the vendor's word, those that ask.
    const bool every_container =
        !plan.hami_exact.container_padding_by_type ||
        std::any_of(best->devices.begin(), best->devices.end(),
                    [&](const DeviceSlot& d) { return d.info.type == vendor.common_word; });
    auto has_entry = [&](std::size_t c) {
      const auto& asks = plan.request_vendor[c];
      return every_container || std::find(asks.begin(), asks.end(), plan.vendors[slot]) != asks.end();
    };
    std::size_t entries = 0;
    for (std::size_t c = 0; c < containers; ++c) entries += has_entry(c) ? 1 : 0;
    PodSingleDevice devices(entries);
    std::vector<MigAllocation> mig;
    for (std::size_t c = 0, position = 0; c < containers; position += has_entry(c) ? 1 : 0, ++c) {
      for (const Pick& p : scratch.placement[c][slot]) {
        const Device& info = best->devices[p.device].info;
        if (p.profile != nullptr) {
          mig.push_back(MigAllocation{static_cast<std::int64_t>(position),
                                      static_cast<std::int64_t>(devices[position].size()), info.id,
                                      p.profile->name, p.placement, "", std::nullopt, std::nullopt});
        }
        devices[position].push_back(ContainerDevice{info.id, vendor.common_word, p.usedmem, p.usedcores});
      }
    }
    const std::string encoded = EncodePodDevices(devices, vendor.pod_devices_format);
    result.annotations.Set(vendor.to_allocate_annotation, encoded);
    result.annotations.Set(vendor.allocated_annotation, encoded);
    if (!mig.empty()) result.annotations.Set(keys::kMigAllocations, EncodeMigAllocations(mig));
    result.devices.emplace_back(vendor.common_word, std::move(devices));
  }
  result.annotations.Set(s.config.assigned_node_annotation, best->name);
  result.annotations.Set(s.config.assigned_time_annotation, std::to_string(now));
  return result;
}

Result<ClusterFragmentation> MeasureFragmentation(const ClusterSnapshot& snapshot,
                                                  std::span<const WorkloadClass> workload) {
  Status valid = ValidateWorkload(workload);
  if (!valid.ok()) return valid;
  const SnapshotState& s = snapshot.state();
  PodPlan plan;  // no pod: nothing released, no CPU or memory placed
  plan.fgd = MakeFgdModel(workload.empty() ? std::span<const WorkloadClass>(DefaultWorkload()) : workload);
  Scratch scratch;
  ClusterFragmentation result;
  result.nodes.reserve(s.by_name.size());
  for (std::uint32_t i : s.by_name) {
    const NodeState& node = s.nodes[i];
    if (!node.present) continue;
    LoadNode(s, node, plan, scratch.work);
    scratch.frag_valid = false;
    EnsureMeasured(scratch.work, plan, scratch);
    const FitWeights fit = FitFor(plan.fgd, NodeRoom(node, plan), scratch.before_fit);
    NodeFragmentation n{node.name, scratch.frag.all, Fragmentation(scratch.frag, plan, fit)};
    result.free_gpus += n.free_gpus;
    result.fragmented_gpus += n.fragmented_gpus;
    result.nodes.push_back(std::move(n));
  }
  return result;
}

}  // namespace devshare
