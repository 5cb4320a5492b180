// The colon formats of the node register annotation: HAMi's legacy form
// and Volcano's (node_colon.hpp).
#include "codec/node_colon.hpp"

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <limits>
#include <tuple>

#include "base/text.hpp"

namespace devshare::internal {

namespace {

constexpr std::string_view kLegacyWhat = "node register annotation";
constexpr std::string_view kVolcanoWhat = "volcano node register annotation";
constexpr std::int64_t kUint32Max = std::numeric_limits<std::uint32_t>::max();

Status FieldError(std::string_view what, std::size_t device, std::string_view field,
                  std::string_view problem, std::string_view text, std::size_t offset) {
  std::string path = fmt::format("device[{}].{}", device, field);
  std::string message =
      fmt::format("{}: {}: {} {} at byte {}", what, path, problem, Quote(text), offset);
  return Status::Malformed(std::move(message), std::move(path), offset);
}

// Splits `record` on ',' into at most N fields; returns the field count
// (which may exceed N) and fills `fields`/`offsets` for the first N.
template <std::size_t N>
std::size_t SplitFields(std::string_view record, std::array<std::string_view, N>& fields,
                        std::array<std::size_t, N>& offsets) {
  std::size_t n = 0;
  internal::ForEachSplit(record, ',', [&](std::string_view field, std::size_t at) {
    if (n < N) {
      fields[n] = field;
      offsets[n] = at;
    }
    ++n;
    return true;
  });
  return n;
}

Status ParseInt32Field(std::string_view what, std::size_t device, std::string_view name,
                       std::string_view text, std::size_t offset, std::int32_t& out) {
  auto v = ParseGoInt(text, 32);
  if (!v) return FieldError(what, device, name, "not an int32:", text, offset);
  out = static_cast<std::int32_t>(*v);
  return Status();
}

Status ParseHealthField(std::string_view what, std::size_t device, std::string_view text,
                        std::size_t offset, bool& out) {
  auto v = ParseGoBool(text);
  if (!v) return FieldError(what, device, "health", "not a boolean:", text, offset);
  out = *v;
  return Status();
}

}  // namespace

Result<std::vector<Device>> DecodeNodeLegacy(std::string_view value) {
  if (value.find(':') == std::string_view::npos) {
    return Status::Malformed(
        fmt::format("{}: missing device separator ':' in {}", kLegacyWhat, Quote(value)), "", 0);
  }
  std::vector<Device> devices;
  Status status;
  ForEachSplit(value, ':', [&](std::string_view record, std::size_t base) {
    if (record.empty()) return true;
    const std::size_t position = devices.size();
    if (record.find(',') == std::string_view::npos) {
      status = Status::Malformed(fmt::format("{}: device[{}]: malformed segment {} at byte {}",
                                             kLegacyWhat, position, Quote(record), base),
                                 fmt::format("device[{}]", position), base);
      return false;
    }
    std::array<std::string_view, 9> f;
    std::array<std::size_t, 9> at;
    const std::size_t n = SplitFields(record, f, at);
    if (n != 7 && n != 9) {
      status = Status::Malformed(
          fmt::format("{}: device[{}]: unexpected field count {} (want 7 or 9) at byte {}",
                      kLegacyWhat, position, n, base),
          fmt::format("device[{}]", position), base);
      return false;
    }
    Device d;
    d.id = f[0];
    d.type = f[4];
    if (!(status = ParseInt32Field(kLegacyWhat, position, "count", f[1], base + at[1], d.count))
             .ok() ||
        !(status = ParseInt32Field(kLegacyWhat, position, "devmem", f[2], base + at[2], d.devmem))
             .ok() ||
        !(status = ParseInt32Field(kLegacyWhat, position, "devcore", f[3], base + at[3], d.devcore))
             .ok() ||
        !(status = ParseInt32Field(kLegacyWhat, position, "numa", f[5], base + at[5], d.numa))
             .ok() ||
        !(status = ParseHealthField(kLegacyWhat, position, f[6], base + at[6], d.health)).ok()) {
      return false;
    }
    d.mode = "hami-core";
    if (n == 9) {
      auto index = ParseGoInt(f[7], 64);
      if (!index || *index < 0 || *index > kUint32Max) {
        status = FieldError(kLegacyWhat, position, "index",
                            "not an index in [0, 4294967295]:", f[7], base + at[7]);
        return false;
      }
      d.index = static_cast<std::uint32_t>(*index);
      d.mode = f[8];
    }
    devices.push_back(std::move(d));
    return true;
  });
  if (!status.ok()) return status;
  return devices;
}

Result<std::vector<Device>> DecodeNodeVolcano(std::string_view value) {
  if (value.find(':') == std::string_view::npos) {
    return Status::Malformed(
        fmt::format("{}: missing device separator ':' in {}", kVolcanoWhat, Quote(value)), "", 0);
  }
  std::vector<Device> devices;
  Status status;
  std::size_t piece = 0;
  ForEachSplit(value, ':', [&](std::string_view record, std::size_t base) {
    const std::size_t record_index = piece++;
    if (record.empty()) return true;
    const std::size_t position = devices.size();
    std::array<std::string_view, 6> f;
    std::array<std::size_t, 6> at;
    const std::size_t n = SplitFields(record, f, at);
    if (n != 6) {
      status = Status::Malformed(
          fmt::format("{}: device[{}]: unexpected field count {} (want 6) at byte {}", kVolcanoWhat,
                      position, n, base),
          fmt::format("device[{}]", position), base);
      return false;
    }
    Device d;
    d.id = f[0];
    d.type = f[3];
    d.mode = f[5];
    d.devcore = 100;
    d.index = static_cast<std::uint32_t>(record_index);
    if (!(status = ParseInt32Field(kVolcanoWhat, position, "count", f[1], base + at[1], d.count))
             .ok() ||
        !(status = ParseInt32Field(kVolcanoWhat, position, "devmem", f[2], base + at[2], d.devmem))
             .ok() ||
        !(status = ParseHealthField(kVolcanoWhat, position, f[4], base + at[4], d.health)).ok()) {
      return false;
    }
    // Volcano's fields are unsigned: a negative number would wrap around.
    for (const auto& [name, v, offset] :
         {std::tuple{"count", d.count, at[1]}, std::tuple{"devmem", d.devmem, at[2]}}) {
      if (v < 0) {
        status = Status::Malformed(fmt::format("{}: device[{}]: {} {} is negative at byte {}",
                                               kVolcanoWhat, position, name, v, base + offset),
                                   fmt::format("device[{}].{}", position, name), base + offset);
        return false;
      }
    }
    devices.push_back(std::move(d));
    return true;
  });
  if (!status.ok()) return status;
  return devices;
}

std::string EncodeNodeLegacy(std::span<const Device> devices) {
  std::string out;
  for (const Device& d : devices) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{},{}:", d.id, d.count, d.devmem,
                   d.devcore, d.type, d.numa, d.health, d.index, d.mode);
  }
  return out;
}

std::string EncodeNodeVolcano(std::span<const Device> devices) {
  std::string out;
  for (const Device& d : devices) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{}:", d.id, d.count, d.devmem, d.type,
                   d.health, d.mode);
  }
  return out;
}

}  // namespace devshare::internal
