// The engine's DRA flow: gated pods judged in arrival order, their claims
// allocated by the DRA policy and written, their gate removed
// (engine.hpp, "DRA").
#include <fmt/format.h>

#include "devshare/dra_extended.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

namespace {

// A failed write is tried again from what the watch brings, after this.
constexpr std::int64_t kDraRetryMs = 1000;
// Every held pod is judged again on every node this often, for what no
// event says (a pod of lower priority to preempt, a change the watch
// missed): kube-scheduler's own flush of its unschedulable pods.
constexpr std::int64_t kDraSweepMs = 5 * 60 * 1000;
// A gated pod gets another Event for a new reason of the same kind no
// sooner than this.
constexpr std::int64_t kDraEventPeriodMs = 60000;
// A pod waiting for its claims gets an Event once it has waited this long.
constexpr std::int64_t kDraWaitingEventMs = 10000;
// A pod's gate is removed this long after its claims were written even if
// the watch has not shown them allocated (a watch cut, say).
constexpr std::int64_t kDraSeenMs = 10000;

std::string_view HoldEventReason(DraHoldKind kind) {
  switch (kind) {
    case DraHoldKind::kWaiting:
      return "DevshareWaitingForClaims";
    case DraHoldKind::kNoFit:
      return "DevshareNoFit";
    case DraHoldKind::kRefused:
      return "DevshareCannotAllocate";
    case DraHoldKind::kPreempting:
      return "DevsharePreempting";
  }
  return "";
}

bool ReservedOnlyFor(const dra::ResourceClaim& claim, const std::string& uid) {
  return claim.reserved_for.size() == 1 && claim.reserved_for[0].uid == uid;
}

}  // namespace

void Engine::MakeDraPlacer() {
  Impl::Dra& d = impl_->dra;
  if (options_.dra_device_classes.empty()) return;
  Result<dra::Placer> placer =
      options_.dra_policy == dra::Policy::kUpstream
          ? Result<dra::Placer>(Status::InvalidArgument(
                "the DRA policy upstream is kube-scheduler's own; devshare places by binpack, "
                "spread or fgd"))
          : dra::Placer::Make(
                dra::PlacerOptions{options_.dra_policy, options_.filter.workload, false});
  if (placer.ok()) {
    d.placer = std::move(*placer);
  } else {
    d.placer_error = std::string(placer.status().message());
  }
}

const std::map<std::string, DraHold>& Engine::dra_held() const { return impl_->dra.held; }

std::size_t Engine::dra_gated() const { return impl_->dra.queue.size(); }

// ---------------------------------------------------------------------------
// The pass

std::optional<std::int64_t> Engine::DraNextPassMs() const {
  const Impl::Dra& d = impl_->dra;
  if (options_.dra_device_classes.empty() || !d.synced || d.queue.empty() || !Leading())
    return std::nullopt;
  if (d.retry_at_ms) return d.retry_at_ms;
  if (d.all_due || !d.due.empty()) return 0;
  std::optional<std::int64_t> at;
  if (!d.timers.empty()) at = d.timers.begin()->first;
  if (!d.held.empty()) at = at ? std::min(*at, d.sweep_at_ms) : d.sweep_at_ms;
  return at;
}

bool Engine::DraPassDue(std::int64_t now_ms) const {
  const std::optional<std::int64_t> at = DraNextPassMs();
  return at && *at <= now_ms;
}

void Engine::DraPass(std::int64_t now_ms, std::vector<Command>& out) {
  if (!DraPassDue(now_ms)) return;
  Impl::Dra& d = impl_->dra;
  if (!Ready(now_ms)) {  // not registered yet, or leadership too fresh
    d.retry_at_ms = now_ms + kDraRetryMs;
    return;
  }
  d.retry_at_ms.reset();
  while (!d.timers.empty() && d.timers.begin()->first <= now_ms) {
    const std::uint64_t seq = d.timers.begin()->second;
    d.timers.erase(d.timers.begin());
    if (auto uid = d.queue.find(seq); uid != d.queue.end()) DraDue(uid->second);
  }
  if (!d.held.empty() && d.sweep_at_ms <= now_ms) d.all_due = true;
  if (d.all_due) {
    d.all_due = false;
    d.sweep_at_ms = now_ms + kDraSweepMs;
    for (const auto& [seq, uid] : d.queue) d.due[seq] = Impl::Dra::Due{true, {}};
  }
  std::map<std::uint64_t, Impl::Dra::Due> due;
  std::swap(due, d.due);
  for (auto& [seq, why] : due) {
    auto queued = d.queue.find(seq);
    if (queued == d.queue.end()) continue;
    const std::string& uid = queued->second;
    if (auto w = d.writing.find(uid); w != d.writing.end()) {
      const DraWrite& written = w->second;
      if (written.written_at_ms &&
          (written.unseen.empty() || now_ms >= *written.written_at_ms + kDraSeenMs))
        DraRemoveGate(w->second, out);
      continue;
    }
    if (d.released.contains(uid)) continue;
    if (auto backoff = d.backoff_until.find(uid); backoff != d.backoff_until.end()) {
      if (backoff->second > now_ms) continue;  // judged when it ends (DraDueAt)
      d.backoff_until.erase(backoff);
    }
    auto pod = impl_->pods.find(uid);
    if (pod == impl_->pods.end()) continue;
    // A pod preempting is placed once its victims and their claims are gone.
    if (impl_->preemptions.contains(uid) && !DraVictimsGone(pod->second, now_ms, out)) continue;
    DraPlacePod(pod->second, why.anywhere ? nullptr : &why.gained, now_ms, out);
  }
}

void Engine::DraHoldPod(const Pod& pod, DraHoldKind kind, std::string reason, std::int64_t now_ms,
                        std::vector<Command>& out) {
  Impl::Dra& d = impl_->dra;
  d.held[pod.uid] = DraHold{kind, reason};
  if (auto seq = d.seq_of.find(pod.uid); seq != d.seq_of.end()) {
    if (kind == DraHoldKind::kNoFit) {
      d.no_fit.insert(seq->second);
    } else {
      d.no_fit.erase(seq->second);
    }
  }
  // A claim still to be made is the usual first moment of a pod from a
  // template: said only when it lasts.
  if (kind == DraHoldKind::kWaiting) {
    const std::int64_t since = d.waiting_since.try_emplace(pod.uid, now_ms).first->second;
    if (now_ms - since < kDraWaitingEventMs) {
      DraDueAt(pod.uid, since + kDraWaitingEventMs);
      return;
    }
  } else {
    d.waiting_since.erase(pod.uid);
  }
  // Events say a new kind at once, a new reason of the same kind at most
  // once a period (a cluster in motion changes a no-fit's counts often).
  auto [last, first] = d.evented.try_emplace(pod.uid, Impl::Dra::Evented{kind, reason, now_ms});
  if (!first) {
    if (last->second.kind == kind &&
        (last->second.reason == reason || now_ms - last->second.at_ms < kDraEventPeriodMs))
      return;
    last->second = Impl::Dra::Evented{kind, reason, now_ms};
  }
  out.push_back(PodEvent{pod.pod_namespace, pod.name, pod.uid, std::string(HoldEventReason(kind)),
                         std::move(reason)});
}

void Engine::DraPlacePod(const Pod& pod, const std::vector<std::string>* gained,
                         std::int64_t now_ms, std::vector<Command>& out) {
  Impl::Dra& d = impl_->dra;
  ++counters_.dra_pods_judged;
  dra::ClaimsVerdict verdict =
      dra::JudgePodClaims(pod, snapshot_, options_.dra_device_classes, /*at_admission=*/false);
  switch (verdict.kind) {
    case dra::ClaimsVerdictKind::kWaiting: {
      std::string why;
      if (!DraCreateExtendedClaims(pod, why, out))
        return DraHoldPod(pod, DraHoldKind::kRefused, std::move(why), now_ms, out);
      return DraHoldPod(pod, DraHoldKind::kWaiting, std::move(verdict.reason), now_ms, out);
    }
    case dra::ClaimsVerdictKind::kRefused:
      return DraHoldPod(pod, DraHoldKind::kRefused, std::move(verdict.reason), now_ms, out);
    case dra::ClaimsVerdictKind::kNotServed: {
      // Nothing (left) to allocate: released as it is.
      DraWrite& w = d.writing[pod.uid];
      w = DraWrite(pod, /*releasing_claims=*/false);
      return DraRemoveGate(w, out);
    }
    case dra::ClaimsVerdictKind::kServed:
      break;
  }
  if (!d.placer) return DraHoldPod(pod, DraHoldKind::kRefused, d.placer_error, now_ms, out);

  std::vector<dra::ResourceClaim> to_allocate;
  std::vector<const dra::ResourceClaim*> allocated;
  for (const dra::ResolvedClaim& r : verdict.claims) {
    if (r.claim->allocation) {
      allocated.push_back(r.claim);
    } else {
      to_allocate.push_back(*r.claim);
    }
  }
  const dra::PodResources resources{pod.cpu_milli, pod.memory_bytes};
  std::optional<dra::NodeFit> fit;
  auto preemption = impl_->preemptions.find(pod.uid);
  if (allocated.empty() && preemption != impl_->preemptions.end()) {
    // Its victims are gone: on what they freed, else anywhere.
    Result<std::optional<dra::NodeFit>> freed =
        d.placer->Fit(snapshot_, to_allocate, resources, preemption->second.node);
    if (freed.ok() && *freed) fit = std::move(**freed);
  }
  if (allocated.empty() && !fit) {
    // Held for want of room and judged for room given since: looked for on
    // those nodes alone (it fits nowhere else), kept as it was otherwise.
    auto held = d.held.find(pod.uid);
    const bool only_gained = gained != nullptr && preemption == impl_->preemptions.end() &&
                             held != d.held.end() && held->second.kind == DraHoldKind::kNoFit;
    Result<dra::Placement> placement =
        d.placer->Place(snapshot_, to_allocate, resources, &pod, only_gained ? gained : nullptr);
    if (!placement.ok()) {
      return DraHoldPod(pod, DraHoldKind::kRefused, std::string(placement.status().message()),
                        now_ms, out);
    }
    if (!placement->chosen && only_gained) return;
    if (!placement->chosen) {
      if (preemption != impl_->preemptions.end()) {
        return DraHoldPod(pod, DraHoldKind::kPreempting,
                          fmt::format("preempting on {}: its victims are gone; its claims do not "
                                      "fit yet",
                                      preemption->second.node),
                          now_ms, out);
      }
      std::string no_fit = fmt::format(
          "no node fits its claims: {} of {} nodes short of devices, {} short of CPU "
          "or memory, {} excluded by its node selector, affinity or tolerations",
          placement->short_of_devices, snapshot_.node_count(), placement->short_of_cpu_or_memory,
          placement->excluded);
      if (options_.preemption)
        return DraPreempt(pod, to_allocate, resources, std::move(no_fit), now_ms, out);
      return DraHoldPod(pod, DraHoldKind::kNoFit, std::move(no_fit), now_ms, out);
    }
    fit = std::move(placement->chosen);
  } else if (!allocated.empty()) {
    // Some claims are allocated already (a restart between writes, or a
    // claim shared with another pod): the rest must go to their node.
    for (const auto& [name, memory] : impl_->nodes) {
      const Node& node = memory.object;
      const bool theirs = std::all_of(allocated.begin(), allocated.end(), [&](const auto* c) {
        return !c->allocation->node_selector ||
               dra::NodeSelectorMatches(*c->allocation->node_selector, node);
      });
      if (!theirs || NodeExcludes(pod, node)) continue;
      Result<std::optional<dra::NodeFit>> here =
          d.placer->Fit(snapshot_, to_allocate, resources, name);
      if (here.ok() && *here) {
        fit = std::move(**here);
        break;
      }
    }
    if (!fit) {
      const bool ours = std::all_of(allocated.begin(), allocated.end(),
                                    [&](const auto* c) { return ReservedOnlyFor(*c, pod.uid); });
      if (!ours) {
        return DraHoldPod(pod, DraHoldKind::kNoFit,
                          "the node its allocated claims are on has no room for the others", now_ms,
                          out);
      }
      // Claims written for this pod before a restart, on a node the rest
      // no longer fits: released, so the pod is placed anew.
      DraWrite& w = d.writing[pod.uid];
      w = DraWrite(pod, /*releasing_claims=*/true);
      for (const dra::ResourceClaim* c : allocated) {
        dra::ResourceClaim released = *c;
        released.allocation.reset();
        released.reserved_for.clear();
        DraWriteClaim(w, *c, std::move(released), out);
      }
      return;
    }
  }

  if (preemption != impl_->preemptions.end()) {
    ++counters_.preemptions_placed;
    EndPreemption(pod.uid, true);
  }
  DraUnhold(pod.uid);
  d.waiting_since.erase(pod.uid);
  DraAssume(pod.uid, fit->node);
  DraWrite& w = d.writing[pod.uid];
  w = DraWrite(pod, /*releasing_claims=*/false);
  for (std::size_t i = 0; i < to_allocate.size(); ++i) {
    dra::ResourceClaim assumed = to_allocate[i];
    assumed.allocation = std::move(fit->allocations[i]);
    assumed.allocation->allocated_unix_seconds = now_ms / 1000;  // as kube-scheduler writes it
    assumed.reserved_for.push_back(dra::ClaimConsumer{"", "pods", pod.name, pod.uid});
    DraWriteClaim(w, to_allocate[i], std::move(assumed), out);
  }
}

void Engine::DraAssume(const std::string& uid, const std::optional<std::string>& node) {
  Impl::Dra& d = impl_->dra;
  auto pod = impl_->pods.find(uid);
  if (pod == impl_->pods.end()) return;
  std::optional<std::string> was;
  if (auto a = d.assumed_on.find(uid); a != d.assumed_on.end()) was = std::move(a->second);
  if (node) {
    d.assumed_on[uid] = *node;
    Pod counted = pod->second;
    counted.node_name = *node;
    static_cast<void>(snapshot_.AddPod(counted));
  } else if (was) {
    d.assumed_on.erase(uid);
    static_cast<void>(snapshot_.AddPod(pod->second));
  }
  if (was && was != node) DraRoomOn(*was);
}

bool Engine::DraCreateExtendedClaims(const Pod& pod, std::string& why, std::vector<Command>& out) {
  const std::string* listed = pod.annotations.Find(dra::kExtendedClaimsAnnotation);
  if (listed == nullptr) return true;
  Result<std::vector<dra::ExtendedClaim>> claims = dra::DecodeExtendedClaims(*listed);
  if (!claims.ok()) {
    why =
        fmt::format("annotation {}: {}", dra::kExtendedClaimsAnnotation, claims.status().message());
    return false;
  }
  Impl::Dra& d = impl_->dra;
  for (const dra::ExtendedClaim& c : *claims) {
    const ClaimKey key{pod.pod_namespace, c.claim};
    if (snapshot_.FindResourceClaim(key.first, key.second) != nullptr || d.creating.contains(key))
      continue;
    const std::uint64_t id = NextId();
    d.creating.emplace(key, id);
    d.created_by.emplace(id, std::pair{key, pod.uid});
    out.push_back(
        CreateResourceClaim{id, dra::MakeExtendedClaim(c, pod.pod_namespace), pod.name, pod.uid});
  }
  return true;
}

// Writes `observed` as `assumed` (its allocation and reservedFor), for the
// pod of `w`: the snapshot counts `assumed` at once, so the next pod of the
// pass sees it, and keeps `observed` to restore should the write fail.
void Engine::DraWriteClaim(DraWrite& w, const dra::ResourceClaim& observed,
                           dra::ResourceClaim assumed, std::vector<Command>& out) {
  Impl::Dra& d = impl_->dra;
  const std::uint64_t id = NextId();
  w.claim_writes.emplace(id, KeyOf(observed));
  d.write_of.emplace(id, w.uid);
  out.push_back(WriteClaimStatus{id, observed.claim_namespace, observed.name, observed.uid,
                                 observed.resource_version, assumed.allocation.has_value(),
                                 assumed.allocation, assumed.reserved_for});
  d.before.insert_or_assign(KeyOf(observed), observed);
  if (assumed.allocation) w.unseen.insert(KeyOf(observed));
  snapshot_.AddResourceClaim(std::move(assumed));
}

void Engine::DraRemoveGate(DraWrite& w, std::vector<Command>& out) {
  Impl::Dra& d = impl_->dra;
  if (auto seq = d.seq_of.find(w.uid); seq != d.seq_of.end() && w.written_at_ms)
    d.timers.erase({*w.written_at_ms + kDraSeenMs, seq->second});  // no longer needed
  w.written_at_ms.reset();
  w.gate_write = NextId();
  d.write_of.emplace(w.gate_write, w.uid);
  out.push_back(RemoveSchedulingGate{w.gate_write, w.pod_namespace, w.name, w.uid});
}

// ---------------------------------------------------------------------------
// Results

bool Engine::DraResult(std::uint64_t id, bool succeeded, std::int64_t now_ms,
                       std::vector<Command>& out) {
  Impl::Dra& d = impl_->dra;
  if (auto created = d.created_by.find(id); created != d.created_by.end()) {
    // Made: the watch brings it (and judges its pod). Failed: tried again.
    if (succeeded) {
      ++counters_.dra_claims_created;
    } else {
      d.creating.erase(created->second.first);
      DraDueAt(created->second.second, now_ms + kDraRetryMs);
    }
    d.created_by.erase(created);
    return true;
  }
  auto of = d.write_of.find(id);
  if (of == d.write_of.end()) return false;
  const std::string uid = of->second;
  d.write_of.erase(of);
  auto it = d.writing.find(uid);
  if (it == d.writing.end()) return true;
  DraWrite& w = it->second;
  if (id == w.gate_write) {
    if (succeeded) {
      ++counters_.dra_gates_removed;
      if (d.seq_of.contains(uid)) d.released.insert(uid);
      DraUnhold(uid);
    } else if (d.seq_of.contains(uid)) {  // (a pod gone meanwhile needs nothing)
      d.backoff_until[uid] = now_ms + kDraRetryMs;
      DraDueAt(uid, now_ms + kDraRetryMs);
    }
    d.writing.erase(it);
    return true;
  }
  auto claim = w.claim_writes.find(id);
  if (claim == w.claim_writes.end()) return true;
  auto before = d.before.find(claim->second);
  if (succeeded) {
    ++(w.releasing ? counters_.dra_claims_released : counters_.dra_claims_allocated);
  } else {
    ++counters_.dra_claim_writes_failed;
    w.failed = true;
    // The assumption is taken back: the claim as last observed, and the
    // room it took given back.
    if (before != d.before.end()) {
      snapshot_.AddResourceClaim(before->second);
      DraRoomAnywhere();
    }
  }
  if (before != d.before.end()) d.before.erase(before);
  w.claim_writes.erase(claim);
  if (!w.claim_writes.empty()) return true;
  if (w.failed || w.releasing) {
    // Judged again: from what the watch brings after a failure, or placed
    // anew once released (what it held is room for others too).
    if (w.failed && d.seq_of.contains(uid)) {
      d.backoff_until[uid] = now_ms + kDraRetryMs;
      DraDueAt(uid, now_ms + kDraRetryMs);
    } else {
      DraDue(uid);
    }
    if (w.releasing) DraRoomAnywhere();
    DraAssume(uid, std::nullopt);
    d.writing.erase(it);
    return true;
  }
  if (!Ready(now_ms)) {
    // Leadership lapsed while the claims were written: the gate is the
    // leader's to remove (it finds the claims allocated for the pod).
    DraAssume(uid, std::nullopt);
    d.writing.erase(it);
    DraDueAt(uid, now_ms + kDraRetryMs);
    return true;
  }
  if (w.unseen.empty()) {
    DraRemoveGate(w, out);
  } else {  // removed once the watch shows the claims (DraPass)
    w.written_at_ms = now_ms;
    DraDueAt(uid, now_ms + kDraSeenMs);
  }
  return true;
}

}  // namespace devshare::engine
