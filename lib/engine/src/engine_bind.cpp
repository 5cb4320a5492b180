// Bind: the node lock (taken, waited for, released), the bind-phase
// PATCH, the Binding, and the results of their writes (engine.hpp, "Bind").
#include <fmt/format.h>

#include <algorithm>

#include "devshare/annotations.hpp"
#include "devshare/engine/engine.hpp"
#include "engine_impl.hpp"

namespace devshare::engine {

namespace {

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

}  // namespace

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
  impl_->pending.emplace(id, Release{node, lock, attempt});
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

void Engine::ReleaseResult(const Release& release, bool succeeded, std::int64_t now_ms) {
  // A lock release that failed (an API error) is written again with
  // backoff, as long as this engine leads and the lock is still the one it
  // released (Tick checks); else the lock would block the node until it
  // expires. Other plain writes need nothing.
  if (!succeeded && !release.lock.empty() && release.attempt < kReleaseAttempts) {
    impl_->release_retries.push_back(
        Impl::ReleaseRetry{now_ms + (kReleaseBackoffMs << (release.attempt - 1)),
                           Release{release.node, release.lock, release.attempt + 1}});
  }
}

void Engine::BindResult(BindFlow flow, bool succeeded, std::int64_t now_ms,
                        std::vector<Command>& out) {
  if (flow.step == BindFlow::Step::kLock) impl_->locking.erase(flow.node);
  if (!succeeded && flow.step == BindFlow::Step::kLock) {
    flow.lock.reset();  // the lock write lost (409): contention
    return LockBlocked(std::move(flow), "the node lock write conflicted (409)", now_ms, out);
  }
  if (!succeeded) {
    // A failure learnt after the Lease lapsed (a write's outcome read back
    // late): the lock and the pod are left to the leader's audit.
    if (!Ready(now_ms)) return FailBind(flow, std::string(kNotLeading), out);
    // W8: the core says what a failed bind releases; the lock only if it is ours.
    const BindOutcome outcome = BindFailed();
    if (outcome.release_lock && flow.lock &&
        DecideRelease(flow.lock, PodRef{flow.pod_namespace, flow.name}, false)) {
      ReleaseLock(flow.node, *flow.lock, 1, out);
    }
    const std::uint64_t phase = NextId();
    impl_->pending.emplace(phase, Release{});
    ++counters_.pod_patches;
    out.push_back(PatchPod{phase, flow.pod_namespace, flow.name, outcome.pod_patch});
    return FailBind(flow, "binding failed", out);
  }
  switch (flow.step) {
    case BindFlow::Step::kLock: {
      // The cache assumes the lock written until the watch brings the node
      // back: meanwhile Filter places around it and other binds wait for it.
      auto node = impl_->nodes.find(flow.node);
      if (node != impl_->nodes.end() && flow.lock) {
        node->second.object.annotations.Set(std::string(keys::kNodeLock), *flow.lock);
        impl_->locked.insert(flow.node);
      }
      return Locked(std::move(flow), now_ms, out);
    }
    case BindFlow::Step::kPhase: {
      if (!Ready(now_ms)) return FailBind(flow, std::string(kNotLeading), out);
      flow.step = BindFlow::Step::kBinding;
      const std::uint64_t next = NextId();
      ++counters_.bindings;
      out.push_back(PostBinding{next, flow.pod_namespace, flow.name, flow.uid, flow.node, {}});
      impl_->pending.emplace(next, std::move(flow));
      return;
    }
    case BindFlow::Step::kBinding:
      impl_->Unreserve(flow.uid);
      ReplyBind(flow, "", out);
      return;
  }
}

}  // namespace devshare::engine
