// devshare/time_range.hpp — the instants devshare's time codecs accept, and
// the RFC 3339 decoder of metav1.Time values (an ExecCredential's expiry).
//
// Kubernetes and the device plugins write times as Go's time.Time formats
// them: RFC 3339 (or a layout like it) with a four-digit year, and
// metav1.Time/MicroTime always in UTC. Go's parser accepts more than its
// formatter writes back: "0000-01-01T10:04:12Z" at +12:00 is an instant in
// year -1, which Go marshals as "-0001-12-31T22:04:12Z" and then refuses to
// read. devshare closes that gap at the decoder: every time it decodes (a
// Lease's MicroTime, the node lock, handshake values) must lie within
// [0000-01-01T00:00:00Z, 9999-12-31T23:59:59.999999Z] in UTC, and a value
// outside is a kMalformed error naming the value and the bound it crosses.
// So whatever decodes also encodes — in UTC, or in the zone it was read
// at — and reads back as the same instant.
//
// Thread-safety: constants and pure functions.
#ifndef DEVSHARE_TIME_RANGE_HPP_
#define DEVSHARE_TIME_RANGE_HPP_

#include <cstdint>
#include <string_view>

#include "devshare/export.hpp"
#include "devshare/status.hpp"

namespace devshare {

// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z as Unix seconds.
inline constexpr std::int64_t kEarliestUnixSeconds = -62167219200;
inline constexpr std::int64_t kLatestUnixSeconds = 253402300799;

// True when a time of `unix_seconds` (any fraction of that second included)
// is within the range above.
constexpr bool InTimeRange(std::int64_t unix_seconds) {
  return unix_seconds >= kEarliestUnixSeconds && unix_seconds <= kLatestUnixSeconds;
}

// An RFC 3339 time ("2006-01-02T15:04:05Z07:00", a fraction of a second
// allowed and dropped) as Unix seconds. Errors: kMalformed naming the value,
// for one that does not parse or lies outside the range above.
DEVSHARE_EXPORT Result<std::int64_t> DecodeRfc3339(std::string_view text);

}  // namespace devshare

#endif  // DEVSHARE_TIME_RANGE_HPP_
