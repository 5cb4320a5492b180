// devshare/volcano_lock.hpp — Volcano 1.12's node lock
// (pkg/scheduler/plugins/util/nodelock at v1.12.4) as a pure decision,
// checked against Volcano's own code by tests/oracle/compare_volcano112.py.
//
// Volcano's scheduler takes it in Allocate when its node lock is enabled: the
// node annotation `hamivgpu` holding the RFC 3339 time it was taken, in the
// scheduler's zone, without an owner. A lock older than 5 minutes is replaced
// (Volcano deletes it and sets it again: two updates); a younger one, the
// pod's own included, is contention. The device plugin deletes it after
// Allocate.
//
// Fix: W6 — a value that is not an RFC 3339 time blocks the node forever in
// Volcano (its parse error is returned on every attempt); here it expires
// `timeout_seconds` after it was first seen, like any other lock
// (`unreadable_expires = false`: as Volcano).
//
// Thread-safety: pure functions on value types.
#ifndef DEVSHARE_VOLCANO_LOCK_HPP_
#define DEVSHARE_VOLCANO_LOCK_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "devshare/export.hpp"
#include "devshare/handshake.hpp"
#include "devshare/nodelock.hpp"

namespace devshare {

// The node annotation Volcano's vGPU device locks (vgpu.DeviceName).
inline constexpr std::string_view kVolcanoLockKey = "hamivgpu";

struct VolcanoLockOptions {
  std::int64_t timeout_seconds = 300;  // Default: 5 min, as Volcano
  // The zone the lock time is written in, seconds east of UTC (Volcano: the
  // process's zone; the instant is the same in any).
  std::int32_t zone_offset_seconds = 0;
  // W6: an unreadable value expires timeout_seconds after it was first seen
  // (false: it blocks the node forever, as in Volcano).
  bool unreadable_expires = true;
};

struct VolcanoLockDecision {
  bool acquired = false;
  std::optional<AnnotationWrite> write;  // the lock value to leave on the node
  std::string reason;                    // why, for events and errors
  friend bool operator==(const VolcanoLockDecision&, const VolcanoLockDecision&) = default;
};

// Whether the scheduler may take the Volcano lock of a node whose `hamivgpu`
// annotation is `current`, at `now` (Unix seconds): absent, or older than the
// timeout (strictly), it is taken and written with `now`; otherwise it is
// held. `sighting` ages unreadable values (W6) and is updated.
DEVSHARE_EXPORT VolcanoLockDecision DecideVolcanoLock(const std::optional<std::string>& current,
                                                      LockSighting& sighting, std::int64_t now,
                                                      const VolcanoLockOptions& options = {});

}  // namespace devshare

#endif  // DEVSHARE_VOLCANO_LOCK_HPP_
