#include "devshare/nodelock.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/text.hpp"
#include "devshare/annotations.hpp"

namespace devshare {

Result<BindPhase> DecodeBindPhase(std::string_view value) {
  if (std::optional<BindPhase> phase = kBindPhaseNames.Find(value)) return *phase;
  return Status::Malformed(fmt::format("bind phase {} is not one of {}", internal::Quote(value),
                                       kBindPhaseNames.Names()));
}

std::string_view BindPhaseName(BindPhase phase) { return kBindPhaseNames.Name(phase); }

namespace {

AnnotationWrite NewLock(const PodRef& pod, std::int64_t now) {
  return AnnotationWrite{std::string(keys::kNodeLock),
                         EncodeNodeLock(NodeLock{now, 0, true, pod.pod_namespace, pod.name})};
}

}  // namespace

LockDecision DecideLock(const std::optional<std::string>& current, const PodRef& pod,
                        const LockHolder& holder, LockSighting& sighting, std::int64_t now,
                        const NodeLockOptions& options) {
  if (!current) return LockDecision{LockAction::kSet, NewLock(pod, now), "node is free"};
  if (sighting.value != *current) sighting = LockSighting{*current, now};

  Result<NodeLock> lock = DecodeNodeLock(*current);
  if (!lock.ok()) {
    // W6: an unreadable lock ages from when it was first seen.
    if (now - sighting.first_seen > options.timeout_seconds) {
      return LockDecision{LockAction::kTakeOver, NewLock(pod, now),
                          fmt::format("unreadable lock {} expired", internal::Quote(*current))};
    }
    return LockDecision{LockAction::kHeld, std::nullopt,
                        fmt::format("node has an unreadable lock {}: node lock contention",
                                    internal::Quote(*current))};
  }
  const bool expired = now - lock->unix_seconds > options.timeout_seconds;
  if (lock->has_owner && lock->pod_namespace == pod.pod_namespace && lock->pod_name == pod.name) {
    // As HAMi: a pod's own lock is renewed once it has expired, so that no
    // other pod takes it over while this one is still binding.
    if (expired)
      return LockDecision{LockAction::kTakeOver, NewLock(pod, now), "own lock expired: renewed"};
    return LockDecision{LockAction::kReentrant, std::nullopt, "held by this pod"};
  }
  const bool has_owner = lock->has_owner && !lock->pod_namespace.empty() && !lock->pod_name.empty();
  if (has_owner && holder.state == LockHolder::State::kUnknown) {
    return LockDecision{LockAction::kCheckHolder, std::nullopt,
                        fmt::format("look up holder {}/{}", lock->pod_namespace, lock->pod_name)};
  }
  if (has_owner && holder.state == LockHolder::State::kGone) {
    return LockDecision{LockAction::kTakeOver, NewLock(pod, now),
                        fmt::format("holder {}/{} is gone", lock->pod_namespace, lock->pod_name)};
  }
  if (expired) {
    // #3096: a holder still waiting for Allocate keeps the lock a while.
    const bool allocating =
        holder.state == LockHolder::State::kPresent &&
        holder.bind_phase == BindPhase::kAllocating && holder.bind_time &&
        now - *holder.bind_time <= options.timeout_seconds + options.grace_seconds;
    if (!allocating) {
      return LockDecision{LockAction::kTakeOver, NewLock(pod, now), "lock expired"};
    }
    return LockDecision{LockAction::kHeld, std::nullopt,
                        fmt::format("holder {}/{} is still allocating: node lock contention",
                                    lock->pod_namespace, lock->pod_name)};
  }
  return LockDecision{LockAction::kHeld, std::nullopt,
                      fmt::format("node has been locked within {}s: node lock contention",
                                  options.timeout_seconds)};
}

std::optional<AnnotationWrite> DecideRelease(const std::optional<std::string>& current,
                                             const PodRef& pod, bool force) {
  if (!current) return std::nullopt;
  if (!force && current->find(',') != std::string::npos) {
    // An owner form must name this pod exactly; a value without a comma
    // (legacy, or unreadable) has no owner and anyone may release it.
    Result<NodeLock> lock = DecodeNodeLock(*current);
    if (!lock.ok() || lock->pod_namespace != pod.pod_namespace || lock->pod_name != pod.name) {
      return std::nullopt;
    }
  }
  return AnnotationWrite{std::string(keys::kNodeLock), std::nullopt};
}

bool PodNeedsLock(const std::vector<ContainerRequests>& requests, std::string_view vendor) {
  return std::any_of(requests.begin(), requests.end(), [&](const ContainerRequests& c) {
    return std::any_of(c.begin(), c.end(),
                       [&](const ContainerRequest& r) { return r.vendor == vendor; });
  });
}

std::optional<double> BackoffDelayMs(int attempt, double u) {
  constexpr int kSteps = 5;
  if (attempt < 0 || attempt >= kSteps - 1) return std::nullopt;
  return 100.0 * std::ldexp(1.0, attempt) * (1.0 + 0.5 * std::clamp(u, 0.0, 1.0));
}

StringMap BindStartPatch(std::int64_t now) {
  StringMap patch;
  patch.Set(keys::kBindPhase, BindPhaseName(BindPhase::kAllocating));
  patch.Set(keys::kBindTime, std::to_string(now));
  return patch;
}

BindOutcome BindFailed() {
  BindOutcome out;
  out.pod_patch.Set(keys::kBindPhase, BindPhaseName(BindPhase::kFailed));
  out.release_reservation = true;
  out.release_lock = true;
  return out;
}

BindOutcome AllocateFinished(bool success) {
  BindOutcome out;
  out.pod_patch.Set(keys::kBindPhase,
                    BindPhaseName(success ? BindPhase::kSuccess : BindPhase::kFailed));
  out.release_reservation = !success;
  out.release_lock = true;
  return out;
}

}  // namespace devshare
