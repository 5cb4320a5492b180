// Private: proleptic-Gregorian calendar arithmetic and the time layouts the
// annotations use (RFC 3339, Go's time.DateTime, Volcano's dotted date, Go's
// Time.String()). No clock, no time zone database: offsets are explicit.
#ifndef DEVSHARE_SRC_CIVIL_TIME_HPP_
#define DEVSHARE_SRC_CIVIL_TIME_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace devshare::internal {

struct CivilTime {
  std::int64_t year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
  int hour = 0;
  int minute = 0;
  int second = 0;
};

// Days since 1970-01-01 for a valid civil date.
std::int64_t DaysFromCivil(std::int64_t y, int m, int d);
// Unix seconds of `t` read at `offset_seconds` east of UTC.
std::int64_t ToUnixSeconds(const CivilTime& t, std::int32_t offset_seconds);
// The civil time of `unix_seconds` shown at `offset_seconds` east of UTC.
CivilTime FromUnixSeconds(std::int64_t unix_seconds, std::int32_t offset_seconds);

// Parses "YYYY<sep>MM<sep>DD<mid>hh:mm:ss" plus an optional ".fraction"
// (dropped) at the start of `s`; returns the civil time and how many bytes
// were read, or nullopt. Validates month, day-of-month, hour, minute, second.
struct ParsedCivil {
  CivilTime time;
  std::size_t length;
};
std::optional<ParsedCivil> ParseCivil(std::string_view s, char date_sep, char mid);

// Parses an offset "Z" (when allow_z), "+hh:mm" (colon) or "+hhmm" at the
// start of `s`. Returns seconds east of UTC and the bytes read.
struct ParsedOffset {
  std::int32_t seconds;
  std::size_t length;
};
std::optional<ParsedOffset> ParseOffset(std::string_view s, bool colon, bool allow_z);

// Empty when `unix_seconds` is within devshare's time range
// (devshare/time_range.hpp); otherwise the words for the bound it crosses,
// "is before 0000-01-01T00:00:00Z in UTC" or "is after 9999-12-31T23:59:59Z
// in UTC", for an error message that quotes the value first.
std::string_view RangeViolation(std::int64_t unix_seconds);

// Formats "YYYY<sep>MM<sep>DD<mid>hh:mm:ss".
std::string FormatCivil(const CivilTime& t, char date_sep, char mid);
// Formats "Z" for 0, else "+hh:mm" (colon) or "+hhmm".
std::string FormatOffset(std::int32_t offset_seconds, bool colon, bool z_for_utc);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_CIVIL_TIME_HPP_
