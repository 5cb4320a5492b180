#include "sched/fragmentation.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace devshare::internal {

namespace {

// The slot of `key` in Scratch::shared.
std::size_t SlotOf(const Scratch::SharedKey& key) {
  std::uint64_t h = key.fingerprint;
  h ^= reinterpret_cast<std::uintptr_t>(key.request) * 0x9E3779B97F4A7C15ULL;
  h ^= key.cell * 0xC2B2AE3D27D4EB4FULL;
  h *= 0xFF51AFD7ED558CCDULL;
  return static_cast<std::size_t>(h >> 56) % Scratch::kSharedSlots;
}

}  // namespace

const FgdModel& ModelFor(const SnapshotState& s, std::span<const WorkloadClass> workload,
                         std::unique_ptr<FgdModel>& own) {
  if (s.fragmentation && std::ranges::equal(s.fragmentation->workload, workload)) {
    return s.fragmentation->model;
  }
  own = std::make_unique<FgdModel>(MakeFgdModel(workload));
  return *own;
}

Room NodeRoom(const NodeState& node, const PodPlan& plan) {
  Room room = FreeRoom(node);
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

double FgdNodeScore(double decrease, Scratch& scratch) {
  const double rounded = std::nearbyint(decrease * 1e6) / 1e6;
  // Nodes alike score alike: the last scores by the rounded decrease.
  Scratch::NodeScoreMemo& memo =
      scratch.node_scores[std::bit_cast<std::uint64_t>(rounded) * 0x9E3779B97F4A7C15ULL >> 58];
  if (memo.known && memo.decrease == rounded) return memo.score;
  memo = {true, rounded, FgdNodeScore(rounded)};
  return memo.score;
}

namespace {

// The working free shares and sums: the snapshot's measure while borrowed.
const std::vector<float>& WorkingFree(const Scratch& scratch) {
  return scratch.borrowed != nullptr ? scratch.borrowed->free : scratch.frag_free;
}
const FragState& WorkingSums(const Scratch& scratch) {
  return scratch.borrowed != nullptr ? scratch.borrowed->sums : scratch.frag;
}

}  // namespace

void StartMeasure(const NodeMeasure* cached, Scratch& scratch) {
  scratch.memo.clear();
  scratch.scored = {};
  scratch.borrowed = cached;
  scratch.frag_valid = cached != nullptr;
  scratch.frag_now_valid = cached != nullptr && scratch.after.cell == cached->cell;
  if (scratch.frag_now_valid) scratch.frag_now = cached->fragmentation;
}

void EnsureMeasured(const std::vector<WorkDevice>& devices, const PodPlan& plan, Scratch& scratch) {
  if (scratch.frag_valid) return;
  scratch.frag_free.resize(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) scratch.frag_free[i] = FreeShare(devices[i]);
  Measure(scratch.frag_free, *plan.fgd, scratch.frag);
  scratch.frag_valid = true;
  scratch.frag_now_valid = false;
}

double CurrentFragmentation(const PodPlan& plan, Scratch& scratch) {
  if (!scratch.frag_now_valid) {
    scratch.frag_now = Fragmentation(WorkingSums(scratch), *plan.fgd, scratch.after);
    scratch.frag_now_valid = true;
  }
  return scratch.frag_now;
}

double FragmentationAfterPick(const PodPlan& plan, Scratch& scratch, std::size_t device,
                              float now) {
  const float was = WorkingFree(scratch)[device];
  if (now == was) return CurrentFragmentation(plan, scratch);
  // A device score foresaw this move when it left the same free share.
  auto foreseen = std::find_if(scratch.scored.begin(), scratch.scored.end(),
                               [&](const auto& m) { return m.free == was && m.to == now; });
  if (foreseen != scratch.scored.end()) return foreseen->after;
  return FragmentationAfterMove(WorkingSums(scratch), was, now, *plan.fgd, scratch.after);
}

// One changed device: its move's fragmentation is the new one (the same
// operations, see FragmentationAfterMove), computed before the sums move.
void TrackPicks(const std::vector<WorkDevice>& devices, const std::vector<Pick>& picked,
                const PodPlan& plan, Scratch& scratch) {
  if (!scratch.frag_valid) return;
  std::size_t changed = 0;
  std::size_t last = 0;
  for (const Pick& p : picked) {
    if (FreeShare(devices[p.device]) != WorkingFree(scratch)[p.device]) {
      ++changed;
      last = p.device;
    }
  }
  if (changed == 0) return;
  if (changed == 1) {
    scratch.frag_now = FragmentationAfterPick(plan, scratch, last, FreeShare(devices[last]));
  }
  if (scratch.borrowed != nullptr) {  // the sums change: a copy of their own
    scratch.frag_free = scratch.borrowed->free;
    scratch.frag = scratch.borrowed->sums;
    scratch.borrowed = nullptr;
  }
  for (const Pick& p : picked) {
    const float was = scratch.frag_free[p.device];
    const float now = FreeShare(devices[p.device]);
    if (now == was) continue;
    AddDevice(scratch.frag, was, *plan.fgd, -1);
    AddDevice(scratch.frag, now, *plan.fgd, +1);
    scratch.frag_free[p.device] = now;
  }
  scratch.frag_now_valid = changed == 1;
  scratch.memo.clear();  // scored against the sums before these picks
  scratch.scored = {};
}

// fgd as a GPU policy: the increase in node fragmentation if `request`'s
// share of one device were placed on each device (lower is better). On
// measured sums the scores depend only on each device's free share and
// share asked, and on the `after` cell: nodes alike share them.
template <typename Device>
void FgdDeviceScores(std::span<const Device> devices, const ContainerRequest& request,
                     const PodPlan& plan, Scratch& scratch) {
  std::vector<float>& scores = scratch.scores;
  scores.resize(devices.size());
  // Shared only on the snapshot's measure, which has a fingerprint.
  const NodeMeasure* measure = scratch.borrowed;
  const bool sharing = measure != nullptr;
  const Scratch::SharedKey key{sharing ? measure->fingerprint : 0, &request, scratch.after.cell};
  Scratch::SharedScores* slot = nullptr;
  if (sharing) {
    if (scratch.shared.empty()) scratch.shared.resize(Scratch::kSharedSlots);
    slot = &scratch.shared[SlotOf(key)];
    if (slot->measure != nullptr && slot->key == key &&
        slot->measure->signature == measure->signature) {
      std::copy_n(scratch.shared_scores.begin() + slot->scores, devices.size(), scores.begin());
      scratch.scored = std::span(scratch.shared_memo)
                           .subspan(slot->memo_begin, slot->memo_end - slot->memo_begin);
      scratch.frag_now = slot->frag_now;
      scratch.frag_now_valid = true;
      return;
    }
  }
  const double before = CurrentFragmentation(plan, scratch);
  const std::vector<float>& free = WorkingFree(scratch);
  const FragState& sums = WorkingSums(scratch);
  scratch.memo.clear();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const internal::HotDevice& info = devices[i];
    if (info.devcore <= 0 || info.devmem <= 0) {
      scores[i] = 0;
      continue;
    }
    const std::int64_t mem = ScoredMemory(request, info.devmem);
    const float share = std::max(static_cast<float>(std::min<std::int32_t>(request.coresreq, 100)) /
                                     static_cast<float>(info.devcore),
                                 static_cast<float>(mem) / static_cast<float>(info.devmem));
    const float f = free[i];
    // Devices with the same free share and ask score the same.
    auto memo = std::find_if(scratch.memo.begin(), scratch.memo.end(),
                             [&](const auto& m) { return m.free == f && m.share == share; });
    if (memo != scratch.memo.end()) {
      scores[i] = memo->score;
      continue;
    }
    const float to = std::max(0.0f, f - share);
    const double after = FragmentationAfterMove(sums, f, to, *plan.fgd, scratch.after);
    scores[i] = static_cast<float>(after - before);
    if (scratch.memo.size() < 16) scratch.memo.push_back({f, share, to, scores[i], after});
  }
  scratch.scored = scratch.memo;
  if (sharing) {
    *slot = Scratch::SharedScores{key,
                                  measure,
                                  static_cast<std::uint32_t>(scratch.shared_scores.size()),
                                  static_cast<std::uint32_t>(scratch.shared_memo.size()),
                                  0,
                                  before};
    scratch.shared_scores.insert(scratch.shared_scores.end(), scores.begin(), scores.end());
    scratch.shared_memo.insert(scratch.shared_memo.end(), scratch.memo.begin(), scratch.memo.end());
    slot->memo_end = static_cast<std::uint32_t>(scratch.shared_memo.size());
  }
}

template void FgdDeviceScores<HotDevice>(std::span<const HotDevice>, const ContainerRequest&,
                                         const PodPlan&, Scratch&);
template void FgdDeviceScores<WorkDevice>(std::span<const WorkDevice>, const ContainerRequest&,
                                          const PodPlan&, Scratch&);

}  // namespace devshare::internal
