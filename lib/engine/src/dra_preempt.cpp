// DRA preemption (engine.hpp, "Preempt"): a gated pod whose claims fit
// nowhere evicts the pods dra::PlanClaimPreemption chooses, keeps the
// allocations it will get, and waits for the victims and their claims to
// go.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "devshare/dra_preemption.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

namespace {

std::string ClaimName(const dra::ResourceClaim& claim) {
  return fmt::format("{}/{}", claim.claim_namespace, claim.name);
}

}  // namespace

void Engine::DraPreempt(const Pod& pod, const std::vector<dra::ResourceClaim>& claims,
                        const dra::PodResources& resources, std::string no_fit, std::int64_t now_ms,
                        std::vector<Command>& out) {
  Impl& s = *impl_;
  Impl::Dra& d = s.dra;
  if (auto backoff = s.preempt_backoff.find(pod.uid);
      backoff != s.preempt_backoff.end() && backoff->second > now_ms) {
    // A preemption given up: it may preempt again after the backoff.
    DraDueAt(pod.uid, backoff->second);
    return DraHoldPod(pod, DraHoldKind::kNoFit,
                      fmt::format("{}; no preemption: its last one was given up", no_fit), now_ms,
                      out);
  }
  const std::vector<Pod> victims = PossibleVictims(pod);
  const bool never = pod.preemption_policy == "Never";
  Result<PreemptionPlan> plan =
      victims.empty() || never
          ? PreemptionPlan{}
          : dra::PlanClaimPreemption(snapshot_, *d.placer, pod, claims, resources, victims,
                                     Budgets(), options_.dra_device_classes);
  const PreemptionCandidate* chosen =
      plan.ok() && plan->refused.empty() ? WithinBudgets(*plan) : nullptr;
  if (chosen == nullptr) {
    std::string why;
    if (never) {
      why = "its preemptionPolicy is Never";
    } else if (!plan.ok()) {
      why = plan.status().message();
    } else if (!plan->refused.empty()) {
      why = plan->refused;
    } else if (!plan->candidates.empty()) {
      why = "a PodDisruptionBudget protects every node's victims";
    } else if (!victims.empty()) {
      why = "no eviction of pods of lower priority helps";
    }
    // No pod of lower priority anywhere: the reason as it was.
    std::string reason =
        why.empty() ? std::move(no_fit) : fmt::format("{}; no preemption: {}", no_fit, why);
    // Counted once per reason, not per pass.
    auto held = d.held.find(pod.uid);
    if (held == d.held.end() || held->second.reason != reason) ++counters_.preemptions_refused;
    return DraHoldPod(pod, DraHoldKind::kNoFit, std::move(reason), now_ms, out);
  }
  const std::string message = BeginPreemption(pod, *chosen, now_ms, out);
  Preemption& p = s.preemptions.at(pod.uid);
  // The claims of served classes the victims hold alone: released when
  // they go.
  std::set<std::string> evicted;
  for (const PreemptionVictim& v : chosen->victims) evicted.insert(v.uid);
  for (const dra::ResourceClaim* c : snapshot_.ResourceClaims()) {
    if (!c->allocation || c->reserved_for.empty() ||
        !dra::AsksServedClass(c->spec, options_.dra_device_classes))
      continue;
    if (std::all_of(c->reserved_for.begin(), c->reserved_for.end(),
                    [&](const dra::ClaimConsumer& r) { return evicted.contains(r.uid); }))
      p.claims.push_back(ClaimName(*c));
  }
  // The allocations it will get count from now on (beside the victims'
  // until they go), unwritten, so no pod of lower priority takes them;
  // the watch's unallocated claim does not replace them (`before`).
  std::vector<ClaimKey>& kept = d.kept[pod.uid];
  for (std::size_t i = 0; i < claims.size(); ++i) {
    dra::ResourceClaim assumed = claims[i];
    assumed.allocation = chosen->allocations[i];
    d.before.insert_or_assign(KeyOf(claims[i]), claims[i]);
    kept.push_back(KeyOf(claims[i]));
    snapshot_.AddResourceClaim(std::move(assumed));
  }
  // The Preempting Event says it; the hold's later reasons are Events of
  // their own at most once a period.
  std::string reason = fmt::format("preempting: {}", message);
  d.evented.insert_or_assign(pod.uid, Impl::Dra::Evented{DraHoldKind::kPreempting, reason, now_ms});
  DraHoldPod(pod, DraHoldKind::kPreempting, std::move(reason), now_ms, out);
}

bool Engine::DraVictimsGone(const Pod& pod, std::int64_t now_ms, std::vector<Command>& out) {
  Impl::Dra& d = impl_->dra;
  Preemption& p = impl_->preemptions.at(pod.uid);
  auto claim_of = [&](const std::string& name) {
    const std::size_t slash = name.find('/');
    return snapshot_.FindResourceClaim(name.substr(0, slash), name.substr(slash + 1));
  };
  std::erase_if(p.claims, [&](const std::string& name) {
    const dra::ResourceClaim* c = claim_of(name);
    return c == nullptr || !c->allocation;
  });
  if (!p.victims.empty()) {
    DraHoldPod(
        pod, DraHoldKind::kPreempting,
        fmt::format("preempting on {}: waiting for {} to go", p.node, fmt::join(p.victims, ", ")),
        now_ms, out);
    return false;
  }
  if (p.claims.empty()) {
    DraDropKept(pod.uid);
    return true;
  }
  // The resourceclaim controller takes a deleted pod out of reservedFor
  // and deallocates a claim it leaves reserved for no one (one with its
  // finalizer: devshare's allocations carry it); one still allocated for
  // no one is released here.
  DraWrite* w = nullptr;
  for (const std::string& name : p.claims) {
    const dra::ResourceClaim* c = claim_of(name);
    if (!c->reserved_for.empty()) continue;
    if (w == nullptr) {
      w = &d.writing[pod.uid];
      *w = DraWrite(pod, /*releasing_claims=*/true);
    }
    dra::ResourceClaim released = *c;
    released.allocation.reset();
    DraWriteClaim(*w, *c, std::move(released), out);
  }
  DraHoldPod(pod, DraHoldKind::kPreempting,
             fmt::format("preempting on {}: its victims are gone; waiting for their claims {} to "
                         "be released",
                         p.node, fmt::join(p.claims, ", ")),
             now_ms, out);
  return false;
}

void Engine::DraDropKept(const std::string& uid) {
  Impl::Dra& d = impl_->dra;
  auto kept = d.kept.find(uid);
  if (kept == d.kept.end()) return;
  for (const ClaimKey& key : kept->second) {
    auto before = d.before.find(key);
    if (before == d.before.end()) continue;  // deleted meanwhile
    snapshot_.AddResourceClaim(std::move(before->second));
    d.before.erase(before);
  }
  kept->second.clear();
}

}  // namespace devshare::engine
