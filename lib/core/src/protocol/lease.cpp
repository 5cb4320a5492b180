#include "devshare/lease.hpp"

#include <fmt/format.h>

namespace devshare {

bool HolderIsHost(std::string_view holder, std::string_view hostname) {
  if (hostname.empty() || !holder.starts_with(hostname)) return false;
  return holder.size() == hostname.size() || holder[hostname.size()] == '_';
}

// ---------------------------------------------------------------------------
// Following

namespace {

LeaderEvent Transition(LeaseFollower& f, std::int64_t now_ms) {
  const bool leader = IsLeader(f, now_ms);
  if (leader && !f.leading) {
    f.leading = true;
    f.registered = false;  // a registration pass must complete first
    return LeaderEvent::kStartedLeading;
  }
  if (!leader && f.leading) {
    f.leading = false;
    f.registered = false;
    return LeaderEvent::kStoppedLeading;
  }
  return LeaderEvent::kNone;
}

}  // namespace

LeaderEvent ObserveLease(LeaseFollower& follower, const std::optional<LeaseRecord>& lease,
                         std::int64_t now_ms) {
  if (lease != follower.observed) {
    follower.observed = lease;
    follower.observed_at_ms = now_ms;
  }
  return Transition(follower, now_ms);
}

LeaderEvent FollowerTick(LeaseFollower& follower, std::int64_t now_ms) {
  return Transition(follower, now_ms);
}

bool IsLeader(const LeaseFollower& f, std::int64_t now_ms) {
  if (!f.observed || !f.observed->holder || !f.observed->duration_seconds) return false;
  if (!HolderIsHost(*f.observed->holder, f.hostname)) return false;
  return f.observed_at_ms + std::int64_t{*f.observed->duration_seconds} * 1000 > now_ms;
}

void RegistrationPassDone(LeaseFollower& follower, std::int64_t now_ms) {
  if (follower.leading && IsLeader(follower, now_ms)) follower.registered = true;
}

bool FilterAllowed(const LeaseFollower& follower, std::int64_t now_ms) {
  return follower.leading && follower.registered && IsLeader(follower, now_ms);
}

// ---------------------------------------------------------------------------
// Election

Status ValidateElectionConfig(const ElectionConfig& c) {
  if (c.identity.empty()) return Status::InvalidConfig("leader election: identity is empty");
  if (c.retry_period_ms <= 0 || c.renew_deadline_ms * 10 <= c.retry_period_ms * 12 ||
      c.lease_duration_ms <= c.renew_deadline_ms) {
    return Status::InvalidConfig(fmt::format(
        "leader election: want leaseDuration ({} ms) > renewDeadline ({} ms) > 1.2 x retryPeriod "
        "({} ms) > 0",
        c.lease_duration_ms, c.renew_deadline_ms, c.retry_period_ms));
  }
  return Status();
}

LeaderEvent ElectionReadFailed(Elector& elector, const ElectionConfig& config,
                               std::int64_t now_ms) {
  if (!elector.leading || now_ms - elector.renewed_at_ms <= config.renew_deadline_ms)
    return LeaderEvent::kNone;
  elector.leading = false;
  return LeaderEvent::kStoppedLeading;
}

ElectionDecision TryAcquireOrRenew(Elector& elector, const std::optional<LeaseRecord>& current,
                                   const ElectionConfig& config, std::string_view name,
                                   std::string_view lease_namespace, std::int64_t now_ms) {
  const std::int64_t now_us = now_ms * 1000;
  const auto duration = static_cast<std::int32_t>(config.lease_duration_ms / 1000);
  ElectionDecision d;
  if (!current) {
    d.action = ElectionAction::kCreate;
    d.lease.name = std::string(name);
    d.lease.lease_namespace = std::string(lease_namespace);
    d.lease.holder = config.identity;
    d.lease.duration_seconds = duration;
    d.lease.acquire_time_us = d.lease.renew_time_us = now_us;
    return d;
  }
  if (*current != elector.observed) {
    elector.observed = current;
    elector.observed_at_ms = now_ms;
  }
  const bool mine = current->holder && *current->holder == config.identity;
  const std::int64_t valid_for = std::int64_t{current->duration_seconds.value_or(0)} * 1000;
  const bool held_by_other = current->holder && !current->holder->empty() && !mine &&
                             elector.observed_at_ms + valid_for > now_ms;
  if (held_by_other ||
      (elector.leading && now_ms - elector.renewed_at_ms > config.renew_deadline_ms)) {
    if (elector.leading) {
      elector.leading = false;
      d.action = ElectionAction::kStepDown;
    }
    return d;
  }
  d.lease = *current;
  d.lease.holder = config.identity;
  d.lease.duration_seconds = duration;
  d.lease.renew_time_us = now_us;
  if (mine) {
    d.action = ElectionAction::kRenew;
  } else {
    d.action = ElectionAction::kAcquire;
    d.lease.acquire_time_us = now_us;
    d.lease.transitions = current->transitions + 1;
  }
  return d;
}

LeaderEvent ElectionWriteResult(Elector& elector, const ElectionDecision& decision, bool succeeded,
                                std::int64_t now_ms) {
  const bool write = decision.action == ElectionAction::kCreate ||
                     decision.action == ElectionAction::kAcquire ||
                     decision.action == ElectionAction::kRenew;
  if (!write || !succeeded) return LeaderEvent::kNone;
  elector.observed = decision.lease;
  elector.observed_at_ms = now_ms;
  elector.renewed_at_ms = now_ms;
  if (elector.leading) return LeaderEvent::kNone;
  elector.leading = true;
  return LeaderEvent::kStartedLeading;
}

LeaseRecord ReleaseLease(const LeaseRecord& current, std::int64_t now_us) {
  LeaseRecord released = current;
  released.holder = "";
  released.duration_seconds = 1;
  released.acquire_time_us = released.renew_time_us = now_us;
  return released;
}

}  // namespace devshare
