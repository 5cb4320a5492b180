// devshare/lease.hpp — leadership from a coordination.k8s.io/v1 Lease, as
// pure state machines (spec/hami-behaviour.md §8, kubernetes-wire.md §3).
//
// Two ways to lead:
//   * follow a Lease another process holds (HAMi's mode: the kube-scheduler
//     in the same pod holds it, and the extender is leader while the holder
//     is its own host), with HAMi's bugs fixed: the holder must be exactly
//     `<hostname>_...` or `<hostname>` (W9: `host-1` no longer matches
//     `host-10_...`), and Filter is allowed only once a registration pass
//     has completed since leadership was gained (no Filter answered, or
//     hung, on a follower; readiness tells the truth);
//   * run an election with client-go's algorithm and defaults
//     (15 s lease, 10 s renew deadline, 2 s retry period).
//
// Times: every `now_ms` is milliseconds on a clock that never steps back
// (a monotonic clock). Like client-go, validity is the local observation time
// of the last change plus leaseDurationSeconds; the record's own times are
// never compared with the local clock, so clock offsets between hosts do not
// matter.
//
// Thread-safety: value types and pure functions.
#ifndef DEVSHARE_LEASE_HPP_
#define DEVSHARE_LEASE_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "devshare/export.hpp"
#include "devshare/lease_object.hpp"  // LeaseRecord, its codec and MicroTime
#include "devshare/status.hpp"

namespace devshare {

// True when `holder` names this host: exactly `hostname`, or `hostname`
// followed by '_' (kube-scheduler's `<hostname>_<uuid>`).
DEVSHARE_EXPORT bool HolderIsHost(std::string_view holder, std::string_view hostname);

enum class LeaderEvent { kNone, kStartedLeading, kStoppedLeading };

// ---------------------------------------------------------------------------
// Following a Lease (HAMi mode).

struct LeaseFollower {
  std::string hostname;                 // this process's host (pod) name
  std::optional<LeaseRecord> observed;  // the last record seen, nullopt when deleted
  std::int64_t observed_at_ms = 0;      // when it last changed
  bool leading = false;
  bool registered = false;  // a registration pass completed while leading
};

// A Lease event: the record now (nullopt when it was deleted or never
// existed). The observation time moves only when the record changed.
DEVSHARE_EXPORT LeaderEvent ObserveLease(LeaseFollower& follower,
                                         const std::optional<LeaseRecord>& lease,
                                         std::int64_t now_ms);
// Time passing without events: leadership lapses when the lease is not
// renewed within its duration.
DEVSHARE_EXPORT LeaderEvent FollowerTick(LeaseFollower& follower, std::int64_t now_ms);
// Leader now: holder is this host and observation + duration is in the future.
DEVSHARE_EXPORT bool IsLeader(const LeaseFollower& follower, std::int64_t now_ms);
// A registration pass finished; counts only while leading.
DEVSHARE_EXPORT void RegistrationPassDone(LeaseFollower& follower, std::int64_t now_ms);
// Filter may be answered (and /readyz is 200) only when leading and a
// registration pass has completed since leadership was gained.
DEVSHARE_EXPORT bool FilterAllowed(const LeaseFollower& follower, std::int64_t now_ms);

// ---------------------------------------------------------------------------
// Running an election (client-go's tryAcquireOrRenew).

struct ElectionConfig {
  std::string identity;                    // `<hostname>_<uuid>`
  std::int64_t lease_duration_ms = 15000;  // Default: 15 s
  std::int64_t renew_deadline_ms = 10000;  // Default: 10 s
  std::int64_t retry_period_ms = 2000;     // Default: 2 s
};

// Checks LeaseDuration > RenewDeadline > 1.2 x RetryPeriod > 0 and a
// non-empty identity. Errors: kInvalidConfig.
DEVSHARE_EXPORT Status ValidateElectionConfig(const ElectionConfig& config);

struct Elector {
  std::optional<LeaseRecord> observed;
  std::int64_t observed_at_ms = 0;
  bool leading = false;
  std::int64_t renewed_at_ms = 0;  // the last successful acquire or renew
};

enum class ElectionAction {
  kNone,      // someone else holds a valid lease
  kCreate,    // no Lease exists: POST `lease`
  kAcquire,   // take it over: PUT `lease` (acquireTime now, transitions + 1)
  kRenew,     // ours: PUT `lease` (renewTime now)
  kStepDown,  // renewals failed past the deadline, or another holder took it
};

struct ElectionDecision {
  ElectionAction action = ElectionAction::kNone;
  LeaseRecord lease;  // what to write for kCreate, kAcquire, kRenew
};

// One try, given the Lease just read (nullopt: 404). `name` and `namespace`
// name the Lease to create.
DEVSHARE_EXPORT ElectionDecision TryAcquireOrRenew(
    Elector& elector, const std::optional<LeaseRecord>& current, const ElectionConfig& config,
    std::string_view name, std::string_view lease_namespace, std::int64_t now_ms);
// The Lease could not be read (the API server answered neither the Lease
// nor 404, or did not answer): a leader whose last renewal is older than
// the renew deadline steps down, as client-go's renew loop gives up at its
// deadline whatever made the tries fail. Returns kStoppedLeading then.
DEVSHARE_EXPORT LeaderEvent ElectionReadFailed(Elector& elector, const ElectionConfig& config,
                                               std::int64_t now_ms);
// The write of a kCreate/kAcquire/kRenew succeeded (true) or failed, for
// example with 409 (false). Returns kStartedLeading when leadership began.
DEVSHARE_EXPORT LeaderEvent ElectionWriteResult(Elector& elector, const ElectionDecision& decision,
                                                bool succeeded, std::int64_t now_ms);
// The Lease to PUT when giving up leadership (ReleaseOnCancel): no holder,
// duration 1 s, times now, transitions kept.
DEVSHARE_EXPORT LeaseRecord ReleaseLease(const LeaseRecord& current, std::int64_t now_us);

}  // namespace devshare

#endif  // DEVSHARE_LEASE_HPP_
