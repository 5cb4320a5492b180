#include "devshare/engine/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "devshare/annotations.hpp"
#include "devshare/request.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

namespace {

std::int64_t Seconds(std::int64_t now_ms) { return now_ms / 1000; }

// A failed bind's lock release that fails itself (an API error) is written
// again after 1, 2, 4, ... s, up to this many writes in all (about a minute).
constexpr int kReleaseAttempts = 7;
constexpr std::int64_t kReleaseBackoffMs = 1000;

// A bind step a replica that no longer leads must not take: another may be
// placing on the same devices from a cache that never saw this placement.
constexpr std::string_view kNotLeading =
    "not ready: leadership lost while binding; nothing more is written";

// A placement's annotations followed by bind-phase allocating and its time.
StringMap WithBindStart(StringMap placement, std::int64_t now_ms) {
  const StringMap start = BindStartPatch(Seconds(now_ms));
  for (const auto& [k, v] : start.entries()) placement.Set(k, v);
  return placement;
}

std::int64_t Allocatable(const Node& node, const std::string& resource) {
  const std::string* q = node.allocatable.Find(resource);
  return q != nullptr ? QuantityAsInt64(*q).value_or(0) : 0;
}

std::optional<std::string> Annotation(const Node& node, std::string_view key) {
  if (key.empty()) return std::nullopt;
  const std::string* v = node.annotations.Find(key);
  return v != nullptr ? std::optional<std::string>(*v) : std::nullopt;
}

}  // namespace

Engine::Engine(EngineOptions options)
    : options_(std::move(options)), snapshot_(options_.config), impl_(std::make_unique<Impl>()) {
  impl_->follower.hostname = options_.hostname;
  impl_->rng.seed(options_.seed);
  // Under the fgd policies the snapshot keeps each node's fragmentation
  // measure for the workload Filter is given (pods that ask for fgd by
  // annotation under other policies are measured node by node). An invalid
  // workload is refused here and by every Filter call.
  if (UsesFgd(options_.filter)) {
    static_cast<void>(snapshot_.SetFragmentationWorkload(options_.filter.workload));
  }
  MakeDraPlacer();
}

Engine::~Engine() = default;

bool Engine::Leading() const {
  return options_.leadership == Leadership::kAlways || impl_->follower.leading;
}

bool Engine::Ready(std::int64_t now_ms) const {
  if (options_.leadership == Leadership::kFollowLease)
    return FilterAllowed(impl_->follower, now_ms);
  return impl_->registered;
}

// ---------------------------------------------------------------------------
// Registration

void Engine::NodeObserved(const Node& node, std::int64_t now_ms, std::vector<Command>& out) {
  const std::size_t vendors = options_.config.vendors.size();
  auto [it, added] = impl_->nodes.try_emplace(node.name);
  NodeMemory& memory = it->second;
  memory.object = node;
  if (Annotation(node, keys::kNodeLock)) {
    impl_->locked.insert(node.name);
  } else {
    impl_->locked.erase(node.name);
  }
  if (added) {
    memory.hami.resize(vendors);
    memory.registered.resize(vendors);
  }
  if (options_.lock_retry == LockRetry::kRelease) WakeLockWaiters(node.name, now_ms, out);
  impl_->dra.dirty = true;
  if (!Leading()) return;
  // Event-driven protocols look at the node now; under HAMi's a new node is
  // registered at once and a usable node's new object (devices, cordons,
  // pair scores) is applied, the handshake waiting for the periodic pass.
  if (!impl_->last_pass_ms) {
    RegistrationPass(now_ms, out);
  } else if (added || options_.registration != RegistrationProtocol::kHami) {
    RegisterNode(it->first, memory, now_ms, out);
  } else if (memory.usable) {
    CacheNode(node);
  } else {
    CacheDraOnly(memory);
  }
}

void Engine::NodeDeleted(const std::string& name) {
  impl_->nodes.erase(name);
  impl_->locked.erase(name);
  impl_->node_errors.erase(name);
  snapshot_.RemoveNode(name);
  impl_->dra.dirty = true;
}

const std::map<std::string, std::string>& Engine::node_errors() const { return impl_->node_errors; }

void Engine::CacheNode(const Node& node) {
  const Status status = snapshot_.AddNode(node);
  if (status.ok()) {
    impl_->node_errors.erase(node.name);
  } else {
    impl_->node_errors[node.name] = std::string(status.message());
  }
}

void Engine::RegisterNode(const std::string& name, NodeMemory& memory, std::int64_t now_ms,
                          std::vector<Command>& out) {
  const std::int64_t now = Seconds(now_ms);
  bool usable = false;
  bool refresh = false;
  std::vector<AnnotationWrite> writes;
  for (std::size_t v = 0; v < options_.config.vendors.size(); ++v) {
    const VendorSpec& vendor = options_.config.vendors[v];
    if (vendor.registration == devshare::Registration::kCapacity) {
      // Devices from capacity: live while the kubelet reports them.
      usable = usable || Allocatable(memory.object, vendor.count_resource) > 0;
      continue;
    }
    NodeObservation obs{Annotation(memory.object, vendor.handshake_annotation),
                        Annotation(memory.object, vendor.register_annotation),
                        Allocatable(memory.object, vendor.count_resource)};
    RegistrationStep step;
    switch (options_.registration) {
      case RegistrationProtocol::kHami:
        step = HamiSchedulerPass(obs, memory.hami[v], vendor.handshake_annotation, now,
                                 options_.zone_offset_seconds, options_.filter.hami_exact);
        break;
      case RegistrationProtocol::kVolcano:
        obs.handshake = Annotation(memory.object, keys::kVolcanoHandshake);
        step =
            VolcanoSchedulerPass(obs, keys::kVolcanoHandshake, now, options_.zone_offset_seconds);
        break;
      case RegistrationProtocol::kChangeOnly:
        step = ChangeOnlySchedulerPass(obs, memory.registered[v]);
        if (step.refresh || !step.usable)
          memory.registered[v] = step.usable ? obs.registered : std::nullopt;
        break;
    }
    usable = usable || (step.usable && obs.registered.has_value());
    refresh = refresh || step.refresh;
    if (step.write) writes.push_back(*step.write);
  }
  if (!writes.empty()) {
    const std::uint64_t id = NextId();
    impl_->pending.emplace(id, Impl::Release{});
    ++counters_.node_patches;
    ++counters_.registration_writes;
    out.push_back(PatchNode{id, name, std::move(writes), {}, {}, true});
  }
  if (usable && (refresh || !memory.usable)) {
    CacheNode(memory.object);
  } else if (!usable) {
    if (memory.usable) ++counters_.nodes_dropped;
    CacheDraOnly(memory);
  }
  memory.usable = usable;
}

void Engine::CacheDraOnly(const NodeMemory& memory) {
  if (options_.dra_device_classes.empty()) {
    if (memory.usable) snapshot_.RemoveNode(memory.object.name);
    return;
  }
  // DRA allocates on every node: one whose devices are not registered (or
  // has none) is cached without them.
  Node node = memory.object;
  for (const VendorSpec& vendor : options_.config.vendors) {
    node.annotations.Erase(vendor.register_annotation);
    node.allocatable.Erase(vendor.count_resource);
  }
  CacheNode(node);
}

void Engine::RegistrationPass(std::int64_t now_ms, std::vector<Command>& out) {
  ++counters_.registration_passes;
  impl_->last_pass_ms = now_ms;
  for (auto& [name, memory] : impl_->nodes) RegisterNode(name, memory, now_ms, out);
  if (options_.leadership == Leadership::kFollowLease) {
    RegistrationPassDone(impl_->follower, now_ms);
  } else {
    impl_->registered = true;
  }
}

void Engine::LeaseObserved(const std::optional<LeaseRecord>& lease, std::int64_t now_ms,
                           std::vector<Command>& out) {
  if (ObserveLease(impl_->follower, lease, now_ms) == LeaderEvent::kStartedLeading) {
    RegistrationPass(now_ms, out);  // leadership gained: register at once
  }
}

void Engine::Tick(std::int64_t now_ms, std::vector<Command>& out) {
  if (options_.leadership == Leadership::kFollowLease) FollowerTick(impl_->follower, now_ms);
  if (Leading()) {
    const bool periodic = options_.registration == RegistrationProtocol::kHami;
    if (!impl_->last_pass_ms ||
        (periodic && now_ms - *impl_->last_pass_ms >= options_.register_period_ms)) {
      RegistrationPass(now_ms, out);
    }
  }
  // Failed lock releases whose backoff is over, in order.
  std::vector<Impl::ReleaseRetry> retries;
  std::swap(retries, impl_->release_retries);
  for (Impl::ReleaseRetry& r : retries) {
    if (r.at_ms > now_ms) {
      impl_->release_retries.push_back(std::move(r));
      continue;
    }
    auto node = impl_->nodes.find(r.release.node);
    const std::string* lock = node == impl_->nodes.end()
                                  ? nullptr
                                  : node->second.object.annotations.Find(keys::kNodeLock);
    if (Leading() && lock != nullptr && *lock == r.release.lock)
      ReleaseLock(r.release.node, r.release.lock, r.release.attempt, out);
  }
  // Lock retries whose wait is over, in the order they were parked.
  auto due = [&](const Impl::LockWait& wait) { return wait.at_ms <= now_ms; };
  for (Impl::LockWait& w : impl_->Unpark(due)) TryLock(std::move(w.flow), now_ms, out);
  // Held Filters whose hold is over are refused; kube-scheduler retries them.
  while (!impl_->held.empty() && impl_->held.front().until_ms <= now_ms) {
    ++counters_.filters_hold_expired;
    out.push_back(FilterReply{
        impl_->held.front().request,
        {},
        {},
        fmt::format("busy: {} binds in flight need {} ms of the API client's writes at {} "
                    "requests/s; try again",
                    impl_->binds_in_flight, options_.bind_budget_ms, options_.api_qps)});
    impl_->held.pop_front();
  }
  PlaceHeldFilters(now_ms, out);
  DraPass(now_ms, out);
}

std::optional<std::int64_t> Engine::NextWakeMs() const {
  std::optional<std::int64_t> wake;
  auto earliest = [&](std::int64_t at) { wake = wake ? std::min(*wake, at) : at; };
  if (Leading()) {
    if (!impl_->last_pass_ms) {
      earliest(0);
    } else if (options_.registration == RegistrationProtocol::kHami) {
      earliest(*impl_->last_pass_ms + options_.register_period_ms);
    }
  }
  const LeaseFollower& f = impl_->follower;
  if (options_.leadership == Leadership::kFollowLease && f.leading && f.observed &&
      f.observed->duration_seconds) {
    earliest(f.observed_at_ms + std::int64_t{*f.observed->duration_seconds} * 1000);
  }
  for (const Impl::LockWait& w : impl_->lock_waits) earliest(w.at_ms);
  for (const Impl::ReleaseRetry& r : impl_->release_retries) earliest(r.at_ms);
  if (!impl_->held.empty()) earliest(BindsBacklogged() ? impl_->held.front().until_ms : 0);
  if (DraPassDue(std::numeric_limits<std::int64_t>::max())) {
    earliest(impl_->dra.dirty ? 0 : *impl_->dra.retry_at_ms);
  }
  return wake;
}

// ---------------------------------------------------------------------------
// Pods

void Engine::PodObserved(const Pod& pod) {
  impl_->pods[pod.uid] = pod;
  impl_->uid_of[Impl::NameKey(pod.pod_namespace, pod.name)] = pod.uid;
  if (!pod.node_name.empty()) impl_->Unreserve(pod.uid);  // bound: no longer about to lock
  // A pod whose annotations do not decode holds nothing, as in HAMi; why is kept.
  const Status status = snapshot_.AddPod(pod);
  if (status.ok()) {
    impl_->pod_errors.erase(pod.uid);
  } else {
    impl_->pod_errors[pod.uid] = std::string(status.message());
  }
  DraPodChanged(&pod, pod.uid);
}

const std::map<std::string, std::string>& Engine::pod_errors() const { return impl_->pod_errors; }

void Engine::PodDeleted(const std::string& uid) {
  impl_->pod_errors.erase(uid);
  if (auto pod = impl_->pods.find(uid); pod != impl_->pods.end()) {
    auto name = impl_->uid_of.find(Impl::NameKey(pod->second.pod_namespace, pod->second.name));
    if (name != impl_->uid_of.end() && name->second == uid) impl_->uid_of.erase(name);
    impl_->pods.erase(pod);
  }
  impl_->Unreserve(uid);
  snapshot_.RemovePod(uid);
  DraPodChanged(nullptr, uid);
}

// ---------------------------------------------------------------------------
// Filter

void Engine::Filter(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
                    std::int64_t now_ms, std::vector<Command>& out) {
  ++counters_.filters;
  if (!Ready(now_ms)) {
    ++counters_.filters_refused;
    out.push_back(
        FilterReply{request, {}, {}, "not ready: not the leader, or no registration pass yet"});
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
      out.push_back(FilterReply{held.request, {}, {}, "not ready: leadership lost while held"});
      continue;
    }
    if (!impl_->pods.contains(held.pod.uid)) {
      out.push_back(FilterReply{held.request, {}, {}, "the pod was deleted while held"});
      continue;
    }
    Place(held.request, held.pod, held.nodes, now_ms, out);
  }
}

void Engine::Place(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
                   std::int64_t now_ms, std::vector<Command>& out) {
  // A node other binds hold or are about to lock is a last resort, the
  // busier the later: placed there, the pod's bind waits for the lock.
  std::optional<Result<FilterResult>> around = PlaceAroundBusyNodes(pod, nodes, now_ms);
  if (around) ++counters_.filters_around_locks;
  Result<FilterResult> result =
      around ? std::move(*around)
             : devshare::Filter(snapshot_, pod, nodes, Seconds(now_ms), options_.filter);
  if (!result.ok()) {
    out.push_back(FilterReply{request, {}, {}, std::string(result.status().message())});
    return;
  }
  if (!result->has_requests) {  // every node passes; fgd still names the one it prefers
    out.push_back(FilterReply{
        request, result->node ? std::vector<std::string>{*result->node} : nodes, {}, ""});
    return;
  }
  if (!result->node) {
    ++counters_.filters_unschedulable;
    out.push_back(FilterReply{request, {}, std::move(result->failed), ""});
    return;
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
                    fmt::format("internal: the placement does not decode: {}", added.message())});
    return;
  }
  impl_->Reserve(pod.uid, result->annotations, *result->node);
  if (options_.pod_writes == PodWrites::kWithBinding) {  // written by the Binding
    ++counters_.filters_placed;
    out.push_back(FilterReply{request, {*result->node}, {}, ""});
    return;
  }
  const std::uint64_t id = NextId();
  impl_->pending.emplace(
      id, Impl::FilterFlow{request, pod.uid, FilterReply{request, {*result->node}, {}, ""}});
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

// ---------------------------------------------------------------------------
// Bind

void Engine::Bind(std::uint64_t request, const std::string& pod_namespace, const std::string& name,
                  const std::string& uid, const std::string& node, std::int64_t now_ms,
                  std::vector<Command>& out) {
  ++counters_.binds;
  ++impl_->binds_in_flight;
  BindFlow flow{BindFlow::Step::kLock,
                request,
                pod_namespace,
                name,
                uid,
                node,
                {},
                std::nullopt,
                0,
                now_ms + options_.lock_retry_timeout_ms};
  if (!Ready(now_ms)) return FailBind(flow, std::string(kNotLeading), out);
  if (!impl_->pods.contains(uid)) {
    return FailBind(flow, fmt::format("pod {}/{} not found", pod_namespace, name), out);
  }
  if (!impl_->nodes.contains(node)) {
    return FailBind(flow, fmt::format("node {} not found", node), out);
  }
  auto reservation = impl_->reservations.find(uid);
  if (reservation == impl_->reservations.end()) {
    return FailBind(
        flow, fmt::format("pod {}/{} has no reservation: filter it first", pod_namespace, name),
        out);
  }
  flow.placement = reservation->second.annotations;
  if (options_.bind_mode == BindMode::kLockFree)
    return BindWithPlacement(std::move(flow), now_ms, out);
  TryLock(std::move(flow), now_ms, out);
}

void Engine::ReleaseLock(const std::string& node, const std::string& lock, int attempt,
                         std::vector<Command>& out) {
  const std::uint64_t id = NextId();
  impl_->pending.emplace(id, Impl::Release{node, lock, attempt});
  ++counters_.node_patches;
  out.push_back(PatchNode{id,
                          node,
                          {AnnotationWrite{std::string(keys::kNodeLock), std::nullopt}},
                          {AnnotationWrite{std::string(keys::kNodeLock), lock}},
                          {},
                          false});
}

void Engine::FailBind(const BindFlow& flow, std::string error, std::vector<Command>& out) {
  ++counters_.binds_failed;
  if (BindFailed().release_reservation) {  // W8: the reservation goes with the failed bind
    snapshot_.RemovePod(flow.uid);
    impl_->Unreserve(flow.uid);
  }
  ReplyBind(flow, std::move(error), out);
}

void Engine::ReplyBind(const BindFlow& flow, std::string error, std::vector<Command>& out) {
  --impl_->binds_in_flight;
  out.push_back(BindReply{flow.request, std::move(error)});
}

// The node locked: HAMi's bind-phase PATCH, or straight to the Binding.
void Engine::Locked(BindFlow flow, std::int64_t now_ms, std::vector<Command>& out) {
  if (!Ready(now_ms)) return FailBind(flow, std::string(kNotLeading), out);
  if (options_.pod_writes == PodWrites::kWithBinding)
    return BindWithPlacement(std::move(flow), now_ms, out);
  const std::uint64_t id = NextId();
  flow.step = BindFlow::Step::kPhase;
  ++counters_.pod_patches;
  out.push_back(PatchPod{id, flow.pod_namespace, flow.name, BindStartPatch(Seconds(now_ms))});
  impl_->pending.emplace(id, std::move(flow));
}

// A Binding carrying the placement and bind-phase allocating with its time.
void Engine::BindWithPlacement(BindFlow flow, std::int64_t now_ms, std::vector<Command>& out) {
  if (!Ready(now_ms)) return FailBind(flow, std::string(kNotLeading), out);
  const std::uint64_t id = NextId();
  flow.step = BindFlow::Step::kBinding;
  ++counters_.bindings;
  out.push_back(PostBinding{id, flow.pod_namespace, flow.name, flow.uid, flow.node,
                            WithBindStart(flow.placement, now_ms)});
  impl_->pending.emplace(id, std::move(flow));
}

// One attempt at the node lock, decided on the watch cache; the write
// carries the node's resourceVersion, so a stale view loses with a 409.
void Engine::TryLock(BindFlow flow, std::int64_t now_ms, std::vector<Command>& out) {
  if (!Ready(now_ms)) return FailBind(flow, std::string(kNotLeading), out);
  ++flow.attempt;
  auto node_memory = impl_->nodes.find(flow.node);
  if (node_memory == impl_->nodes.end())
    return FailBind(flow, fmt::format("node {} not found", flow.node), out);
  if (!impl_->pods.contains(flow.uid)) {
    return FailBind(flow, fmt::format("pod {}/{} not found", flow.pod_namespace, flow.name), out);
  }
  // The holder is looked up in the watch cache (absent = gone).
  LockHolder holder;
  const std::optional<std::string> current =
      Annotation(node_memory->second.object, keys::kNodeLock);
  if (current) {
    Result<NodeLock> lock = DecodeNodeLock(*current);
    holder.state = LockHolder::State::kGone;
    const Pod* other = lock.ok() && lock->has_owner
                           ? impl_->FindPod(lock->pod_namespace, lock->pod_name)
                           : nullptr;
    if (other != nullptr) {
      holder.state = LockHolder::State::kPresent;
      if (const std::string* phase = other->annotations.Find(keys::kBindPhase)) {
        Result<BindPhase> decoded = DecodeBindPhase(*phase);
        holder.bind_phase = decoded.ok() ? *decoded : BindPhase::kNone;
      }
      if (const std::string* t = other->annotations.Find(keys::kBindTime))
        holder.bind_time = QuantityAsInt64(*t);
    }
  }
  LockDecision decision =
      DecideLock(current, PodRef{flow.pod_namespace, flow.name}, holder,
                 node_memory->second.lock_sighting, Seconds(now_ms), options_.lock);
  if (decision.action == LockAction::kHeld || decision.action == LockAction::kCheckHolder) {
    return LockBlocked(std::move(flow), std::move(decision.reason), now_ms, out);
  }
  flow.lock = decision.write ? decision.write->value : current;
  if (!decision.write) return Locked(std::move(flow), now_ms, out);  // re-entrant
  if (options_.lock_retry == LockRetry::kRelease && impl_->locking.contains(flow.node)) {
    flow.lock.reset();
    return LockBlocked(std::move(flow), "another bind is writing the node lock", now_ms, out);
  }
  impl_->locking.insert(flow.node);
  const std::uint64_t id = NextId();
  flow.step = BindFlow::Step::kLock;
  ++counters_.node_patches;
  out.push_back(PatchNode{id,
                          flow.node,
                          {*decision.write},
                          {AnnotationWrite{std::string(keys::kNodeLock), current}},
                          node_memory->second.object.resource_version,
                          false});
  impl_->pending.emplace(id, std::move(flow));
}

// The lock is held (or its write lost a race): retry per the options, or fail.
void Engine::LockBlocked(BindFlow flow, std::string reason, std::int64_t now_ms,
                         std::vector<Command>& out) {
  ++counters_.lock_contention;
  std::int64_t retry_at = 0;
  switch (options_.lock_retry) {
    case LockRetry::kOnce:
      return FailBind(flow, std::move(reason), out);
    case LockRetry::kFixed:
      retry_at = now_ms + 100;
      break;
    case LockRetry::kBackoff: {
      const double u = std::uniform_real_distribution<double>(0, 1)(impl_->rng);
      retry_at =
          now_ms + static_cast<std::int64_t>(*BackoffDelayMs(std::min(flow.attempt - 1, 3), u));
      break;
    }
    case LockRetry::kRelease:  // woken by the release; at the deadline, one last look
      retry_at = now_ms < flow.deadline_ms ? flow.deadline_ms : now_ms + 1;
      break;
  }
  if (retry_at > flow.deadline_ms) {
    return FailBind(flow,
                    fmt::format("timed out after {}s waiting for node {} to be unlocked: {}",
                                options_.lock_retry_timeout_ms / 1000, flow.node, reason),
                    out);
  }
  ++counters_.lock_retries;
  impl_->Park(Impl::LockWait{retry_at, std::move(flow)});
}

void Engine::WakeLockWaiters(const std::string& node, std::int64_t now_ms,
                             std::vector<Command>& out) {
  // Expired or dangling locks are taken over at the waiters' deadline.
  if (impl_->locked.contains(node) || impl_->locking.contains(node) ||
      !impl_->waits_on.contains(node))
    return;
  std::vector<Impl::LockWait> queue =
      impl_->Unpark([&](const Impl::LockWait& w) { return w.flow.node == node; });
  std::size_t next = 0;
  while (next < queue.size()) {
    const std::size_t parked = impl_->lock_waits.size();
    TryLock(std::move(queue[next++].flow), now_ms, out);
    // Stop once a lock write is in flight or the lock is seen held again;
    // a bind that failed (its pod gone) hands over to the next.
    if (impl_->locking.contains(node) || impl_->lock_waits.size() > parked) break;
  }
  for (; next < queue.size(); ++next) impl_->Park(std::move(queue[next]));
}

void Engine::ApiResult(std::uint64_t id, bool succeeded, std::int64_t now_ms,
                       std::vector<Command>& out) {
  if (DraResult(id, succeeded, now_ms, out)) return;
  auto it = impl_->pending.find(id);
  if (it == impl_->pending.end()) return;
  auto flow = std::move(it->second);
  impl_->pending.erase(it);
  if (auto* f = std::get_if<Impl::FilterFlow>(&flow)) {
    if (succeeded) {
      ++counters_.filters_placed;
      out.push_back(std::move(f->reply));
    } else {
      snapshot_.RemovePod(f->uid);
      impl_->Unreserve(f->uid);
      out.push_back(FilterReply{f->request, {}, {}, "patching the pod failed"});
    }
    return;
  }
  if (auto* r = std::get_if<Impl::Release>(&flow)) {
    // A lock release that failed (an API error) is written again with
    // backoff, as long as this engine leads and the lock is still the one it
    // released; else the lock would block the node until it expires.
    if (!succeeded && !r->lock.empty() && r->attempt < kReleaseAttempts) {
      impl_->release_retries.push_back(
          Impl::ReleaseRetry{now_ms + (kReleaseBackoffMs << (r->attempt - 1)),
                             Impl::Release{r->node, r->lock, r->attempt + 1}});
    }
    return;
  }
  auto* b = std::get_if<BindFlow>(&flow);
  if (b == nullptr) return;  // a registration write
  if (b->step == BindFlow::Step::kLock) impl_->locking.erase(b->node);
  if (!succeeded && b->step == BindFlow::Step::kLock) {
    b->lock.reset();  // the lock write lost (409): contention
    return LockBlocked(std::move(*b), "the node lock write conflicted (409)", now_ms, out);
  }
  if (!succeeded) {
    // W8: the core says what a failed bind releases; the lock only if it is ours.
    const BindOutcome outcome = BindFailed();
    if (outcome.release_lock && b->lock &&
        DecideRelease(b->lock, PodRef{b->pod_namespace, b->name}, false)) {
      ReleaseLock(b->node, *b->lock, 1, out);
    }
    const std::uint64_t phase = NextId();
    impl_->pending.emplace(phase, Impl::Release{});
    ++counters_.pod_patches;
    out.push_back(PatchPod{phase, b->pod_namespace, b->name, outcome.pod_patch});
    return FailBind(*b, "binding failed", out);
  }
  switch (b->step) {
    case BindFlow::Step::kLock: {
      // The cache assumes the lock written until the watch brings the node
      // back: meanwhile Filter places around it and other binds wait for it.
      auto node = impl_->nodes.find(b->node);
      if (node != impl_->nodes.end() && b->lock) {
        node->second.object.annotations.Set(std::string(keys::kNodeLock), *b->lock);
        impl_->locked.insert(b->node);
      }
      return Locked(std::move(*b), now_ms, out);
    }
    case BindFlow::Step::kPhase: {
      if (!Ready(now_ms)) return FailBind(*b, std::string(kNotLeading), out);
      b->step = BindFlow::Step::kBinding;
      const std::uint64_t next = NextId();
      ++counters_.bindings;
      out.push_back(PostBinding{next, b->pod_namespace, b->name, b->uid, b->node, {}});
      impl_->pending.emplace(next, std::move(*b));
      return;
    }
    case BindFlow::Step::kBinding:
      impl_->Unreserve(b->uid);
      ReplyBind(*b, "", out);
      return;
  }
}

}  // namespace devshare::engine
