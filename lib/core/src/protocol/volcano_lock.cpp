#include "devshare/volcano_lock.hpp"

#include <fmt/format.h>

#include "base/text.hpp"
#include "devshare/annotations.hpp"
#include "devshare/time_range.hpp"

namespace devshare {

namespace {

VolcanoLockDecision Take(std::int64_t now, const VolcanoLockOptions& options, std::string reason) {
  // Volcano writes time.Now().Format(time.RFC3339): seconds, the zone's offset.
  return VolcanoLockDecision{
      true,
      AnnotationWrite{std::string(kVolcanoLockKey),
                      EncodeNodeLock(NodeLock{now, options.zone_offset_seconds, false, {}, {}})},
      std::move(reason)};
}

}  // namespace

VolcanoLockDecision DecideVolcanoLock(const std::optional<std::string>& current,
                                      LockSighting& sighting, std::int64_t now,
                                      const VolcanoLockOptions& options) {
  if (!current) return Take(now, options, "node free");
  if (sighting.value != *current) sighting = LockSighting{*current, now};
  const Result<std::int64_t> taken = DecodeRfc3339(*current);
  if (!taken.ok()) {
    if (options.unreadable_expires && now - sighting.first_seen > options.timeout_seconds) {
      return Take(now, options,
                  fmt::format("unreadable lock {} expired", internal::Quote(*current)));
    }
    return VolcanoLockDecision{false, std::nullopt,
                               fmt::format("unreadable lock {}", internal::Quote(*current))};
  }
  // Volcano: time.Since(lockTime) > 5 min.
  if (now - *taken > options.timeout_seconds) return Take(now, options, "lock expired");
  return VolcanoLockDecision{
      false, std::nullopt,
      fmt::format("locked within {} s, at {}", options.timeout_seconds, *current)};
}

}  // namespace devshare
