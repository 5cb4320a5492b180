#include "base/civil_time.hpp"

#include <fmt/format.h>

#include "devshare/time_range.hpp"

namespace devshare::internal {

namespace {

bool IsLeap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(std::int64_t y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Reads exactly `n` decimal digits at s[pos].
std::optional<int> Digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::int64_t DaysFromCivil(std::int64_t y, int m, int d) {
  // Howard Hinnant's days_from_civil.
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = FloorDiv(y, 400);
  const std::int64_t yoe = y - era * 400;
  const std::int64_t mp = (m + 9) % 12;
  const std::int64_t doy = (153 * mp + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

std::int64_t ToUnixSeconds(const CivilTime& t, std::int32_t offset_seconds) {
  return DaysFromCivil(t.year, t.month, t.day) * 86400 + t.hour * 3600 + t.minute * 60 + t.second -
         offset_seconds;
}

CivilTime FromUnixSeconds(std::int64_t unix_seconds, std::int32_t offset_seconds) {
  const std::int64_t local = unix_seconds + offset_seconds;
  const std::int64_t days = FloorDiv(local, 86400);
  const std::int64_t secs = local - days * 86400;
  // Howard Hinnant's civil_from_days.
  const std::int64_t z = days + 719468;
  const std::int64_t era = FloorDiv(z, 146097);
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  CivilTime t;
  t.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  t.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  t.year = yoe + era * 400 + (t.month <= 2 ? 1 : 0);
  t.hour = static_cast<int>(secs / 3600);
  t.minute = static_cast<int>((secs / 60) % 60);
  t.second = static_cast<int>(secs % 60);
  return t;
}

std::optional<ParsedCivil> ParseCivil(std::string_view s, char date_sep, char mid) {
  // 0123456789012345678
  // YYYY-MM-DDThh:mm:ss
  if (s.size() < 19) return std::nullopt;
  auto year = Digits(s, 0, 4);
  auto month = Digits(s, 5, 2);
  auto day = Digits(s, 8, 2);
  auto hour = Digits(s, 11, 2);
  auto minute = Digits(s, 14, 2);
  auto second = Digits(s, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (s[4] != date_sep || s[7] != date_sep || s[10] != mid || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  if (*month < 1 || *month > 12 || *day < 1 || *day > DaysInMonth(*year, *month) || *hour > 23 ||
      *minute > 59 || *second > 59) {
    return std::nullopt;
  }
  std::size_t length = 19;
  if (length < s.size() && s[length] == '.' && length + 1 < s.size() && s[length + 1] >= '0' &&
      s[length + 1] <= '9') {
    ++length;
    while (length < s.size() && s[length] >= '0' && s[length] <= '9') ++length;
  }
  return ParsedCivil{CivilTime{*year, *month, *day, *hour, *minute, *second}, length};
}

std::optional<ParsedOffset> ParseOffset(std::string_view s, bool colon, bool allow_z) {
  if (allow_z && !s.empty() && s[0] == 'Z') return ParsedOffset{0, 1};
  if (s.empty() || (s[0] != '+' && s[0] != '-')) return std::nullopt;
  auto hh = Digits(s, 1, 2);
  if (!hh) return std::nullopt;
  std::size_t pos = 3;
  if (colon) {
    if (pos >= s.size() || s[pos] != ':') return std::nullopt;
    ++pos;
  }
  auto mm = Digits(s, pos, 2);
  if (!mm || *hh > 23 || *mm > 59) return std::nullopt;
  const std::int32_t seconds = (*hh * 3600 + *mm * 60) * (s[0] == '-' ? -1 : 1);
  return ParsedOffset{seconds, pos + 2};
}

std::string_view RangeViolation(std::int64_t unix_seconds) {
  if (unix_seconds < kEarliestUnixSeconds) return "is before 0000-01-01T00:00:00Z in UTC";
  if (unix_seconds > kLatestUnixSeconds) return "is after 9999-12-31T23:59:59Z in UTC";
  return {};
}

std::string FormatCivil(const CivilTime& t, char date_sep, char mid) {
  return fmt::format("{:04}{}{:02}{}{:02}{}{:02}:{:02}:{:02}", t.year, date_sep, t.month, date_sep,
                     t.day, mid, t.hour, t.minute, t.second);
}

std::string FormatOffset(std::int32_t offset_seconds, bool colon, bool z_for_utc) {
  if (offset_seconds == 0 && z_for_utc) return "Z";
  const char sign = offset_seconds < 0 ? '-' : '+';
  const std::int32_t abs = offset_seconds < 0 ? -offset_seconds : offset_seconds;
  return fmt::format("{}{:02}{}{:02}", sign, abs / 3600, colon ? ":" : "", (abs / 60) % 60);
}

}  // namespace devshare::internal

namespace devshare {

Result<std::int64_t> DecodeRfc3339(std::string_view text) {
  const std::optional<internal::ParsedCivil> civil = internal::ParseCivil(text, '-', 'T');
  const std::optional<internal::ParsedOffset> offset =
      civil ? internal::ParseOffset(text.substr(civil->length), /*colon=*/true, /*allow_z=*/true)
            : std::nullopt;
  if (!civil || !offset || civil->length + offset->length != text.size()) {
    return Status::Malformed(
        fmt::format("time \"{}\" is not RFC 3339 (2006-01-02T15:04:05Z07:00)", text), "time", 0);
  }
  const std::int64_t seconds = internal::ToUnixSeconds(civil->time, offset->seconds);
  if (const std::string_view violation = internal::RangeViolation(seconds); !violation.empty())
    return Status::Malformed(fmt::format("time \"{}\" {}", text, violation), "time", 0);
  return seconds;
}

}  // namespace devshare
