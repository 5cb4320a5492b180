// Preemption (engine.hpp, "Preempt"): evicting the lower-priority pods a
// pod needs gone, keeping what they free for it, and the extender's
// preempt verb.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "devshare/engine/engine.hpp"
#include "devshare/preemption.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

namespace {

bool Among(const std::vector<std::string>& nodes, const std::string& node) {
  return nodes.empty() || std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace

void Engine::PodDisruptionBudgetObserved(const PodDisruptionBudget& budget) {
  impl_->budgets[Impl::NameKey(budget.budget_namespace, budget.name)] = budget;
}

void Engine::PodDisruptionBudgetDeleted(const std::string& budget_namespace,
                                        const std::string& name) {
  impl_->budgets.erase(Impl::NameKey(budget_namespace, name));
}

const std::map<std::string, Preemption>& Engine::preemptions() const { return impl_->preemptions; }

std::vector<Pod> Engine::PossibleVictims(const Pod& pod) const {
  std::vector<Pod> victims;
  const auto& bound = impl_->bound_by_priority;
  if (bound.empty() || bound.begin()->first >= pod.priority) return victims;  // none below it
  for (const auto& [uid, p] : impl_->pods) {
    if (p.node_name.empty() || p.priority >= pod.priority || p.terminating ||
        impl_->victim_of.contains(uid))
      continue;
    victims.push_back(p);
  }
  return victims;
}

std::vector<PodDisruptionBudget> Engine::Budgets() const {
  std::vector<PodDisruptionBudget> budgets;
  budgets.reserve(impl_->budgets.size());
  for (const auto& entry : impl_->budgets) budgets.push_back(entry.second);
  return budgets;
}

std::optional<Result<FilterResult>> Engine::PlaceOnNominatedNode(
    const Pod& pod, const std::vector<std::string>& nodes, std::int64_t now_ms) const {
  auto it = impl_->preemptions.find(pod.uid);
  if (it == impl_->preemptions.end() || !Among(nodes, it->second.node)) return std::nullopt;
  const std::string one[] = {it->second.node};
  Result<FilterResult> r = devshare::Filter(snapshot_, pod, one, Seconds(now_ms), options_.filter);
  // Once the victims are gone and it still does not fit there, anywhere.
  if (r.ok() && !r->node && it->second.victims.empty()) return std::nullopt;
  return r;
}

void Engine::Preempt(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
                     std::vector<NodeFailure> failed, std::int64_t now_ms,
                     std::vector<Command>& out) {
  Impl& s = *impl_;
  if (auto it = s.preemptions.find(pod.uid); it != s.preemptions.end()) {
    const Preemption& p = it->second;
    const std::string why =
        p.victims.empty()
            ? fmt::format("preempting on {}: its victims are gone; the pod does not fit yet",
                          p.node)
            : fmt::format("preempting on {}: waiting for {} to go", p.node,
                          fmt::join(p.victims, ", "));
    bool named = false;
    for (NodeFailure& f : failed) {
      if (f.node == p.node) f.reason = why, named = true;
    }
    if (!named) failed.push_back(NodeFailure{p.node, why});
    out.push_back(FilterReply{request, {}, std::move(failed), "", {}});
    return;
  }
  if (auto backoff = s.preempt_backoff.find(pod.uid);
      backoff != s.preempt_backoff.end() && backoff->second > now_ms) {
    out.push_back(FilterReply{request, {}, std::move(failed), "", {}});
    return;
  }
  const std::vector<Pod> victims = PossibleVictims(pod);
  if (victims.empty() || pod.preemption_policy == "Never") {
    ++counters_.preemptions_refused;
    // No pod of lower priority anywhere: no eviction can help any node.
    if (pod.preemption_policy == "Never")
      out.push_back(FilterReply{request, {}, std::move(failed), "", {}});
    else
      out.push_back(FilterReply{request, {}, {}, "", std::move(failed)});
    return;
  }
  const std::vector<PodDisruptionBudget> budgets = Budgets();
  // As kube-scheduler's dry run: enough candidates, not every node.
  const std::size_t considered = nodes.empty() ? impl_->nodes.size() : nodes.size();
  Result<PreemptionPlan> plan =
      PlanPreemption(snapshot_, pod, victims, budgets, nodes, Seconds(now_ms), options_.filter,
                     std::max<std::size_t>(100, considered / 10));
  if (!plan.ok() || !plan->refused.empty()) {
    out.push_back(FilterReply{request, {}, std::move(failed), "", {}});
    return;
  }
  FilterReply reply{request, {}, std::move(plan->unexamined), "", std::move(plan->unresolvable)};
  const PreemptionCandidate* chosen = WithinBudgets(*plan);
  std::map<std::string, std::string> reasons;
  for (NodeFailure& f : failed) reasons[f.node] = std::move(f.reason);
  for (const PreemptionCandidate& c : plan->candidates) {
    if (&c == chosen) continue;
    reply.failed.push_back(NodeFailure{
        c.node, fmt::format("{}; {} victim(s) here{}", reasons[c.node], c.victims.size(),
                            c.budget_violations > 0 ? " (a PodDisruptionBudget forbids it)" : "")});
  }
  if (chosen == nullptr) {
    ++counters_.preemptions_refused;
    out.push_back(std::move(reply));
    return;
  }
  const std::string message = BeginPreemption(pod, *chosen, now_ms, out);
  // The devices it will take count as used from now on (over the victims'
  // until they go), so no pod of lower priority takes them in between.
  Pod kept = pod;
  for (const auto& [key, value] : chosen->annotations.entries()) kept.annotations.Set(key, value);
  static_cast<void>(snapshot_.AddPod(kept));  // Filter's own annotations decode
  reply.failed.push_back(NodeFailure{chosen->node, fmt::format("preempting: {}", message)});
  std::sort(reply.failed.begin(), reply.failed.end(),
            [](const NodeFailure& a, const NodeFailure& b) { return a.node < b.node; });
  out.push_back(std::move(reply));
}

std::string Engine::BeginPreemption(const Pod& pod, const PreemptionCandidate& chosen,
                                    std::int64_t now_ms, std::vector<Command>& out) {
  Impl& s = *impl_;
  ++counters_.preemptions;
  Preemption p{pod.pod_namespace, pod.name, chosen.node, {}, {}, now_ms, std::nullopt};
  std::vector<std::string> named;
  for (const PreemptionVictim& v : chosen.victims) {
    const std::uint64_t id = NextId();
    s.eviction_of[id] = v.uid;
    s.victim_of[v.uid] = pod.uid;
    p.victims.push_back(Impl::NameKey(v.pod_namespace, v.name));
    named.push_back(fmt::format("{} (priority {})", p.victims.back(), v.priority));
    out.push_back(EvictPod{id, v.pod_namespace, v.name, v.uid});
    out.push_back(PodEvent{v.pod_namespace, v.name, v.uid, "Preempted",
                           fmt::format("Preempted by {}/{} (priority {}) on node {}",
                                       pod.pod_namespace, pod.name, pod.priority, chosen.node)});
  }
  std::string message = fmt::format("evicting {} on {}", fmt::join(named, ", "), chosen.node);
  out.push_back(NominatePod{pod.pod_namespace, pod.name, pod.uid, chosen.node});
  out.push_back(PodEvent{pod.pod_namespace, pod.name, pod.uid, "Preempting", message});
  s.preemptions.insert_or_assign(pod.uid, std::move(p));
  return message;
}

void Engine::EndPreemption(const std::string& uid, bool keep_devices) {
  Impl& s = *impl_;
  if (s.preemptions.erase(uid) == 0) return;
  std::erase_if(s.victim_of, [&](const auto& entry) { return entry.second == uid; });
  // A DRA preemptor's kept allocations are claims, not the pod's devices.
  const bool dra = s.dra.kept.contains(uid);
  if (dra) {
    DraDropKept(uid);
    s.dra.kept.erase(uid);
    DraDue(uid);  // judged again: placed, or held saying why
    DraRoomAnywhere();
  } else if (!keep_devices) {
    snapshot_.RemovePod(uid);
  }
}

void Engine::GiveUpPreemption(const std::string& uid, std::int64_t now_ms) {
  ++counters_.preemptions_abandoned;
  EndPreemption(uid, false);
  impl_->preempt_backoff[uid] = now_ms + options_.preemption_hold_ms;
}

void Engine::VictimGone(const std::string& uid) {
  Impl& s = *impl_;
  auto victim = s.victim_of.find(uid);
  if (victim == s.victim_of.end()) return;
  auto preemption = s.preemptions.find(victim->second);
  s.victim_of.erase(victim);
  const Pod* pod = nullptr;
  if (auto it = s.pods.find(uid); it != s.pods.end()) pod = &it->second;
  if (preemption == s.preemptions.end() || pod == nullptr) return;
  std::erase(preemption->second.victims, Impl::NameKey(pod->pod_namespace, pod->name));
}

bool Engine::EvictionResult(std::uint64_t id, bool succeeded, std::int64_t now_ms) {
  Impl& s = *impl_;
  auto it = s.eviction_of.find(id);
  if (it == s.eviction_of.end()) return false;
  const std::string victim = std::move(it->second);
  s.eviction_of.erase(it);
  if (succeeded) {
    ++counters_.preemption_victims;
    return true;
  }
  ++counters_.evictions_failed;
  if (auto preemptor = s.victim_of.find(victim); preemptor != s.victim_of.end())
    GiveUpPreemption(std::string(preemptor->second), now_ms);
  return true;
}

void Engine::PreemptionTick(std::int64_t now_ms) {
  Impl& s = *impl_;
  std::vector<std::string> given_up;
  for (auto& [uid, p] : s.preemptions) {
    if (p.victims.empty() && p.claims.empty() && !p.victims_gone_ms) p.victims_gone_ms = now_ms;
    const std::int64_t due = p.victims_gone_ms ? *p.victims_gone_ms + options_.preemption_hold_ms
                                               : p.started_ms + options_.preemption_timeout_ms;
    if (due <= now_ms) given_up.push_back(uid);
  }
  for (const std::string& uid : given_up) GiveUpPreemption(uid, now_ms);
  std::erase_if(s.preempt_backoff, [&](const auto& entry) { return entry.second <= now_ms; });
}

std::optional<std::int64_t> Engine::PreemptionWakeMs() const {
  std::optional<std::int64_t> wake;
  auto earliest = [&](std::int64_t at) { wake = wake ? std::min(*wake, at) : at; };
  for (const auto& [uid, p] : impl_->preemptions) {
    if (p.victims.empty() && p.claims.empty() && !p.victims_gone_ms) earliest(0);
    earliest(p.victims_gone_ms ? *p.victims_gone_ms + options_.preemption_hold_ms
                               : p.started_ms + options_.preemption_timeout_ms);
  }
  return wake;
}

Result<std::map<std::string, NodeVictims>> Engine::ExtenderPreempt(
    const Pod& pod, const std::map<std::string, NodeVictims>& proposed, std::int64_t now_ms) const {
  if (!Ready(now_ms))
    return Status::Unavailable("not ready: not the leader, or no registration pass yet");
  std::map<std::string, NodeVictims> answer;
  if (pod.preemption_policy == "Never" || proposed.empty()) return answer;
  const Impl& s = *impl_;
  if (auto own = s.preemptions.find(pod.uid); own != s.preemptions.end()) {
    NodeVictims& victims = answer[own->second.node];
    for (const auto& [victim, preemptor] : s.victim_of) {
      if (preemptor == pod.uid) victims.uids.push_back(victim);
    }
    std::sort(victims.uids.begin(), victims.uids.end());
    return answer;
  }
  // kube-scheduler's victims set aside (rare enough to copy the snapshot).
  ClusterSnapshot work = snapshot_;
  std::vector<std::string> nodes;
  std::set<std::string, std::less<>> set_aside;
  for (const auto& [node, victims] : proposed) {
    nodes.push_back(node);
    for (const std::string& uid : victims.uids) {
      work.RemovePod(uid);
      set_aside.insert(uid);
    }
  }
  Result<FilterResult> fits = devshare::Filter(work, pod, nodes, Seconds(now_ms), options_.filter);
  if (!fits.ok()) return fits.status();
  if (!fits->has_requests) return proposed;
  std::vector<std::string> failing;
  for (const NodeScore& score : fits->scores) answer[score.node] = proposed.at(score.node);
  for (const NodeFailure& f : fits->failed) failing.push_back(f.node);
  if (failing.empty()) return answer;
  std::vector<Pod> victims = PossibleVictims(pod);
  std::erase_if(victims, [&](const Pod& p) { return set_aside.contains(p.uid); });
  Result<PreemptionPlan> plan =
      PlanPreemption(work, pod, victims, Budgets(), failing, Seconds(now_ms), options_.filter);
  if (!plan.ok()) return plan.status();
  for (const PreemptionCandidate& c : plan->candidates) {
    NodeVictims merged = proposed.at(c.node);
    for (const PreemptionVictim& v : c.victims) merged.uids.push_back(v.uid);
    merged.budget_violations += static_cast<std::int64_t>(c.budget_violations);
    answer[c.node] = std::move(merged);
  }
  return answer;
}

}  // namespace devshare::engine
