#include "devshare/engine/engine.hpp"

#include <fmt/format.h>

#include <map>
#include <unordered_map>

#include "devshare/annotations.hpp"
#include "devshare/request.hpp"

namespace devshare::engine {

namespace {

std::int64_t Seconds(std::int64_t now_ms) { return now_ms / 1000; }

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

struct Engine::Impl {
  struct NodeMemory {
    Node object;
    std::vector<HamiNodeMemory> hami;                     // by vendor
    std::vector<std::optional<std::string>> registered;   // change-only: last annotation, by vendor
    LockSighting lock_sighting;
    bool usable = false;
  };
  struct FilterFlow {
    std::uint64_t request;
    std::string uid;
    FilterReply reply;
  };
  struct BindFlow {
    enum class Step { kLock, kPhase, kBinding } step;
    std::uint64_t request;
    std::string pod_namespace, name, uid, node;
    bool locked = false;
  };
  struct Release {};  // a fire-and-forget write (no follow-up)

  std::map<std::string, NodeMemory, std::less<>> nodes;  // by name: passes run in a fixed order
  std::unordered_map<std::string, Pod> pods;                  // by UID
  std::unordered_map<std::string, StringMap> reservations;    // by UID: the Filter's patch
  std::unordered_map<std::uint64_t, std::variant<FilterFlow, BindFlow, Release>> pending;
  LeaseFollower follower;
  bool registered = false;  // kAlways: a pass has completed
  std::optional<std::int64_t> last_pass_ms;
};

Engine::Engine(EngineOptions options)
    : options_(std::move(options)), snapshot_(options_.config), impl_(std::make_unique<Impl>()) {
  impl_->follower.hostname = options_.hostname;
}

Engine::~Engine() = default;

bool Engine::Ready(std::int64_t now_ms) const {
  if (options_.leadership == Leadership::kFollowLease) return FilterAllowed(impl_->follower, now_ms);
  return impl_->registered;
}

// ---------------------------------------------------------------------------
// Registration

void Engine::NodeObserved(const Node& node, std::int64_t now_ms, std::vector<Command>& out) {
  const std::size_t vendors = options_.config.vendors.size();
  auto [it, added] = impl_->nodes.try_emplace(node.name);
  Impl::NodeMemory& memory = it->second;
  memory.object = node;
  if (added) {
    memory.hami.resize(vendors);
    memory.registered.resize(vendors);
  }
  // A usable node's new object (devices, cordons, pair scores) is applied at
  // once; a new node is registered by the next pass, run now as HAMi does on
  // a node-add event.
  if (memory.usable) {
    snapshot_.AddNode(node);
  } else if (added && (options_.leadership == Leadership::kAlways || impl_->follower.leading)) {
    RegistrationPass(now_ms, out);
  }
}

void Engine::NodeDeleted(const std::string& name) {
  impl_->nodes.erase(name);
  snapshot_.RemoveNode(name);
}

void Engine::RegistrationPass(std::int64_t now_ms, std::vector<Command>& out) {
  const std::int64_t now = Seconds(now_ms);
  ++counters_.registration_passes;
  impl_->last_pass_ms = now_ms;
  for (auto& [name, memory] : impl_->nodes) {
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
                                   options_.zone_offset_seconds);
          break;
        case RegistrationProtocol::kVolcano:
          obs.handshake = Annotation(memory.object, keys::kVolcanoHandshake);
          step = VolcanoSchedulerPass(obs, keys::kVolcanoHandshake, now, options_.zone_offset_seconds);
          break;
        case RegistrationProtocol::kChangeOnly:
          step = ChangeOnlySchedulerPass(obs, memory.registered[v]);
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
      out.push_back(PatchNode{id, name, std::move(writes)});
    }
    if (usable && (refresh || !memory.usable)) {
      snapshot_.AddNode(memory.object);
    } else if (!usable && memory.usable) {
      snapshot_.RemoveNode(name);
    }
    memory.usable = usable;
  }
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
  bool leading = true;
  if (options_.leadership == Leadership::kFollowLease) {
    FollowerTick(impl_->follower, now_ms);
    leading = impl_->follower.leading;
  }
  if (!leading) return;
  if (!impl_->last_pass_ms || now_ms - *impl_->last_pass_ms >= options_.register_period_ms) {
    RegistrationPass(now_ms, out);
  }
}

// ---------------------------------------------------------------------------
// Pods

void Engine::PodObserved(const Pod& pod) {
  impl_->pods[pod.uid] = pod;
  snapshot_.AddPod(pod);  // a pod whose annotations do not decode holds nothing, as in HAMi
}

void Engine::PodDeleted(const std::string& uid) {
  impl_->pods.erase(uid);
  impl_->reservations.erase(uid);
  snapshot_.RemovePod(uid);
}

// ---------------------------------------------------------------------------
// Filter

void Engine::Filter(std::uint64_t request, const Pod& pod, const std::vector<std::string>& nodes,
                    std::int64_t now_ms, std::vector<Command>& out) {
  ++counters_.filters;
  if (!Ready(now_ms)) {
    ++counters_.filters_refused;
    out.push_back(FilterReply{request, {}, {}, "not ready: not the leader, or no registration pass yet"});
    return;
  }
  Result<FilterResult> result = devshare::Filter(snapshot_, pod, nodes, Seconds(now_ms), options_.filter);
  if (!result.ok()) {
    out.push_back(FilterReply{request, {}, {}, std::string(result.status().message())});
    return;
  }
  if (!result->has_requests) {  // every node passes; fgd still names the one it prefers
    out.push_back(FilterReply{request, result->node ? std::vector<std::string>{*result->node} : nodes, {}, ""});
    return;
  }
  if (!result->node) {
    ++counters_.filters_unschedulable;
    out.push_back(FilterReply{request, {}, std::move(result->failed), ""});
    return;
  }
  // Reserve, then PATCH the pod; the reply waits for the PATCH.
  Pod reserved = pod;
  for (const auto& [key, value] : result->annotations.entries()) reserved.annotations.Set(key, value);
  snapshot_.AddPod(reserved);
  impl_->reservations[pod.uid] = result->annotations;
  const std::uint64_t id = NextId();
  impl_->pending.emplace(id, Impl::FilterFlow{request, pod.uid, FilterReply{request, {*result->node}, {}, ""}});
  ++counters_.pod_patches;
  out.push_back(PatchPod{id, pod.pod_namespace, pod.name, result->annotations});
}

// ---------------------------------------------------------------------------
// Bind

void Engine::Bind(std::uint64_t request, const std::string& pod_namespace, const std::string& name,
                  const std::string& uid, const std::string& node, std::int64_t now_ms,
                  std::vector<Command>& out) {
  ++counters_.binds;
  Impl::BindFlow flow{Impl::BindFlow::Step::kLock, request, pod_namespace, name, uid, node, false};
  auto fail = [&](std::string error) {
    ++counters_.binds_failed;
    snapshot_.RemovePod(uid);  // W8: the reservation goes with the failed bind
    impl_->reservations.erase(uid);
    out.push_back(BindReply{request, std::move(error)});
  };
  auto pod = impl_->pods.find(uid);
  auto node_memory = impl_->nodes.find(node);
  auto reservation = impl_->reservations.find(uid);
  if (pod == impl_->pods.end()) return fail(fmt::format("pod {}/{} not found", pod_namespace, name));
  if (node_memory == impl_->nodes.end()) return fail(fmt::format("node {} not found", node));
  if (reservation == impl_->reservations.end()) {
    return fail(fmt::format("pod {}/{} has no reservation: filter it first", pod_namespace, name));
  }
  const std::int64_t now = Seconds(now_ms);
  if (options_.bind_mode == BindMode::kLockFree) {
    StringMap annotations = reservation->second;
    const StringMap start = BindStartPatch(now);
    for (const auto& [k, v] : start.entries()) annotations.Set(k, v);
    flow.step = Impl::BindFlow::Step::kBinding;
    const std::uint64_t id = NextId();
    impl_->pending.emplace(id, flow);
    ++counters_.bindings;
    out.push_back(PostBinding{id, pod_namespace, name, uid, node, std::move(annotations)});
    return;
  }
  // Node lock: the holder is looked up in the watch cache (absent = gone).
  LockHolder holder;
  const std::optional<std::string> current = Annotation(node_memory->second.object, keys::kNodeLock);
  if (current) {
    Result<NodeLock> lock = DecodeNodeLock(*current);
    holder.state = LockHolder::State::kGone;
    if (lock.ok() && lock->has_owner) {
      for (const auto& [other_uid, other] : impl_->pods) {
        if (other.pod_namespace != lock->pod_namespace || other.name != lock->pod_name) continue;
        holder.state = LockHolder::State::kPresent;
        if (const std::string* phase = other.annotations.Find(keys::kBindPhase)) {
          Result<BindPhase> decoded = DecodeBindPhase(*phase);
          holder.bind_phase = decoded.ok() ? *decoded : BindPhase::kNone;
        }
        if (const std::string* t = other.annotations.Find(keys::kBindTime)) holder.bind_time = QuantityAsInt64(*t);
      }
    }
  }
  LockDecision decision = DecideLock(current, PodRef{pod_namespace, name}, holder,
                                     node_memory->second.lock_sighting, now, options_.lock);
  if (decision.action == LockAction::kHeld || decision.action == LockAction::kCheckHolder) {
    ++counters_.lock_contention;
    return fail(decision.reason);
  }
  if (decision.write) {
    flow.step = Impl::BindFlow::Step::kLock;
    flow.locked = true;
    const std::uint64_t id = NextId();
    impl_->pending.emplace(id, flow);
    ++counters_.node_patches;
    out.push_back(PatchNode{id, node, {*decision.write}});
    return;
  }
  // Re-entrant: straight to the bind phase.
  flow.step = Impl::BindFlow::Step::kPhase;
  flow.locked = true;
  const std::uint64_t id = NextId();
  impl_->pending.emplace(id, flow);
  ++counters_.pod_patches;
  out.push_back(PatchPod{id, pod_namespace, name, BindStartPatch(now)});
}

void Engine::ApiResult(std::uint64_t id, bool succeeded, std::int64_t now_ms, std::vector<Command>& out) {
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
      impl_->reservations.erase(f->uid);
      out.push_back(FilterReply{f->request, {}, {}, "patching the pod failed"});
    }
    return;
  }
  auto* b = std::get_if<Impl::BindFlow>(&flow);
  if (b == nullptr) return;  // a release or registration write
  if (!succeeded) {
    // W8: release everything the bind took.
    ++counters_.binds_failed;
    if (b->locked && b->step != Impl::BindFlow::Step::kLock) {
      const std::uint64_t release = NextId();
      impl_->pending.emplace(release, Impl::Release{});
      ++counters_.node_patches;
      out.push_back(PatchNode{release, b->node, {AnnotationWrite{std::string(keys::kNodeLock), std::nullopt}}});
    }
    const std::uint64_t phase = NextId();
    impl_->pending.emplace(phase, Impl::Release{});
    ++counters_.pod_patches;
    out.push_back(PatchPod{phase, b->pod_namespace, b->name, BindFailed().pod_patch});
    snapshot_.RemovePod(b->uid);
    impl_->reservations.erase(b->uid);
    out.push_back(BindReply{b->request, "binding failed"});
    return;
  }
  const std::int64_t now = Seconds(now_ms);
  switch (b->step) {
    case Impl::BindFlow::Step::kLock: {
      b->step = Impl::BindFlow::Step::kPhase;
      const std::uint64_t next = NextId();
      ++counters_.pod_patches;
      out.push_back(PatchPod{next, b->pod_namespace, b->name, BindStartPatch(now)});
      impl_->pending.emplace(next, std::move(*b));
      return;
    }
    case Impl::BindFlow::Step::kPhase: {
      b->step = Impl::BindFlow::Step::kBinding;
      const std::uint64_t next = NextId();
      ++counters_.bindings;
      out.push_back(PostBinding{next, b->pod_namespace, b->name, b->uid, b->node, {}});
      impl_->pending.emplace(next, std::move(*b));
      return;
    }
    case Impl::BindFlow::Step::kBinding:
      impl_->reservations.erase(b->uid);
      out.push_back(BindReply{b->request, ""});
      return;
  }
}

}  // namespace devshare::engine
