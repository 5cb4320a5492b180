#include "sched/container_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/go_sort.hpp"
#include "base/text.hpp"
#include "sched/fragmentation.hpp"

namespace devshare::internal {

// ---------------------------------------------------------------------------
// Selectors (spec §1.2)

bool TypeAllowed(const PodPlan& plan, const Device& info) {
  const Selectors& s = plan.selectors;
  if (s.has_mode && !info.mode.empty() && s.mode.find(info.mode) == std::string::npos) return false;
  if (s.use_type.empty() && s.nouse_type.empty()) return true;
  const std::string type = UpperAscii(info.type);
  auto match = [&](const std::vector<std::string>& list) {
    return std::any_of(list.begin(), list.end(),
                       [&](const std::string& t) { return type.find(t) != std::string::npos; });
  };
  if (!s.use_type.empty() && !match(s.use_type)) return false;
  if (!s.nouse_type.empty() && match(s.nouse_type)) return false;
  return true;
}

bool UuidAllowed(const PodPlan& plan, const Device& info) {
  const Selectors& s = plan.selectors;
  const std::string& id = info.id;
  auto match = [&](const std::vector<std::string>& list) {
    return std::find(list.begin(), list.end(), id) != list.end();
  };
  if (!s.use_uuid.empty() && !match(s.use_uuid)) return false;
  if (!s.nouse_uuid.empty() && match(s.nouse_uuid)) return false;
  return true;
}

namespace {

// ---------------------------------------------------------------------------
// Device scores

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
      mem += ScoredMemory(q, info.devmem);
    }
    d.score =
        10.0f *
        (static_cast<float>(w.slot * (req + d.used)) / static_cast<float>(info.count) +
         static_cast<float>(w.core * (core + d.usedcores)) / static_cast<float>(info.devcore) +
         static_cast<float>(w.memory * (mem + d.usedmem)) / static_cast<float>(info.devmem));
  }
}

// ---------------------------------------------------------------------------
// Device order (spec §5.3): Fit visits from the end, so "last" is preferred.

// fgd's key: the smallest fragmentation increase last; then the fuller
// device; then the index.
OrderKey FgdKey(float score, const internal::HotDevice& d) {
  return {-score, static_cast<float>(d.used), -static_cast<float>(d.index), 0};
}

// The order of spec §5.3 as a key per device, compared lexicographically:
// ascending key = earlier; Fit visits from the end, so the last is preferred.
OrderKey KeyOf(const WorkDevice& d, const PodPlan& plan) {
  const GpuPolicy& p = plan.gpu;
  const auto numa = static_cast<float>(d.numa);
  const auto index = static_cast<float>(d.index);
  if (p.fgd) return FgdKey(d.score, d);
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
  if (plan.numa_bind)
    return binpack ? OrderKey{-numa, d.score, 0, 0} : OrderKey{numa, -d.score, 0, 0};
  return binpack ? OrderKey{d.score, numa, 0, 0} : OrderKey{-d.score, numa, 0, 0};
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
  profiles.reserve(info.mig_profiles.size());
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
      const bool free = std::none_of(occupied.begin(), occupied.end(),
                                     [&](const MigPlacement& o) { return Overlaps(candidate, o); });
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
  return plan.core_limit[vendor] < 0 || plan.core_used[vendor] + cores <= plan.core_limit[vendor];
}

// ---------------------------------------------------------------------------
// Topology (spec §5.6), W14 fixed: a missing pair score counts 0.

std::int64_t PairScore(const NodeState& node, const std::string& a, const std::string& b) {
  auto it =
      std::lower_bound(node.pair_scores.begin(), node.pair_scores.end(), a,
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
  for (std::size_t i = 0; i < want; ++i)
    combinations = combinations * static_cast<double>(n - i) / static_cast<double>(i + 1);
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
      for (std::size_t j = i + 1; j < want; ++j)
        total += PairScore(node, id(picked[idx[i]]), id(picked[idx[j]]));
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
  chosen.reserve(best.size());
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
  const std::vector<OrderKey>& history;    // the earlier requests' keys (see Scratch)
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
      if (const Reason r = CheckIdentity(plan, ctx.node, d, d.slot, selectors, cordons);
          r != kReasonCount) {
        ++counts[r];
        break;
      }
      if (plan.numa_bind && info.numa != prevnuma) {
        if (k.nums != origin) counts[kNumaNotFit] += static_cast<std::int32_t>(picked.size());
        k.nums = origin;
        prevnuma = info.numa;
        picked.clear();
      }
      if (const Reason r = CheckSlot(plan, d, d.slot, selectors); r != kReasonCount) {
        ++counts[r];
        break;
      }
      if (k.coresreq > 100) k.coresreq = 100;
      const std::int32_t memreq = FitMemory(k, info.devmem);
      Pick candidate{index, memreq, k.coresreq, nullptr, {}};
      if (plan.any_quota) {
        auto [mem, cores] = HypotheticalUsage(plan, ctx.placement, ctx.container, ctx.vendor_slot,
                                              picked, candidate, ctx.node);
        if (!QuotaFits(plan, vendor, mem, cores, spec.memory_factor)) {
          ++counts[kResourceQuotaNotFit];
          break;
        }
      }
      if (const Reason r = CheckRoom(d, memreq, k.coresreq); r != kReasonCount) {
        ++counts[r];
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
  if (!picked.empty())
    counts[kAllocatedCardsInsufficientRequest] = static_cast<std::int32_t>(picked.size());
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
void AddVolcanoScore(const std::vector<WorkDevice>& devices, const std::vector<Pick>& picked,
                     double& score) {
  for (const Pick& p : picked) {
    const WorkDevice& d = devices[p.device];
    if (d.devmem > 0)
      score += 100 * (static_cast<double>(d.usedmem) / static_cast<double>(d.devmem));
  }
}

// ---------------------------------------------------------------------------
// One container

bool IsMigRequest(const PodPlan& plan, const NodeState& node, std::uint32_t vendor) {
  if (vendor != plan.nvidia) return false;
  if (plan.selectors.has_mode && plan.selectors.mode.find("mig") == std::string::npos) return false;
  return std::any_of(node.devices.begin(), node.devices.end(),
                     [](const DeviceSlot& d) { return d.is_mig; });
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
        return scratch.keys[list[static_cast<std::size_t>(a)]] <
               scratch.keys[list[static_cast<std::size_t>(b)]];
      },
      [&](std::int64_t a, std::int64_t b) {
        std::swap(list[static_cast<std::size_t>(a)], list[static_cast<std::size_t>(b)]);
      });
  for (std::uint32_t p = 0; p < n; ++p) scratch.rank[list[p]] = p;
}

}  // namespace

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
    if (plan.gpu.fgd) {
      EnsureMeasured(devices, plan, scratch);
      FgdDeviceScores(std::span<const WorkDevice>(devices), request, plan, scratch);
      for (std::size_t i = 0; i < devices.size(); ++i) devices[i].score = scratch.scores[i];
    }
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
    const bool go_sort =
        plan.hami_exact.go_device_sort && devices.size() > 12 && !plan.gpu.chain && !plan.gpu.fgd;
    if (go_sort) GoSortRanks(scratch);
    FitContext ctx{plan,
                   node,
                   devices,
                   scratch.order,
                   scratch.keys,
                   scratch.history,
                   go_sort ? &scratch.rank : nullptr,
                   scratch.placement,
                   container,
                   slot};
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

}  // namespace devshare::internal
