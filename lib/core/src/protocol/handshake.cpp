#include "devshare/handshake.hpp"

#include "base/civil_time.hpp"
#include "devshare/annotations.hpp"

namespace devshare {

namespace {

// The time after the first '_' of a stamp, read with `date_sep` ('-' for
// HAMi's 2006-01-02, '.' for Volcano's 2006.01.02) in the given zone.
std::optional<std::int64_t> StampTime(std::string_view value, char date_sep,
                                      std::int32_t zone_offset_seconds) {
  const std::size_t underscore = value.find('_');
  if (underscore == std::string_view::npos) return std::nullopt;
  const std::string_view text = value.substr(underscore + 1);
  auto civil = internal::ParseCivil(text, date_sep, ' ');
  if (!civil || civil->length != text.size()) return std::nullopt;
  return internal::ToUnixSeconds(civil->time, zone_offset_seconds);
}

AnnotationWrite Stamp(std::string_view key, HandshakeState state, HandshakeDialect dialect,
                      std::int64_t now, std::int32_t zone_offset_seconds) {
  return AnnotationWrite{std::string(key),
                         EncodeHandshake(Handshake{state, dialect, now}, zone_offset_seconds)};
}

bool Contains(const std::optional<std::string>& value, std::string_view word) {
  return value && value->find(word) != std::string::npos;
}

}  // namespace

RegistrationStep HamiSchedulerPass(const NodeObservation& node, HamiNodeMemory& memory,
                                   std::string_view key, std::int64_t now,
                                   std::int32_t zone_offset_seconds, const HamiExact& exact) {
  // W4: a node cleaned up for a dead plugin stays out, and is not stamped
  // again, until its allocatable count comes back.
  if (memory.cleaned_up && !exact.cleanup_restamps) {
    if (node.allocatable <= 0) return RegistrationStep{};
    memory.cleaned_up = false;
  }

  // Common CheckHealth (spec §7 table).
  bool healthy = true;
  bool refresh = false;
  std::optional<AnnotationWrite> write;
  if (Contains(node.handshake, "Requesting")) {
    const std::optional<std::int64_t> stamped =
        StampTime(*node.handshake, '-', zone_offset_seconds);
    // No '_' or an unreadable time: HAMi treats the request as fresh.
    if (stamped && now >= *stamped + kHandshakeExpirySeconds) {
      healthy = node.allocatable > 0;
    }
  } else {
    write =
        Stamp(key, HandshakeState::kRequesting, HandshakeDialect::kHami, now, zone_offset_seconds);
    refresh = true;
  }

  // NVIDIA's wrapper: allocatable and register-annotation changes.
  const std::string registered = node.registered.value_or("");
  if (node.allocatable == 0) {
    if (memory.reported != 0) {
      memory.reported = 0;
      memory.registered = registered;
      healthy = false;
    }
  } else if (node.allocatable != memory.reported) {
    memory.reported = node.allocatable;
    memory.registered = registered;
    healthy = true;
    refresh = true;
  } else if (registered != memory.registered) {
    memory.registered = registered;
    refresh = true;
  }

  if (!healthy) {
    // The stamp CheckHealth wrote before it judged the node stays written.
    if (!memory.cached) return RegistrationStep{false, false, std::move(write)};
    // NodeCleanUp: forget the node and delete its handshake.
    memory = HamiNodeMemory{0, "", false, true};
    return RegistrationStep{false, false, AnnotationWrite{std::string(key), std::nullopt}};
  }
  if (refresh && node.registered) memory.cached = true;
  return RegistrationStep{true, refresh, std::move(write)};
}

std::optional<AnnotationWrite> ChangeOnlyPluginPass(const std::optional<std::string>& on_node,
                                                    std::string_view encoded_devices,
                                                    std::string_view register_key) {
  if (on_node && *on_node == encoded_devices) return std::nullopt;
  return AnnotationWrite{std::string(register_key), std::string(encoded_devices)};
}

LegacyPluginWrites LegacyPluginPass(std::string_view encoded_devices, std::string_view register_key,
                                    std::string_view handshake_key, std::int64_t now,
                                    std::int32_t zone_offset_seconds) {
  return LegacyPluginWrites{
      AnnotationWrite{std::string(register_key), std::string(encoded_devices)},
      Stamp(handshake_key, HandshakeState::kReported, HandshakeDialect::kHami, now,
            zone_offset_seconds)};
}

RegistrationStep VolcanoSchedulerPass(const NodeObservation& node, std::string_view key,
                                      std::int64_t now, std::int32_t zone_offset_seconds,
                                      const VolcanoHandshakeExact& exact, RegisterFormat format) {
  // No register annotation, none that gives a device, or no handshake: no
  // vGPU devices (yet), and Volcano writes nothing.
  if (!node.registered || !node.handshake) return RegistrationStep{};
  const Result<std::vector<Device>> devices = DecodeNodeDevices(*node.registered, format);
  if (!devices.ok() || devices->empty()) return RegistrationStep{};
  if (Contains(node.handshake, "Requesting")) {
    // Volcano reads the text between the first and the second '_' and
    // ignores a parse error, which leaves the zero time: expired.
    const std::string_view value = *node.handshake;
    const std::size_t first = value.find('_');
    const std::size_t second = first == std::string_view::npos ? first : value.find('_', first + 1);
    std::string text(value.substr(0, second));
    // Go's time.Parse reads the layout's hour ("15") from one digit or two:
    // "2006.01.02 9:04:05" is read as 09.
    const std::size_t hour = first + 1 + 11;  // after "2006.01.02 "
    if (first != std::string_view::npos && text.size() > hour + 1 && text[hour - 1] == ' ' &&
        text[hour] >= '0' && text[hour] <= '9' && text[hour + 1] == ':') {
      text.insert(hour, 1, '0');
    }
    const std::optional<std::int64_t> stamped =
        first == std::string_view::npos
            ? std::nullopt
            : StampTime(text, '.', exact.read_utc ? 0 : zone_offset_seconds);
    if (!stamped || now > *stamped + kHandshakeExpirySeconds) {
      return RegistrationStep{false, false,
                              Stamp(key, HandshakeState::kDeleted, HandshakeDialect::kVolcano, now,
                                    zone_offset_seconds)};
    }
    return RegistrationStep{true, true, std::nullopt};
  }
  if (Contains(node.handshake, "Deleted")) return RegistrationStep{};
  return RegistrationStep{true, true,
                          Stamp(key, HandshakeState::kRequesting, HandshakeDialect::kVolcano, now,
                                zone_offset_seconds)};
}

RegistrationStep ChangeOnlySchedulerPass(const NodeObservation& node,
                                         const std::optional<std::string>& previous) {
  if (!node.registered || node.allocatable <= 0) return RegistrationStep{};
  return RegistrationStep{true, node.registered != previous, std::nullopt};
}

}  // namespace devshare
