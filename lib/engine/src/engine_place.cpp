// Filter and Prioritize: placing a pod, holding Filters back while the
// binds in flight have the API client's writes busy, placing around locked
// nodes, and the result of HAMi's placement PATCH (engine.hpp, "Filter").
#include <fmt/format.h>

#include <algorithm>

#include "devshare/annotations.hpp"
#include "devshare/engine/engine.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

void Engine::Filter(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
                    std::int64_t now_ms, std::vector<Command>& out) {
  ++counters_.filters;
  if (!Ready(now_ms)) {
    ++counters_.filters_refused;
    out.push_back(
        FilterReply{request, {}, {}, "not ready: not the leader, or no registration pass yet", {}});
    return;
  }
  if (!impl_->held.empty() || BindsBacklogged()) {
    ++counters_.filters_held;
    impl_->held.push_back(Impl::HeldFilter{request, pod, nodes, now_ms + options_.filter_hold_ms});
    return;
  }
  Place(request, pod, nodes, now_ms, out);
}

bool Engine::BindsBacklogged() const {
  if (options_.api_qps <= 0) return false;
  const int writes_per_bind = options_.bind_mode == BindMode::kLockFree        ? 1
                              : options_.pod_writes == PodWrites::kWithBinding ? 2
                                                                               : 3;
  const double budget = options_.api_qps * static_cast<double>(options_.bind_budget_ms) / 1000.0;
  return static_cast<double>(impl_->binds_in_flight * writes_per_bind) >=
         std::max(budget, static_cast<double>(writes_per_bind));
}

void Engine::PlaceHeldFilters(std::int64_t now_ms, std::vector<Command>& out) {
  while (!impl_->held.empty() && !BindsBacklogged()) {
    Impl::HeldFilter held = std::move(impl_->held.front());
    impl_->held.pop_front();
    if (!Ready(now_ms)) {
      out.push_back(FilterReply{held.request, {}, {}, "not ready: leadership lost while held", {}});
      continue;
    }
    if (!impl_->pods.contains(held.pod.uid)) {
      out.push_back(FilterReply{held.request, {}, {}, "the pod was deleted while held", {}});
      continue;
    }
    Place(held.request, held.pod, held.nodes, now_ms, out);
  }
}

void Engine::Place(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
                   std::int64_t now_ms, std::vector<Command>& out) {
  // A pod preempting waits for the devices kept for it. A node other binds
  // hold or are about to lock is a last resort, the busier the later:
  // placed there, the pod's bind waits for the lock.
  std::optional<Result<FilterResult>> nominated = PlaceOnNominatedNode(pod, nodes, now_ms);
  std::optional<Result<FilterResult>> around =
      nominated ? std::nullopt : PlaceAroundBusyNodes(pod, nodes, now_ms);
  if (around) ++counters_.filters_around_locks;
  Result<FilterResult> result =
      nominated ? std::move(*nominated)
      : around  ? std::move(*around)
                : devshare::Filter(snapshot_, pod, nodes, Seconds(now_ms), options_.filter);
  if (!result.ok()) {
    out.push_back(FilterReply{request, {}, {}, std::string(result.status().message()), {}});
    return;
  }
  if (!result->has_requests) {  // every node passes; fgd still names the one it prefers
    out.push_back(FilterReply{
        request, result->node ? std::vector<std::string>{*result->node} : nodes, {}, "", {}});
    return;
  }
  if (!result->node) {
    ++counters_.filters_unschedulable;
    if (options_.retry_window_ms > 0)
      impl_->refused[pod.uid] = Impl::Refused{pod.pod_namespace, pod.name, now_ms};
    if (options_.preemption)
      return Preempt(request, pod, nodes, std::move(result->failed), now_ms, out);
    out.push_back(FilterReply{request, {}, std::move(result->failed), "", {}});
    return;
  }
  impl_->refused.erase(pod.uid);
  if (impl_->preemptions.contains(pod.uid)) {  // on what its victims freed, or better
    ++counters_.preemptions_placed;
    EndPreemption(pod.uid, true);
  }
  // Reserve, then PATCH the pod; the reply waits for the PATCH.
  Pod reserved = pod;
  for (const auto& [key, value] : result->annotations.entries())
    reserved.annotations.Set(key, value);
  if (Status added = snapshot_.AddPod(reserved);
      !added.ok()) {  // the core wrote what it cannot read: a bug
    out.push_back(
        FilterReply{request,
                    {},
                    {},
                    fmt::format("internal: the placement does not decode: {}", added.message()),
                    {}});
    return;
  }
  impl_->Reserve(pod.uid, result->annotations, *result->node);
  if (options_.pod_writes == PodWrites::kWithBinding) {  // written by the Binding
    ++counters_.filters_placed;
    out.push_back(FilterReply{request, {*result->node}, {}, "", {}});
    return;
  }
  const std::uint64_t id = NextId();
  impl_->pending.emplace(
      id, FilterFlow{request, pod.uid, FilterReply{request, {*result->node}, {}, "", {}}});
  ++counters_.pod_patches;
  out.push_back(PatchPod{id, pod.pod_namespace, pod.name, result->annotations});
}

std::optional<Result<FilterResult>> Engine::PlaceAroundBusyNodes(
    const Pod& pod, const std::vector<std::string>& nodes, std::int64_t now_ms) const {
  if (!options_.avoid_locked_nodes || options_.bind_mode != BindMode::kNodeLock)
    return std::nullopt;
  std::unordered_map<std::string_view, int> busy;
  const PodRef self{pod.pod_namespace, pod.name};
  for (const std::string& name : impl_->locked) {
    const NodeMemory& memory = impl_->nodes.find(name)->second;
    // A look, not a decision to act on: the holder taken as present (Bind
    // looks it up), the sighting not kept.
    LockSighting sighting = memory.lock_sighting;
    const LockDecision decision =
        DecideLock(Annotation(memory.object, keys::kNodeLock), self,
                   LockHolder{LockHolder::State::kPresent, BindPhase::kNone, std::nullopt},
                   sighting, Seconds(now_ms), options_.lock);
    if (decision.action == LockAction::kHeld) ++busy[name];
  }
  auto own = impl_->reservations.find(pod.uid);
  for (const auto& [name, count] : impl_->reserved_on) {
    const bool mine = own != impl_->reservations.end() && own->second.node == name;
    if (count > (mine ? 1 : 0)) busy[name] += count - (mine ? 1 : 0);
  }
  if (busy.empty()) return std::nullopt;
  // Each candidate with its busyness, then the levels below the busiest
  // (which is every candidate: the caller's own Filter).
  std::vector<std::pair<const std::string*, int>> candidates;
  candidates.reserve(nodes.empty() ? impl_->nodes.size() : nodes.size());
  auto add = [&](const std::string& name) {
    auto it = busy.find(name);
    candidates.emplace_back(&name, it == busy.end() ? 0 : it->second);
  };
  if (nodes.empty()) {
    for (const auto& entry : impl_->nodes) add(entry.first);
  } else {
    for (const std::string& name : nodes) add(name);
  }
  std::vector<int> levels;
  levels.reserve(candidates.size());
  for (const auto& candidate : candidates) levels.push_back(candidate.second);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  if (!levels.empty()) levels.pop_back();
  std::vector<std::string> tier;  // the candidates no busier than a level
  for (const int level : levels) {
    tier.clear();
    for (const auto& [name, busyness] : candidates) {
      if (busyness <= level) tier.push_back(*name);
    }
    Result<FilterResult> r =
        devshare::Filter(snapshot_, pod, tier, Seconds(now_ms), options_.filter);
    if (r.ok() && r->has_requests && r->node) return r;
  }
  return std::nullopt;
}

void Engine::RequestRetries(std::int64_t now_ms, std::vector<Command>& out) {
  Impl& s = *impl_;
  const std::int64_t since = now_ms - options_.retry_window_ms;
  std::erase_if(s.refused, [&](const auto& entry) { return entry.second.at_ms < since; });
  if (!s.devices_freed) return;
  s.devices_freed = false;
  if (!Leading()) return;
  // In UID order: the same writes on every run.
  std::vector<const std::pair<const std::string, Impl::Refused>*> due;
  due.reserve(s.refused.size());
  for (const auto& entry : s.refused) due.push_back(&entry);
  std::sort(due.begin(), due.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* entry : due) {
    const std::uint64_t id = NextId();
    s.pending.emplace(id, Release{});
    ++counters_.retries_requested;
    ++counters_.pod_patches;
    out.push_back(PatchPod{id, entry->second.pod_namespace, entry->second.name,
                           StringMap{{std::string(kRetryAnnotation), std::to_string(now_ms)}}});
  }
  s.refused.clear();
}

Result<std::vector<NodeScore>> Engine::Prioritize(const Pod& pod,
                                                  const std::vector<std::string>& nodes,
                                                  std::int64_t now_ms) const {
  if (!Ready(now_ms))
    return Status::Unavailable("not ready: not the leader, or no registration pass yet");
  FilterOptions options = options_.filter;
  options.reasons = false;
  Result<FilterResult> result = devshare::Filter(snapshot_, pod, nodes, Seconds(now_ms), options);
  if (!result.ok()) return result.status();
  return std::move(result->scores);
}

void Engine::PlaceResult(FilterFlow flow, bool succeeded, std::vector<Command>& out) {
  if (succeeded) {
    ++counters_.filters_placed;
    out.push_back(std::move(flow.reply));
    return;
  }
  snapshot_.RemovePod(flow.uid);
  impl_->Unreserve(flow.uid);
  out.push_back(FilterReply{flow.request, {}, {}, "patching the pod failed", {}});
}

}  // namespace devshare::engine
