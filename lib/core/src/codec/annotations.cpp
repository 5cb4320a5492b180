#include "devshare/annotations.hpp"

#include <fmt/format.h>

#include <array>

#include "base/civil_time.hpp"
#include "base/text.hpp"

namespace devshare {

namespace {

using internal::Quote;

constexpr std::string_view kLockWhat = "node lock";
constexpr std::string_view kHandshakeWhat = "handshake";

// Parses an RFC 3339 time ("2006-01-02T15:04:05Z07:00", fraction allowed)
// filling `lock`'s time and zone. Returns false when it does not parse.
bool ParseRfc3339(std::string_view s, NodeLock& lock) {
  auto civil = internal::ParseCivil(s, '-', 'T');
  if (!civil) return false;
  auto offset = internal::ParseOffset(s.substr(civil->length), /*colon=*/true, /*allow_z=*/true);
  if (!offset || civil->length + offset->length != s.size()) return false;
  lock.unix_seconds = internal::ToUnixSeconds(civil->time, offset->seconds);
  lock.utc_offset_seconds = offset->seconds;
  return true;
}

}  // namespace

Result<NodeLock> DecodeNodeLock(std::string_view value) {
  NodeLock lock;
  std::array<std::string_view, 3> parts;
  std::size_t n = 0;
  internal::ForEachSplit(value, ',', [&](std::string_view part, std::size_t) {
    if (n < parts.size()) parts[n] = part;
    ++n;
    return true;
  });
  if (n != 1 && n != 3) {
    return Status::Malformed(
        fmt::format("{}: expected <time>,<namespace>,<name> or a bare time, got {} "
                    "comma-separated parts in {}",
                    kLockWhat, n, Quote(value)),
        "value", 0);
  }
  if (!ParseRfc3339(parts[0], lock)) {
    return Status::Malformed(
        fmt::format("{}: time {} is not RFC 3339 (2006-01-02T15:04:05Z07:00) at byte 0", kLockWhat,
                    Quote(parts[0])),
        "time", 0);
  }
  if (const std::string_view violation = internal::RangeViolation(lock.unix_seconds);
      !violation.empty()) {
    return Status::Malformed(fmt::format("{}: time {} {}", kLockWhat, Quote(parts[0]), violation),
                             "time", 0);
  }
  if (n == 3) {
    lock.has_owner = true;
    lock.pod_namespace.assign(parts[1]);
    lock.pod_name.assign(parts[2]);
  }
  return lock;
}

std::string EncodeNodeLock(const NodeLock& lock) {
  std::string out =
      internal::FormatCivil(internal::FromUnixSeconds(lock.unix_seconds, lock.utc_offset_seconds),
                            '-', 'T') +
      internal::FormatOffset(lock.utc_offset_seconds, /*colon=*/true, /*z_for_utc=*/true);
  if (lock.has_owner) {
    out += ',';
    out += lock.pod_namespace;
    out += ',';
    out += lock.pod_name;
  }
  return out;
}

std::string_view HandshakeStateName(HandshakeState state) {
  const std::string_view name = kHandshakeStateNames.Name(state);
  return name.empty() ? "Other" : name;
}

namespace {

Status HandshakeTimeError(std::string_view value, std::size_t offset, std::string_view layout) {
  return Status::Malformed(fmt::format("{}: time {} does not match {} at byte {}", kHandshakeWhat,
                                       Quote(value.substr(offset)), layout, offset),
                           "time", offset);
}

// Sets `out`'s instant, or says which bound of devshare's time range the
// time at value[offset...] crosses.
Status SetHandshakeTime(std::string_view value, std::size_t offset, std::int64_t unix_seconds,
                        Handshake& out) {
  if (const std::string_view violation = internal::RangeViolation(unix_seconds);
      !violation.empty()) {
    return Status::Malformed(fmt::format("{}: time {} {} at byte {}", kHandshakeWhat,
                                         Quote(value.substr(offset)), violation, offset),
                             "time", offset);
  }
  out.unix_seconds = unix_seconds;
  return Status();
}

// "<State>_<time>" with HAMi's "2006-01-02 15:04:05" or Volcano's
// "2006.01.02 15:04:05" layout.
Status DecodeStampedTime(std::string_view value, std::size_t offset,
                         std::int32_t zone_offset_seconds, Handshake& out) {
  const std::string_view text = value.substr(offset);
  for (const char sep : {'-', '.'}) {
    auto civil = internal::ParseCivil(text, sep, ' ');
    if (civil && civil->length == text.size()) {
      out.dialect = sep == '-' ? HandshakeDialect::kHami : HandshakeDialect::kVolcano;
      return SetHandshakeTime(value, offset,
                              internal::ToUnixSeconds(civil->time, zone_offset_seconds), out);
    }
  }
  return HandshakeTimeError(value, offset,
                            "2006-01-02 15:04:05 (HAMi) or 2006.01.02 15:04:05 (Volcano)");
}

// Go's Time.String(): "2006-01-02 15:04:05.999999999 -0700 MST", optionally
// followed by a monotonic reading " m=+1.5".
Status DecodeGoTimeString(std::string_view value, std::size_t offset, Handshake& out) {
  constexpr std::string_view kLayout = "2006-01-02 15:04:05.999999999 -0700 MST";
  std::string_view text = value.substr(offset);
  auto civil = internal::ParseCivil(text, '-', ' ');
  if (!civil || civil->length >= text.size() || text[civil->length] != ' ') {
    return HandshakeTimeError(value, offset, kLayout);
  }
  std::string_view rest = text.substr(civil->length + 1);
  auto zone = internal::ParseOffset(rest, /*colon=*/false, /*allow_z=*/false);
  if (!zone || zone->length >= rest.size() || rest[zone->length] != ' ') {
    return HandshakeTimeError(value, offset, kLayout);
  }
  rest.remove_prefix(zone->length + 1);
  const std::size_t abbreviation_end = rest.find(' ');
  const std::string_view abbreviation = rest.substr(0, abbreviation_end);
  if (abbreviation.empty()) return HandshakeTimeError(value, offset, kLayout);
  for (const char c : abbreviation) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '-';
    if (!ok) return HandshakeTimeError(value, offset, kLayout);
  }
  if (abbreviation_end != std::string_view::npos) {
    const std::string_view monotonic = rest.substr(abbreviation_end + 1);
    if (monotonic.size() < 4 || monotonic.substr(0, 2) != "m=" ||
        (monotonic[2] != '+' && monotonic[2] != '-')) {
      return HandshakeTimeError(value, offset, kLayout);
    }
    for (const char c : monotonic.substr(3)) {
      if ((c < '0' || c > '9') && c != '.') return HandshakeTimeError(value, offset, kLayout);
    }
  }
  return SetHandshakeTime(value, offset, internal::ToUnixSeconds(civil->time, zone->seconds), out);
}

}  // namespace

Result<Handshake> DecodeHandshake(std::string_view value, std::int32_t zone_offset_seconds) {
  Handshake out;
  for (const EnumName<HandshakeState>& p : kHandshakeStateNames) {
    if (!value.starts_with(p.name)) continue;
    out.state = p.value;
    const std::size_t at = p.name.size();
    if (value.size() == at) {
      // HAMi treats a bare "Requesting" as a fresh request; the others carry
      // no meaning without a time.
      if (p.value == HandshakeState::kRequesting) return out;
      return HandshakeTimeError(value, at, "<state>_<time>");
    }
    Status s;
    if (p.value == HandshakeState::kReported) {
      if (value[at] != ' ' && value[at] != '_') {
        return HandshakeTimeError(value, at, "Reported <Go time>");
      }
      s = DecodeGoTimeString(value, at + 1, out);
    } else {
      if (value[at] != '_') return HandshakeTimeError(value, at, "<state>_<time>");
      s = DecodeStampedTime(value, at + 1, zone_offset_seconds, out);
    }
    if (!s.ok()) return s;
    return out;
  }
  return out;
}

std::string EncodeHandshake(const Handshake& handshake, std::int32_t zone_offset_seconds) {
  const internal::CivilTime t =
      internal::FromUnixSeconds(handshake.unix_seconds.value_or(0), zone_offset_seconds);
  switch (handshake.state) {
    case HandshakeState::kReported: {
      const std::string zone = internal::FormatOffset(zone_offset_seconds, false, false);
      return fmt::format("Reported {} {} {}", internal::FormatCivil(t, '-', ' '), zone,
                         zone_offset_seconds == 0 ? std::string("UTC") : zone);
    }
    case HandshakeState::kRequesting:
    case HandshakeState::kDeleted: {
      const char sep = handshake.dialect == HandshakeDialect::kHami ? '-' : '.';
      return fmt::format("{}_{}", HandshakeStateName(handshake.state),
                         internal::FormatCivil(t, sep, ' '));
    }
    case HandshakeState::kOther:
      break;
  }
  return "";
}

Result<ScoringWeights> DecodeScoringWeights(std::string_view value) {
  // Messages follow HAMi's ParseDeviceScoringWeights word for word.
  auto error = [&](std::string detail, std::string field) {
    return Status::Malformed(fmt::format("invalid hami.io/device-scoring-weights annotation {}: {}",
                                         Quote(value, 256), detail),
                             std::move(field));
  };
  ScoringWeights w{0, 0, 0};
  if (internal::CountChar(value, ',') != 2) {
    return error("expected slot, core, and memory weights", "value");
  }
  std::array<bool, 3> seen{};
  Status status;
  internal::ForEachSplit(value, ',', [&](std::string_view part, std::size_t) {
    part = internal::TrimSpace(part);
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      status = error("expected key=value entries", "value");
      return false;
    }
    const std::string_view key = internal::TrimSpace(part.substr(0, eq));
    const int slot = key == "slot" ? 0 : key == "core" ? 1 : key == "memory" ? 2 : -1;
    if (slot >= 0 && seen[static_cast<std::size_t>(slot)]) {
      status = error(fmt::format("duplicate {} weight", Quote(key)), std::string(key));
      return false;
    }
    auto weight = internal::ParseGoInt(internal::TrimSpace(part.substr(eq + 1)), 64);
    if (!weight) {
      status = error(fmt::format("{} weight must be an integer", Quote(key)), std::string(key));
      return false;
    }
    if (*weight < 0) {
      status = error(fmt::format("{} weight must not be negative", Quote(key)), std::string(key));
      return false;
    }
    if (slot < 0) {
      status = error(fmt::format("unknown weight {}", Quote(key)), std::string(key));
      return false;
    }
    seen[static_cast<std::size_t>(slot)] = true;
    (slot == 0 ? w.slot : slot == 1 ? w.core : w.memory) = *weight;
    return true;
  });
  if (!status.ok()) return status;
  if (w.slot == 0 && w.core == 0 && w.memory == 0) {
    return error("at least one weight must be positive", "value");
  }
  return w;
}

std::string EncodeScoringWeights(const ScoringWeights& weights) {
  return fmt::format("slot={},core={},memory={}", weights.slot, weights.core, weights.memory);
}

std::vector<std::string> DecodeNameList(std::string_view value) {
  std::vector<std::string> names;
  internal::ForEachSplit(value, ',', [&](std::string_view part, std::size_t) {
    part = internal::TrimSpace(part);
    if (!part.empty()) names.emplace_back(part);
    return true;
  });
  return names;
}

std::string EncodeNameList(std::span<const std::string> names) {
  return fmt::format("{}", fmt::join(names, ","));
}

}  // namespace devshare
