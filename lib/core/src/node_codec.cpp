#include "devshare/node_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>

#include "json.hpp"
#include "text.hpp"

namespace devshare {

namespace {

using internal::ParseGoBool;
using internal::ParseGoInt;
using internal::Quote;

constexpr std::string_view kJsonWhat = "node register JSON";
constexpr std::string_view kLegacyWhat = "node register annotation";
constexpr std::string_view kVolcanoWhat = "volcano node register annotation";
constexpr std::string_view kScoreWhat = "node pair scores";
constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kUint32Max = std::numeric_limits<std::uint32_t>::max();

// ---------------------------------------------------------------------------
// JSON

// A 4 KiB arena on the stack holds the DOM of a typical 8-GPU annotation.
struct Arena {
  std::array<unsigned char, 4096> buffer;
  boost::json::monotonic_resource resource{buffer.data(), buffer.size()};
};

template <typename T>
Status ReadIntField(const boost::json::value& v, std::int64_t min, std::int64_t max,
                    std::string_view what, const std::string& field, T& out) {
  std::int64_t n = static_cast<std::int64_t>(out);
  Status s = internal::ReadInt(v, min, max, what, field, n);
  if (s.ok()) out = static_cast<T>(n);
  return s;
}

Status DecodePlacement(const boost::json::value& v, const std::string& path,
                       MigPlacement& out) {
  if (v.is_null()) return Status();
  if (!v.is_object()) return internal::TypeError(kJsonWhat, path, "an object", v);
  for (const auto& member : v.get_object()) {
    const std::string_view key = member.key();
    Status s;
    if (internal::EqualFoldAscii(key, "start")) {
      s = ReadIntField(member.value(), 0, kUint32Max, kJsonWhat, path + ".start", out.start);
    } else if (internal::EqualFoldAscii(key, "size")) {
      s = ReadIntField(member.value(), 0, kUint32Max, kJsonWhat, path + ".size", out.size);
    }
    if (!s.ok()) return s;
  }
  return Status();
}

Status DecodeMigProfile(const boost::json::value& v, const std::string& path, MigProfile& out) {
  if (!v.is_object()) return internal::TypeError(kJsonWhat, path, "an object", v);
  for (const auto& member : v.get_object()) {
    const std::string_view key = member.key();
    const boost::json::value& value = member.value();
    Status s;
    if (internal::EqualFoldAscii(key, "name")) {
      s = internal::ReadString(value, kJsonWhat, path + ".name", out.name);
    } else if (internal::EqualFoldAscii(key, "memoryMB")) {
      s = ReadIntField(value, kInt32Min, kInt32Max, kJsonWhat, path + ".memoryMB", out.memory_mb);
    } else if (internal::EqualFoldAscii(key, "core")) {
      s = ReadIntField(value, kInt32Min, kInt32Max, kJsonWhat, path + ".core", out.core);
    } else if (internal::EqualFoldAscii(key, "sliceCount")) {
      s = ReadIntField(value, 0, kUint32Max, kJsonWhat, path + ".sliceCount", out.slice_count);
    } else if (internal::EqualFoldAscii(key, "placements")) {
      if (value.is_null()) {
        out.placements.clear();
        continue;
      }
      if (!value.is_array()) {
        return internal::TypeError(kJsonWhat, path + ".placements", "an array", value);
      }
      const auto& array = value.get_array();
      out.placements.assign(array.size(), MigPlacement{});
      for (std::size_t i = 0; i < array.size(); ++i) {
        s = DecodePlacement(array[i], fmt::format("{}.placements[{}]", path, i),
                            out.placements[i]);
        if (!s.ok()) return s;
      }
    }
    if (!s.ok()) return s;
  }
  return Status();
}

Status DecodeJsonDevice(const boost::json::value& v, std::size_t position, Device& out) {
  auto path = [position](std::string_view field) {
    return fmt::format("device[{}].{}", position, field);
  };
  if (!v.is_object()) {
    return internal::TypeError(kJsonWhat, fmt::format("device[{}]", position), "an object", v);
  }
  for (const auto& member : v.get_object()) {
    const std::string_view key = member.key();
    const boost::json::value& value = member.value();
    Status s;
    if (internal::EqualFoldAscii(key, "id")) {
      s = internal::ReadString(value, kJsonWhat, path("id"), out.id);
    } else if (internal::EqualFoldAscii(key, "index")) {
      s = ReadIntField(value, 0, kUint32Max, kJsonWhat, path("index"), out.index);
    } else if (internal::EqualFoldAscii(key, "count")) {
      s = ReadIntField(value, kInt32Min, kInt32Max, kJsonWhat, path("count"), out.count);
    } else if (internal::EqualFoldAscii(key, "devmem")) {
      s = ReadIntField(value, kInt32Min, kInt32Max, kJsonWhat, path("devmem"), out.devmem);
    } else if (internal::EqualFoldAscii(key, "devcore")) {
      s = ReadIntField(value, kInt32Min, kInt32Max, kJsonWhat, path("devcore"), out.devcore);
    } else if (internal::EqualFoldAscii(key, "type")) {
      s = internal::ReadString(value, kJsonWhat, path("type"), out.type);
    } else if (internal::EqualFoldAscii(key, "numa")) {
      s = ReadIntField(value, kInt32Min, kInt32Max, kJsonWhat, path("numa"), out.numa);
    } else if (internal::EqualFoldAscii(key, "mode")) {
      s = internal::ReadString(value, kJsonWhat, path("mode"), out.mode);
    } else if (internal::EqualFoldAscii(key, "health")) {
      s = internal::ReadBool(value, kJsonWhat, path("health"), out.health);
    } else if (internal::EqualFoldAscii(key, "devicevendor")) {
      s = internal::ReadString(value, kJsonWhat, path("devicevendor"), out.vendor);
    } else if (internal::EqualFoldAscii(key, "migProfiles")) {
      if (value.is_null()) {
        out.mig_profiles.clear();
        continue;
      }
      if (!value.is_array()) {
        return internal::TypeError(kJsonWhat, path("migProfiles"), "an array", value);
      }
      const auto& array = value.get_array();
      out.mig_profiles.assign(array.size(), MigProfile{});
      for (std::size_t i = 0; i < array.size(); ++i) {
        s = DecodeMigProfile(array[i], fmt::format("device[{}].migProfiles[{}]", position, i),
                             out.mig_profiles[i]);
        if (!s.ok()) return s;
      }
    } else if (internal::EqualFoldAscii(key, "migtemplate")) {
      // Deprecated and unused by the scheduler: checked for shape only.
      if (!value.is_null() && !value.is_array()) {
        return internal::TypeError(kJsonWhat, path("migtemplate"), "an array", value);
      }
    } else if (internal::EqualFoldAscii(key, "custominfo")) {
      // Never written by the device plugins and unused by the scheduler.
      if (!value.is_null() && !value.is_object()) {
        return internal::TypeError(kJsonWhat, path("custominfo"), "an object", value);
      }
    }
    if (!s.ok()) return s;
  }
  return Status();
}

Result<std::vector<Device>> DecodeJson(std::string_view value) {
  Arena arena;
  Result<boost::json::value> doc = internal::ParseJson(
      value, kJsonWhat, boost::json::storage_ptr(&arena.resource));
  if (!doc.ok()) return doc.status();
  std::vector<Device> devices;
  if (doc->is_null()) return devices;
  if (!doc->is_array()) {
    return internal::TypeError(kJsonWhat, "value", "an array of devices", *doc);
  }
  const auto& array = doc->get_array();
  devices.resize(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    Status s = DecodeJsonDevice(array[i], i, devices[i]);
    if (!s.ok()) return s;
  }
  return devices;
}

void AppendJsonDevice(std::string& out, const Device& d) {
  out += '{';
  bool first = true;
  auto key = [&](std::string_view name) {
    if (!first) out += ',';
    first = false;
    out += '"';
    out += name;
    out += "\":";
  };
  if (!d.id.empty()) { key("id"); internal::AppendGoJsonString(out, d.id); }
  if (d.index != 0) { key("index"); fmt::format_to(std::back_inserter(out), "{}", d.index); }
  if (d.count != 0) { key("count"); fmt::format_to(std::back_inserter(out), "{}", d.count); }
  if (d.devmem != 0) { key("devmem"); fmt::format_to(std::back_inserter(out), "{}", d.devmem); }
  if (d.devcore != 0) { key("devcore"); fmt::format_to(std::back_inserter(out), "{}", d.devcore); }
  if (!d.type.empty()) { key("type"); internal::AppendGoJsonString(out, d.type); }
  if (d.numa != 0) { key("numa"); fmt::format_to(std::back_inserter(out), "{}", d.numa); }
  if (!d.mode.empty()) { key("mode"); internal::AppendGoJsonString(out, d.mode); }
  if (!d.mig_profiles.empty()) {
    key("migProfiles");
    out += '[';
    for (std::size_t i = 0; i < d.mig_profiles.size(); ++i) {
      const MigProfile& p = d.mig_profiles[i];
      if (i > 0) out += ',';
      out += "{\"name\":";
      internal::AppendGoJsonString(out, p.name);
      fmt::format_to(std::back_inserter(out), ",\"memoryMB\":{},\"core\":{},\"sliceCount\":{},",
                     p.memory_mb, p.core, p.slice_count);
      out += "\"placements\":";
      if (p.placements.empty()) {
        out += "null";
      } else {
        out += '[';
        for (std::size_t j = 0; j < p.placements.size(); ++j) {
          if (j > 0) out += ',';
          fmt::format_to(std::back_inserter(out), "{{\"start\":{},\"size\":{}}}",
                         p.placements[j].start, p.placements[j].size);
        }
        out += ']';
      }
      out += '}';
    }
    out += ']';
  }
  if (d.health) { key("health"); out += "true"; }
  out += '}';
}

// ---------------------------------------------------------------------------
// Colon formats (legacy and Volcano)

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

Result<std::vector<Device>> DecodeLegacy(std::string_view value) {
  if (value.find(':') == std::string_view::npos) {
    return Status::Malformed(
        fmt::format("{}: missing device separator ':' in {}", kLegacyWhat, Quote(value)), "", 0);
  }
  std::vector<Device> devices;
  Status status;
  internal::ForEachSplit(value, ':', [&](std::string_view record, std::size_t base) {
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
    if (!(status = ParseInt32Field(kLegacyWhat, position, "count", f[1], base + at[1], d.count)).ok() ||
        !(status = ParseInt32Field(kLegacyWhat, position, "devmem", f[2], base + at[2], d.devmem)).ok() ||
        !(status = ParseInt32Field(kLegacyWhat, position, "devcore", f[3], base + at[3], d.devcore)).ok() ||
        !(status = ParseInt32Field(kLegacyWhat, position, "numa", f[5], base + at[5], d.numa)).ok() ||
        !(status = ParseHealthField(kLegacyWhat, position, f[6], base + at[6], d.health)).ok()) {
      return false;
    }
    d.mode = "hami-core";
    if (n == 9) {
      auto index = ParseGoInt(f[7], 64);
      if (!index || *index < 0 || *index > kUint32Max) {
        status = FieldError(kLegacyWhat, position, "index", "not an index in [0, 4294967295]:",
                            f[7], base + at[7]);
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

Result<std::vector<Device>> DecodeVolcano(std::string_view value) {
  if (value.find(':') == std::string_view::npos) {
    return Status::Malformed(
        fmt::format("{}: missing device separator ':' in {}", kVolcanoWhat, Quote(value)), "", 0);
  }
  std::vector<Device> devices;
  Status status;
  std::size_t piece = 0;
  internal::ForEachSplit(value, ':', [&](std::string_view record, std::size_t base) {
    const std::size_t record_index = piece++;
    if (record.empty()) return true;
    const std::size_t position = devices.size();
    std::array<std::string_view, 6> f;
    std::array<std::size_t, 6> at;
    const std::size_t n = SplitFields(record, f, at);
    if (n != 6) {
      status = Status::Malformed(
          fmt::format("{}: device[{}]: unexpected field count {} (want 6) at byte {}",
                      kVolcanoWhat, position, n, base),
          fmt::format("device[{}]", position), base);
      return false;
    }
    Device d;
    d.id = f[0];
    d.type = f[3];
    d.mode = f[5];
    d.devcore = 100;
    d.index = static_cast<std::uint32_t>(record_index);
    if (!(status = ParseInt32Field(kVolcanoWhat, position, "count", f[1], base + at[1], d.count)).ok() ||
        !(status = ParseInt32Field(kVolcanoWhat, position, "devmem", f[2], base + at[2], d.devmem)).ok() ||
        !(status = ParseHealthField(kVolcanoWhat, position, f[4], base + at[4], d.health)).ok()) {
      return false;
    }
    devices.push_back(std::move(d));
    return true;
  });
  if (!status.ok()) return status;
  return devices;
}

RegisterFormat DetectFormat(std::string_view value) {
  const std::string_view trimmed = internal::TrimSpace(value);
  if (trimmed.empty() || trimmed.front() == '[' || trimmed.front() == '{' ||
      trimmed == "null") {
    return RegisterFormat::kJson;
  }
  // The first non-empty record decides between Volcano (6 fields) and legacy.
  std::size_t fields = 0;
  internal::ForEachSplit(value, ':', [&](std::string_view record, std::size_t) {
    if (record.empty()) return true;
    fields = internal::CountChar(record, ',') + 1;
    return false;
  });
  return fields == 6 ? RegisterFormat::kVolcano : RegisterFormat::kLegacy;
}

}  // namespace

Result<RegisterFormat> ParseRegisterFormat(std::string_view name) {
  if (name == "auto") return RegisterFormat::kAuto;
  if (name == "json") return RegisterFormat::kJson;
  if (name == "legacy") return RegisterFormat::kLegacy;
  if (name == "volcano") return RegisterFormat::kVolcano;
  return Status::InvalidArgument(fmt::format(
      "unknown register format {} (want auto, json, legacy or volcano)", Quote(name)));
}

std::string_view RegisterFormatName(RegisterFormat format) {
  switch (format) {
    case RegisterFormat::kAuto: return "auto";
    case RegisterFormat::kJson: return "json";
    case RegisterFormat::kLegacy: return "legacy";
    case RegisterFormat::kVolcano: return "volcano";
  }
  return "unknown";
}

Result<std::vector<Device>> DecodeNodeDevices(std::string_view value, RegisterFormat format) {
  if (format == RegisterFormat::kAuto) format = DetectFormat(value);
  switch (format) {
    case RegisterFormat::kJson: return DecodeJson(value);
    case RegisterFormat::kVolcano: return DecodeVolcano(value);
    case RegisterFormat::kLegacy:
    case RegisterFormat::kAuto: break;
  }
  return DecodeLegacy(value);
}

std::string EncodeNodeDevices(std::span<const Device> devices, RegisterFormat format) {
  std::string out;
  auto it = std::back_inserter(out);
  switch (format) {
    case RegisterFormat::kAuto:
    case RegisterFormat::kJson:
      out.reserve(devices.size() * 160 + 2);
      out += '[';
      for (std::size_t i = 0; i < devices.size(); ++i) {
        if (i > 0) out += ',';
        AppendJsonDevice(out, devices[i]);
      }
      out += ']';
      break;
    case RegisterFormat::kLegacy:
      for (const Device& d : devices) {
        fmt::format_to(it, "{},{},{},{},{},{},{},{},{}:", d.id, d.count, d.devmem, d.devcore,
                       d.type, d.numa, d.health, d.index, d.mode);
      }
      break;
    case RegisterFormat::kVolcano:
      for (const Device& d : devices) {
        fmt::format_to(it, "{},{},{},{},{},{}:", d.id, d.count, d.devmem, d.type, d.health,
                       d.mode);
      }
      break;
  }
  return out;
}

Result<std::vector<DevicePairScore>> DecodePairScores(std::string_view value) {
  Arena arena;
  Result<boost::json::value> doc =
      internal::ParseJson(value, kScoreWhat, boost::json::storage_ptr(&arena.resource));
  if (!doc.ok()) return doc.status();
  std::vector<DevicePairScore> out;
  if (doc->is_null()) return out;
  if (!doc->is_array()) return internal::TypeError(kScoreWhat, "value", "an array", *doc);
  const auto& array = doc->get_array();
  out.resize(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string path = fmt::format("entry[{}]", i);
    if (!array[i].is_object()) return internal::TypeError(kScoreWhat, path, "an object", array[i]);
    for (const auto& member : array[i].get_object()) {
      const boost::json::value& v = member.value();
      if (internal::EqualFoldAscii(member.key(), "uuid")) {
        Status s = internal::ReadString(v, kScoreWhat, path + ".uuid", out[i].uuid);
        if (!s.ok()) return s;
      } else if (internal::EqualFoldAscii(member.key(), "score")) {
        out[i].scores.clear();
        if (v.is_null()) continue;
        if (!v.is_object()) return internal::TypeError(kScoreWhat, path + ".score", "an object", v);
        for (const auto& peer : v.get_object()) {
          std::int64_t score = 0;
          const std::string peer_path = fmt::format("{}.score[{}]", path, Quote(peer.key()));
          Status s = internal::ReadInt(peer.value(), std::numeric_limits<std::int64_t>::min(),
                                       std::numeric_limits<std::int64_t>::max(), kScoreWhat,
                                       peer_path, score);
          if (!s.ok()) return s;
          out[i].scores.emplace_back(std::string(peer.key()), score);
        }
        // A JSON object may repeat a key; as in Go, the last one wins.
        auto& scores = out[i].scores;
        std::stable_sort(scores.begin(), scores.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        std::vector<std::pair<std::string, std::int64_t>> unique;
        unique.reserve(scores.size());
        for (auto& entry : scores) {
          if (!unique.empty() && unique.back().first == entry.first) {
            unique.back().second = entry.second;
          } else {
            unique.push_back(std::move(entry));
          }
        }
        scores = std::move(unique);
      }
    }
  }
  return out;
}

std::string EncodePairScores(std::span<const DevicePairScore> scores) {
  std::string out = "[";
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (i > 0) out += ',';
    out += '{';
    bool wrote = false;
    if (!scores[i].uuid.empty()) {
      out += "\"uuid\":";
      internal::AppendGoJsonString(out, scores[i].uuid);
      wrote = true;
    }
    if (!scores[i].scores.empty()) {
      if (wrote) out += ',';
      out += "\"score\":{";
      for (std::size_t j = 0; j < scores[i].scores.size(); ++j) {
        if (j > 0) out += ',';
        internal::AppendGoJsonString(out, scores[i].scores[j].first);
        fmt::format_to(std::back_inserter(out), ":{}", scores[i].scores[j].second);
      }
      out += '}';
    }
    out += '}';
  }
  out += ']';
  return out;
}

}  // namespace devshare
