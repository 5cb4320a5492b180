// devshare/annotations.hpp — annotation keys and the small annotation values:
// node lock, handshake, device-scoring weights and name lists.
//
// Formats (spec/hami-behaviour.md §1.1, §1.2; Volcano: peers §A2):
//   node lock       "2026-08-01T06:00:00Z,ns,pod-a"  (legacy: the bare time)
//   HAMi handshake  "Requesting_2026-08-21 08:20:39"
//   Volcano         "Requesting_2026.08.21 08:20:39", "Deleted_2026.08.21 08:20:39",
//                   "Reported 2026-08-21 08:20:39.5 +0800 CST m=+3.1"
//   weights         "slot=1,core=1,memory=3"
//   name lists      "GPU-a, GPU-b,,GPU-c" (trimmed, empty members skipped)
//
// Times are instants in Unix seconds. Values without a zone (handshakes) are
// read in the zone passed by the caller, UTC by default, never the process's
// local zone. Decoders are total: kMalformed naming field and byte offset.
//
// Thread-safety: pure functions; safe to call concurrently.
#ifndef DEVSHARE_ANNOTATIONS_HPP_
#define DEVSHARE_ANNOTATIONS_HPP_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/enum_names.hpp"
#include "devshare/export.hpp"
#include "devshare/status.hpp"

namespace devshare {

// Keys shared by every vendor. Vendor-specific keys (register, handshake,
// pod devices) are in VendorSpec (devshare/vendor.hpp), and the pod keys
// HAMi and Volcano name differently (assigned node and time, UUID
// selectors) in DeviceConfig.
namespace keys {
inline constexpr std::string_view kNodeLock = "hami.io/mutex.lock";
inline constexpr std::string_view kDeviceCordon = "hami.io/device-cordon";
inline constexpr std::string_view kNodeNvidiaScore = "hami.io/node-nvidia-score";
inline constexpr std::string_view kBindTime = "hami.io/bind-time";
inline constexpr std::string_view kBindPhase = "hami.io/bind-phase";
inline constexpr std::string_view kMigAllocations = "hami.io/vgpu-mig-allocations";
inline constexpr std::string_view kNodeSchedulerPolicy = "hami.io/node-scheduler-policy";
inline constexpr std::string_view kGpuSchedulerPolicy = "hami.io/gpu-scheduler-policy";
inline constexpr std::string_view kDeviceScoringWeights = "hami.io/device-scoring-weights";
inline constexpr std::string_view kUseGpuType = "nvidia.com/use-gputype";
inline constexpr std::string_view kNoUseGpuType = "nvidia.com/nouse-gputype";
inline constexpr std::string_view kNumaBind = "nvidia.com/numa-bind";
inline constexpr std::string_view kVgpuMode = "nvidia.com/vgpu-mode";
inline constexpr std::string_view kVolcanoHandshake = "volcano.sh/node-vgpu-handshake";
}  // namespace keys

// ---------------------------------------------------------------------------
// Node lock (`hami.io/mutex.lock`).

struct NodeLock {
  std::int64_t unix_seconds = 0;        // when the lock was taken
  std::int32_t utc_offset_seconds = 0;  // the writer's zone, kept for re-encoding
  bool has_owner = false;               // false for the legacy bare-time form
  std::string pod_namespace;            // owner, when has_owner
  std::string pod_name;
  friend bool operator==(const NodeLock&, const NodeLock&) = default;
};

// Decodes "<RFC3339>,<namespace>,<name>" or the legacy "<RFC3339>".
// Errors: not exactly 1 or 3 comma-separated parts, a time that is not
// RFC 3339 (fractional seconds are accepted and dropped), an instant outside
// devshare/time_range.hpp's range.
DEVSHARE_EXPORT Result<NodeLock> DecodeNodeLock(std::string_view value);
// Encodes with the lock's zone ("Z" when the offset is 0), as Go's RFC3339.
DEVSHARE_EXPORT std::string EncodeNodeLock(const NodeLock& lock);

// ---------------------------------------------------------------------------
// Handshake (`hami.io/node-handshake[-<vendor>]`, `volcano.sh/node-vgpu-handshake`).

enum class HandshakeState {
  kRequesting,  // the scheduler asked; "Requesting_<time>"
  kReported,    // a device plugin answered (legacy); "Reported <time>"
  kDeleted,     // Volcano's scheduler dropped the node; "Deleted_<time>"
  kOther,       // anything else ("", "Unknown", ...): treated as absent
};

enum class HandshakeDialect {
  kHami,     // "Requesting_2006-01-02 15:04:05"
  kVolcano,  // "Requesting_2006.01.02 15:04:05", "Deleted_...", "Reported <Go time>"
};

struct Handshake {
  HandshakeState state = HandshakeState::kOther;
  HandshakeDialect dialect = HandshakeDialect::kHami;
  // The instant the value carries; absent for kOther and for a bare
  // "Requesting" with no time (a state HAMi treats as fresh).
  std::optional<std::int64_t> unix_seconds;
  friend bool operator==(const Handshake&, const Handshake&) = default;
};

// The words a handshake value starts with; kOther has none.
inline constexpr auto kHandshakeStateNames =
    MakeEnumNames<HandshakeState>({{"Requesting", HandshakeState::kRequesting},
                                   {"Reported", HandshakeState::kReported},
                                   {"Deleted", HandshakeState::kDeleted}});

// The state's word in kHandshakeStateNames; "Other" for kOther.
DEVSHARE_EXPORT std::string_view HandshakeStateName(HandshakeState state);

// Decodes a handshake value. Times without a zone are read at
// `zone_offset_seconds` east of UTC (default UTC); "Reported" times carry
// their own offset. Errors: a Requesting/Deleted/Reported value whose time
// does not parse, or whose instant is outside devshare/time_range.hpp's range
// (a Requesting value with a time of year 0000 read at a zone east of UTC).
DEVSHARE_EXPORT Result<Handshake> DecodeHandshake(std::string_view value,
                                                  std::int32_t zone_offset_seconds = 0);
// Encodes `Requesting_<t>` or `Deleted_<t>` in the dialect's layout, or
// `Reported <Go time.String()>`, with the time shown at `zone_offset_seconds`.
// REQUIRES: handshake.state != kOther and handshake.unix_seconds has a value.
DEVSHARE_EXPORT std::string EncodeHandshake(const Handshake& handshake,
                                            std::int32_t zone_offset_seconds = 0);

// ---------------------------------------------------------------------------
// Device scoring weights (`hami.io/device-scoring-weights`).

struct ScoringWeights {
  std::int64_t slot = 1;    // Default: 1
  std::int64_t core = 1;    // Default: 1
  std::int64_t memory = 1;  // Default: 1
  friend bool operator==(const ScoringWeights&, const ScoringWeights&) = default;
};

// Decodes exactly three `key=value` parts (slot, core, memory in any order,
// whitespace trimmed). Errors: not three parts, a part without '=', a
// duplicate or unknown key, a value that is not an int64, a negative value,
// or all three zero.
DEVSHARE_EXPORT Result<ScoringWeights> DecodeScoringWeights(std::string_view value);
// "slot=<n>,core=<n>,memory=<n>".
DEVSHARE_EXPORT std::string EncodeScoringWeights(const ScoringWeights& weights);

// ---------------------------------------------------------------------------
// Comma-separated name lists: use/nouse UUIDs and types, device cordon.

// Splits on ',', trims ASCII whitespace, skips empty members. Never fails.
DEVSHARE_EXPORT std::vector<std::string> DecodeNameList(std::string_view value);
// Joins with ','.
DEVSHARE_EXPORT std::string EncodeNameList(std::span<const std::string> names);

}  // namespace devshare

#endif  // DEVSHARE_ANNOTATIONS_HPP_
