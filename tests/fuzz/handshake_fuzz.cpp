// Fuzzes DecodeHandshake (`hami.io/node-handshake[-<vendor>]`,
// `volcano.sh/node-vgpu-handshake`), zone UTC.
//
// Properties:
//   - no crash; kOther carries no time;
//   - Requesting/Deleted with a time: EncodeHandshake then DecodeHandshake
//     gives the same state, dialect and unix_seconds, at UTC and at two
//     other zones (encoded and decoded at the same zone);
//   - Reported: re-encoding (Go's Time.String() at those zones) decodes to
//     the same state and instant.
//   - every decoded instant is within devshare/time_range.hpp's range (a
//     "Reported 0000-01-01 00:00:00 +0100 CET" value, year -1 in UTC, is
//     refused), so the round trip at UTC always holds.
// The layouts have four-digit years, so the round trips at the other zones
// are only checked for instants whose civil year there is within 0000..9999
// (9999-12-31 23:00:00 UTC is in year 10000 at +0800).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "devshare/annotations.hpp"
#include "devshare/time_range.hpp"
#include "fuzz_fail.hpp"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view value = {}) {
  devshare::fuzz::Fail("handshake", what, value);
}

bool Representable(std::int64_t unix_seconds, std::int32_t zone) {
  return devshare::InTimeRange(unix_seconds + zone);
}

void CheckRoundTrip(const devshare::Handshake& h, std::int32_t zone) {
  if (!Representable(*h.unix_seconds, zone)) return;
  const std::string encoded = devshare::EncodeHandshake(h, zone);
  auto again = devshare::DecodeHandshake(encoded, zone);
  if (!again.ok()) Fail("re-encoded handshake does not decode", encoded);
  if (again->state != h.state) Fail("round trip changed the state", encoded);
  if (again->unix_seconds != h.unix_seconds) Fail("round trip changed the time", encoded);
  if (h.state != devshare::HandshakeState::kReported && again->dialect != h.dialect) {
    Fail("round trip changed the dialect", encoded);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = devshare::DecodeHandshake(input, 0);
  if (!decoded.ok()) return 0;
  const devshare::Handshake& h = *decoded;

  switch (h.state) {
    case devshare::HandshakeState::kOther:
      if (h.unix_seconds) Fail("kOther carries a time", input);
      return 0;
    case devshare::HandshakeState::kRequesting:
    case devshare::HandshakeState::kDeleted:
      if (!h.unix_seconds) {
        // Only a bare "Requesting" has no time.
        if (h.state != devshare::HandshakeState::kRequesting || input != "Requesting") {
          Fail("a timeless handshake that is not a bare Requesting", input);
        }
        return 0;
      }
      break;
    case devshare::HandshakeState::kReported:
      if (!h.unix_seconds) Fail("Reported without a time", input);
      break;
  }
  if (!devshare::InTimeRange(*h.unix_seconds)) Fail("decoded instant outside the range", input);
  CheckRoundTrip(h, 0);
  CheckRoundTrip(h, 8 * 3600);               // +0800
  CheckRoundTrip(h, -(5 * 3600 + 30 * 60));  // -0530
  return 0;
}
