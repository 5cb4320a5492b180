// devshare/handshake.hpp — node registration protocols as pure state
// machines: HAMi's legacy handshake, Volcano's handshake, and the
// change-only protocol that replaced both (spec/hami-behaviour.md §7,
// spec/peers-and-pain-points.md §A2, §A5, §A6).
//
// Each protocol has two sides, each a function of what is observed (the
// node's annotations and allocatable count), what that side remembers, and
// `now` (Unix seconds). The result says whether the node's devices are usable,
// whether the scheduler's cache must be refreshed, and the one annotation
// write (or none) to make. Nothing here reads a clock or talks to a cluster.
//
// Fixes: W4 — under HAMi's protocol a node whose device plugin died but left
// its register annotation flapped in and out every 60–75 s; devshare keeps
// it out until the plugin is back (allocatable > 0 again). W16 — handshake
// times are read and written in an explicit zone (UTC unless told).
//
// Thread-safety: pure functions on value types.
#ifndef DEVSHARE_HANDSHAKE_HPP_
#define DEVSHARE_HANDSHAKE_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "devshare/export.hpp"
#include "devshare/hami_exact.hpp"
#include "devshare/node_codec.hpp"

namespace devshare {

// One annotation write: set `key` to `value`, or delete it when `value` is
// nullopt (a JSON merge-patch with null).
struct AnnotationWrite {
  std::string key;
  std::optional<std::string> value;
  friend bool operator==(const AnnotationWrite&, const AnnotationWrite&) = default;
};

// What a registration step decided.
struct RegistrationStep {
  bool usable = false;                   // the node's devices may be scheduled on
  bool refresh = false;                  // the scheduler must (re)read the register annotation
  std::optional<AnnotationWrite> write;  // at most one write to the node
  friend bool operator==(const RegistrationStep&, const RegistrationStep&) = default;
};

// What the scheduler observes of one node for one vendor.
struct NodeObservation {
  std::optional<std::string> handshake;   // the handshake annotation, if present
  std::optional<std::string> registered;  // the register annotation, if present
  std::int64_t allocatable = 0;           // allocatable count of the vendor's resource
};

// ---------------------------------------------------------------------------
// HAMi's protocol (`Requesting_<time>`, spec §7).

// HAMi's handshake expiry: a Requesting stamp older than this needs proof of
// life from allocatable.
inline constexpr std::int64_t kHandshakeExpirySeconds = 60;

// What the HAMi scheduler remembers of a node between passes: the
// allocatable count and register annotation last seen (NVIDIA's CheckHealth
// wrapper), whether the node's devices are in its cache, and whether it was
// cleaned up and awaits its plugin's return.
struct HamiNodeMemory {
  std::int64_t reported = 0;
  std::string registered;
  bool cached = false;
  bool cleaned_up = false;  // W4: dropped while its register annotation stayed
  friend bool operator==(const HamiNodeMemory&, const HamiNodeMemory&) = default;
};

// One registration pass of the scheduler over one node (common CheckHealth
// table + NVIDIA wrapper). `memory` is updated in place. `key` is the
// vendor's handshake annotation; `zone_offset_seconds` the zone stamps are
// written and read in. When a cached node turns unusable, the write deletes
// the handshake (NodeCleanUp) and the node stays out until its allocatable
// count is above zero again (W4).
// With `exact.cleanup_restamps` (HAMi-exact W4) the cleaned-up node is
// stamped again on the next pass and comes back, as in HAMi.
DEVSHARE_EXPORT RegistrationStep HamiSchedulerPass(const NodeObservation& node,
                                                   HamiNodeMemory& memory, std::string_view key,
                                                   std::int64_t now,
                                                   std::int32_t zone_offset_seconds = 0,
                                                   const HamiExact& exact = {});

// HAMi's device plugin after #1499: writes the register annotation only when
// the encoded device list differs from what the node carries.
DEVSHARE_EXPORT std::optional<AnnotationWrite> ChangeOnlyPluginPass(
    const std::optional<std::string>& on_node, std::string_view encoded_devices,
    std::string_view register_key);

// The legacy device plugin (HAMi before #1499, Volcano before #136): every
// period it writes its register annotation and `Reported <time>` to the
// handshake, whether or not anything changed. Returns the two writes.
struct LegacyPluginWrites {
  AnnotationWrite register_write;
  AnnotationWrite handshake_write;
};
DEVSHARE_EXPORT LegacyPluginWrites LegacyPluginPass(std::string_view encoded_devices,
                                                    std::string_view register_key,
                                                    std::string_view handshake_key,
                                                    std::int64_t now,
                                                    std::int32_t zone_offset_seconds = 0);

// ---------------------------------------------------------------------------
// Volcano's protocol (removed June 2026): the scheduler stamps
// `Requesting_<2006.01.02 15:04:05>` and expects the plugin's `Reported`
// within 60 s, else writes `Deleted_<time>` and drops the node.

// Volcano-exact switches of its handshake (docs/compatibility.md, "Volcano's
// handshake and node lock"): each one, on, decides as Volcano v1.12.4 does.
struct VolcanoHandshakeExact {
  // W16: Volcano formats its stamps in the process's zone but parses them
  // with time.Parse, i.e. as UTC; on, stamps are read as UTC whatever
  // `zone_offset_seconds` they are written in.
  bool read_utc = false;
  friend bool operator==(const VolcanoHandshakeExact&, const VolcanoHandshakeExact&) = default;
};

// One scheduler observation of a node, as Volcano v1.12.4's vgpu.NewGPUDevices
// (checked against it by tests/oracle/compare_volcano112.py). A node without
// a register annotation, or whose register annotation gives no device, or
// without a handshake, has no vGPU devices and nothing is written. Otherwise a
// handshake containing `Requesting` is read at the time between its first and
// second `_`: within 60 s (not after) the node is usable; older, or a time
// that does not parse (Volcano's zero time), it is dropped with a
// `Deleted_<now>` stamp; one without `_` (Volcano panics) counts as
// unparseable. One containing `Deleted` stays dropped; anything else
// (`Reported`, "") is usable and answered with `Requesting_<now>`. Stamps are
// written and read at `zone_offset_seconds` east of UTC (W16). `format` is the
// register annotation's (Volcano's own; the engine passes its vendor's).
DEVSHARE_EXPORT RegistrationStep
VolcanoSchedulerPass(const NodeObservation& node, std::string_view key, std::int64_t now,
                     std::int32_t zone_offset_seconds = 0, const VolcanoHandshakeExact& exact = {},
                     RegisterFormat format = RegisterFormat::kVolcano);

// ---------------------------------------------------------------------------
// The change-only protocol (Volcano #5393, HAMi #1499): the scheduler writes
// nothing; a node is live when its register annotation is present and its
// allocatable count is above zero. `previous` is the annotation the cache
// holds (nullopt when none); refresh is set when it changed.
DEVSHARE_EXPORT RegistrationStep
ChangeOnlySchedulerPass(const NodeObservation& node, const std::optional<std::string>& previous);

}  // namespace devshare

#endif  // DEVSHARE_HANDSHAKE_HPP_
