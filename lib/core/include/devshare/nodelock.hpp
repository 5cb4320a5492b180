// devshare/nodelock.hpp — the node lock (`hami.io/mutex.lock`), retry
// backoff and the bind phase, as pure decisions (spec/hami-behaviour.md §6).
//
// The lock tells a node's device plugin which pending pod it is serving. The
// decisions here say what to write; an adapter performs the write with the
// node's resourceVersion as precondition (a 409 means someone else won).
//
// Fixes:
//   W6     a value that does not parse no longer blocks the node forever: it
//          expires like any other lock, counted from when it was first seen.
//   #1433  ownership compares the whole `<namespace>,<name>`.
//   W7     a pod whose devices are only in init containers locks too.
//   #3096  an expired lock is not taken from a holder whose bind-phase is
//          still `allocating` and whose bind is younger than the timeout plus
//          a grace period (default: one more timeout — 10 min from bind in
//          all, twice what a healthy kubelet needs to call Allocate after
//          image pulls start; beyond it the kubelet is taken as stuck).
//   W8     a failed bind releases its reservation and lock.
//
// Thread-safety: pure functions on value types.
#ifndef DEVSHARE_NODELOCK_HPP_
#define DEVSHARE_NODELOCK_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/enum_names.hpp"
#include "devshare/export.hpp"
#include "devshare/handshake.hpp"
#include "devshare/objects.hpp"
#include "devshare/request.hpp"
#include "devshare/status.hpp"

namespace devshare {

struct PodRef {
  std::string pod_namespace;
  std::string name;
  friend bool operator==(const PodRef&, const PodRef&) = default;
};

enum class BindPhase { kNone, kAllocating, kSuccess, kFailed };

// The values of hami.io/bind-phase; kNone is its absence.
inline constexpr auto kBindPhaseNames =
    MakeEnumNames<BindPhase>({{"allocating", BindPhase::kAllocating},
                              {"success", BindPhase::kSuccess},
                              {"failed", BindPhase::kFailed}});

// One of kBindPhaseNames; anything else is kMalformed.
DEVSHARE_EXPORT Result<BindPhase> DecodeBindPhase(std::string_view value);
// The phase's name in kBindPhaseNames; "" for kNone.
DEVSHARE_EXPORT std::string_view BindPhaseName(BindPhase phase);

struct NodeLockOptions {
  std::int64_t timeout_seconds = 300;  // Default: 5 min (--node-lock-timeout)
  std::int64_t grace_seconds = 300;    // Default: 5 min more for an allocating holder
};

// What is known of the pod holding the lock.
struct LockHolder {
  enum class State {
    kUnknown,  // not looked up: the decision may ask for it
    kGone,     // the API server answered NotFound
    kPresent,
  };
  State state = State::kUnknown;
  BindPhase bind_phase = BindPhase::kNone;
  std::optional<std::int64_t> bind_time;  // hami.io/bind-time, Unix seconds
};

// When the current lock value was first seen (to age values without a
// readable time, W6). Keep one per node; reset when the value changes.
struct LockSighting {
  std::string value;
  std::int64_t first_seen = 0;
};

enum class LockAction {
  kSet,          // the node is free: write `write`
  kReentrant,    // the pod already holds it: nothing to write
  kTakeOver,     // expired or dangling: replace it with `write`
  kCheckHolder,  // look the holder pod up, then decide again
  kHeld,         // contention: retry later (see BackoffDelayMs)
};

struct LockDecision {
  LockAction action = LockAction::kHeld;
  std::optional<AnnotationWrite> write;
  std::string reason;  // why, for events and errors
};

// Whether `pod` may take the lock of a node whose lock annotation is
// `current`, at `now` (Unix seconds). `sighting` is updated.
DEVSHARE_EXPORT LockDecision DecideLock(const std::optional<std::string>& current,
                                        const PodRef& pod, const LockHolder& holder,
                                        LockSighting& sighting, std::int64_t now,
                                        const NodeLockOptions& options = {});

// Whether `pod` releases the lock: the delete to write, or none when there
// is no lock or it belongs to another pod (unless `force`). A legacy lock
// without an owner is released by anyone, as in HAMi.
DEVSHARE_EXPORT std::optional<AnnotationWrite> DecideRelease(
    const std::optional<std::string>& current, const PodRef& pod, bool force);

// True when the pod asks `vendor` for devices in any container, init
// containers included (W7).
DEVSHARE_EXPORT bool PodNeedsLock(const std::vector<ContainerRequests>& requests,
                                  std::string_view vendor);

// Retry delay before attempt `attempt` + 1 (0-based) with client-go's
// DefaultStrategy as HAMi tunes it: 100 ms x 2^attempt x (1 + 0.5 u), where
// `u` is a uniform sample in [0, 1) the caller draws from its seeded
// generator. Returns nullopt after the 5th attempt (4 sleeps).
DEVSHARE_EXPORT std::optional<double> BackoffDelayMs(int attempt, double u);

// Bind (spec §6.1, W8 fixed).
// The pod patch Bind writes before posting the Binding.
DEVSHARE_EXPORT StringMap BindStartPatch(std::int64_t now);

// What follows a bind attempt or the device plugin's outcome.
struct BindOutcome {
  StringMap pod_patch;               // bind-phase (and nothing else)
  bool release_reservation = false;  // drop the pod's devices from the snapshot
  bool release_lock = false;
};
// The bind failed before the kubelet saw the pod (lock, patch or Binding
// error): phase failed, reservation and lock released (W8).
DEVSHARE_EXPORT BindOutcome BindFailed();
// The device plugin finished Allocate: success keeps the reservation (the pod
// runs on it) and releases the lock; failure releases both.
DEVSHARE_EXPORT BindOutcome AllocateFinished(bool success);

}  // namespace devshare

#endif  // DEVSHARE_NODELOCK_HPP_
