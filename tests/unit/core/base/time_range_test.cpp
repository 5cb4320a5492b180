// The range of instants every time decoder accepts (devshare/time_range.hpp):
// years 0000..9999 in UTC, checked at both edges for every zone offset from
// -23:59 to +23:59, for each decoder that reads a time. Whatever decodes must
// encode and read back as the same instant.
#include "devshare/time_range.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "devshare/annotations.hpp"
#include "devshare/lease.hpp"

using namespace devshare;

namespace {

// The civil time "YYYY-MM-DD?hh:mm:ss" of a local instant (Unix seconds of
// the civil time read as UTC) within a day of either edge of the range:
// written by hand here rather than by the calendar code under test.
std::string Civil(std::int64_t local, char date_sep, char mid) {
  const bool first_day = local < kEarliestUnixSeconds + 86400;
  const std::int64_t second_of_day =
      first_day ? local - kEarliestUnixSeconds : local - (kLatestUnixSeconds - 86399);
  REQUIRE(second_of_day >= 0);
  REQUIRE(second_of_day < 86400);
  return fmt::format("{}{}{}{}{}{}{:02}:{:02}:{:02}", first_day ? "0000" : "9999", date_sep,
                     first_day ? "01" : "12", date_sep, first_day ? "01" : "31", mid,
                     second_of_day / 3600, second_of_day / 60 % 60, second_of_day % 60);
}

// "+hh:mm" / "-hh:mm" (colon) or "+hhmm"; never "Z".
std::string Offset(std::int32_t offset, bool colon) {
  const std::int32_t minutes = (offset < 0 ? -offset : offset) / 60;
  return fmt::format("{}{:02}{}{:02}", offset < 0 ? '-' : '+', minutes / 60, colon ? ":" : "",
                     minutes % 60);
}

// The local instants (as Unix seconds of the civil time read as UTC) worth
// trying at `offset`: the first and last second a four-digit year can show,
// and the seconds on either side of each edge of the range once the offset
// is applied. Only those a four-digit layout can write are kept.
std::vector<std::int64_t> EdgeLocals(std::int32_t offset) {
  std::vector<std::int64_t> locals;
  for (std::int64_t local :
       {kEarliestUnixSeconds, kEarliestUnixSeconds + offset - 1, kEarliestUnixSeconds + offset,
        kLatestUnixSeconds, kLatestUnixSeconds + offset, kLatestUnixSeconds + offset + 1}) {
    if (InTimeRange(local)) locals.push_back(local);
  }
  return locals;
}

// Every zone offset from -23:59 to +23:59, one minute apart.
std::vector<std::int32_t> AllOffsets() {
  std::vector<std::int32_t> offsets;
  for (std::int32_t minutes = -(23 * 60 + 59); minutes <= 23 * 60 + 59; ++minutes) {
    offsets.push_back(minutes * 60);
  }
  return offsets;
}

// An out-of-range value's error names the bound it crosses.
void CheckRangeError(const Status& status, std::int64_t utc) {
  CHECK(status.code() == StatusCode::kMalformed);
  const std::string_view bound =
      utc < kEarliestUnixSeconds ? "before 0000-01-01T00:00:00Z" : "after 9999-12-31T23:59:59Z";
  CHECK(status.message().find(bound) != std::string::npos);
}

}  // namespace

TEST_CASE("time range: the constants are the first and last second of years 0000 and 9999") {
  CHECK(EncodeMicroTime(kEarliestUnixSeconds * 1000000) == "0000-01-01T00:00:00.000000Z");
  CHECK(EncodeMicroTime(kLatestUnixSeconds * 1000000 + 999999) == "9999-12-31T23:59:59.999999Z");
  CHECK(InTimeRange(kEarliestUnixSeconds));
  CHECK(InTimeRange(kLatestUnixSeconds));
  CHECK_FALSE(InTimeRange(kEarliestUnixSeconds - 1));
  CHECK_FALSE(InTimeRange(kLatestUnixSeconds + 1));
}

TEST_CASE("time range: the fuzzer's MicroTime in year -1 is refused by name") {
  // Found by fuzz_lease: 0000-01-01T10:04:12+12:00 is -0001-12-31T22:04:12Z.
  Result<std::int64_t> t = DecodeMicroTime("0000-01-01T10:04:12.345678+12:00");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message() ==
        "MicroTime \"0000-01-01T10:04:12.345678+12:00\" is before 0000-01-01T00:00:00Z in UTC: "
        "Kubernetes writes years 0000-9999 in UTC");
  Result<LeaseRecord> lease =
      DecodeLease(R"({"spec":{"renewTime":"0000-01-01T10:04:12.345678+12:00"}})");
  REQUIRE_FALSE(lease.ok());
  CHECK(lease.status().field() == "spec.renewTime");
  // Its neighbours: the same wall time at +10:04:12 would be the first instant,
  // but offsets have minutes only; 10:04 at +10:04 is.
  CHECK(DecodeMicroTime("0000-01-01T10:04:00.000000+10:04").ok());
  CHECK_FALSE(DecodeMicroTime("0000-01-01T10:03:59.999999+10:04").ok());
  CHECK(DecodeMicroTime("9999-12-31T23:59:59.999999Z").ok());
  CHECK_FALSE(DecodeMicroTime("9999-12-31T23:59:59.999999-00:01").ok());
}

TEST_CASE("time range: every decoder at the year 0000 and 9999 edges, every zone offset") {
  int accepted = 0;
  int refused = 0;
  for (const std::int32_t offset : AllOffsets()) {
    for (const std::int64_t local : EdgeLocals(offset)) {
      const std::int64_t utc = local - offset;
      const bool in_range = InTimeRange(utc);
      (in_range ? accepted : refused) += 1;
      CAPTURE(offset);
      CAPTURE(local);

      // Lease MicroTime: any offset in, UTC out.
      const std::string micro = Civil(local, '-', 'T') + ".123456" + Offset(offset, true);
      CAPTURE(micro);
      Result<std::int64_t> t = DecodeMicroTime(micro);
      REQUIRE(t.ok() == in_range);
      if (in_range) {
        CHECK(*t == utc * 1000000 + 123456);
        Result<std::int64_t> back = DecodeMicroTime(EncodeMicroTime(*t));
        REQUIRE(back.ok());
        CHECK(*back == *t);
      } else {
        CheckRangeError(t.status(), utc);
      }

      // Node lock: re-encoded in the writer's zone.
      const std::string lock_value =
          Civil(local, '-', 'T') + Offset(offset, true) + ",default,pod-1";
      CAPTURE(lock_value);
      Result<NodeLock> lock = DecodeNodeLock(lock_value);
      REQUIRE(lock.ok() == in_range);
      if (in_range) {
        CHECK(lock->unix_seconds == utc);
        Result<NodeLock> back = DecodeNodeLock(EncodeNodeLock(*lock));
        REQUIRE(back.ok());
        CHECK(*back == *lock);
        if (offset != 0) CHECK(EncodeNodeLock(*lock) == lock_value);  // 0 is written "Z"
      } else {
        CheckRangeError(lock.status(), utc);
      }

      // Handshakes: zone-less stamps read in the zone given, and Go's
      // Time.String() with its own offset.
      const std::vector<std::string> handshakes = {
          "Requesting_" + Civil(local, '-', ' '),
          "Deleted_" + Civil(local, '.', ' '),
          "Reported " + Civil(local, '-', ' ') + " " + Offset(offset, false) + " XYZ",
      };
      for (const std::string& value : handshakes) {
        CAPTURE(value);
        Result<Handshake> h = DecodeHandshake(value, offset);
        REQUIRE(h.ok() == in_range);
        if (!in_range) {
          CheckRangeError(h.status(), utc);
          continue;
        }
        CHECK(h->unix_seconds == utc);
        Result<Handshake> back = DecodeHandshake(EncodeHandshake(*h, offset), offset);
        REQUIRE(back.ok());
        CHECK(back->unix_seconds == utc);
        CHECK(back->state == h->state);
      }
    }
  }
  // Each of the 2,878 non-zero offsets has two instants inside and two outside
  // the range (one per edge the offset pushes across); offset 0 has four inside.
  CHECK(accepted == 2 * 2878 + 4);
  CHECK(refused == 2 * 2878);
}

TEST_CASE("time range: DecodeRfc3339 reads metav1.Time and refuses what does not parse") {
  CHECK(*DecodeRfc3339("2026-11-25T10:00:00Z") == 1795600800);
  CHECK(*DecodeRfc3339("2026-11-25T11:00:00.5+01:00") == 1795600800);
  CHECK(*DecodeRfc3339("0000-01-01T00:00:00Z") == kEarliestUnixSeconds);
  CHECK(DecodeRfc3339("2026-11-25 10:00:00Z").status().message() ==
        "time \"2026-11-25 10:00:00Z\" is not RFC 3339 (2006-01-02T15:04:05Z07:00)");
  CHECK(DecodeRfc3339("2026-02-30T00:00:00Z").status().code() == StatusCode::kMalformed);
  CHECK(DecodeRfc3339("2026-11-25T10:00:00").status().code() == StatusCode::kMalformed);
  CHECK(std::string(DecodeRfc3339("0000-01-01T10:04:12+12:00").status().message())
            .ends_with("is before 0000-01-01T00:00:00Z in UTC"));
}
