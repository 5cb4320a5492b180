// The node register JSON's full decoder (every form Go's encoding/json
// accepts, every error) and its encoder (node_json.hpp).
#include "codec/node_json.hpp"

#include <fmt/format.h>

#include <boost/json/basic_parser_impl.hpp>
#include <cstddef>
#include <limits>

#include "base/json.hpp"
#include "base/text.hpp"

namespace devshare::internal {

namespace {

constexpr std::string_view kJsonWhat = "node register JSON";
constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kUint32Max = std::numeric_limits<std::uint32_t>::max();

__extension__ using i128 = __int128;  // holds every int64 and uint64

// ---------------------------------------------------------------------------
// JSON: a streaming reader that fills Devices as the parser goes, with Go's
// decoding rules (keys match case-insensitively, unknown keys are ignored,
// `null` leaves a field at zero, integers must be integers in range).

enum class Ctx : std::uint8_t {
  kTop,         // before the document's value
  kDevices,     // the top-level array
  kDevice,      // one device object
  kProfiles,    // device.migProfiles
  kProfile,     // one MIG profile
  kPlacements,  // profile.placements
  kPlacement,   // one placement
  kSkip,        // inside a value that is not read (unknown key, migtemplate, custominfo)
};

enum class Field : std::uint8_t {
  kUnknown,
  kId,
  kIndex,
  kCount,
  kDevmem,
  kDevcore,
  kType,
  kNuma,
  kMode,
  kHealth,
  kVendor,
  kMigProfiles,
  kMigTemplate,
  kCustomInfo,
  kName,
  kMemoryMB,
  kCore,
  kSliceCount,
  kPlacements,
  kStart,
  kSize,
};

struct FieldName {
  std::string_view name;
  Field field;
};
constexpr FieldName kDeviceFields[] = {
    {"id", Field::kId},
    {"index", Field::kIndex},
    {"count", Field::kCount},
    {"devmem", Field::kDevmem},
    {"devcore", Field::kDevcore},
    {"type", Field::kType},
    {"numa", Field::kNuma},
    {"mode", Field::kMode},
    {"health", Field::kHealth},
    {"devicevendor", Field::kVendor},
    {"migProfiles", Field::kMigProfiles},
    {"migtemplate", Field::kMigTemplate},
    {"custominfo", Field::kCustomInfo},
};
constexpr FieldName kProfileFields[] = {
    {"name", Field::kName},
    {"memoryMB", Field::kMemoryMB},
    {"core", Field::kCore},
    {"sliceCount", Field::kSliceCount},
    {"placements", Field::kPlacements},
};
constexpr FieldName kPlacementFields[] = {{"start", Field::kStart}, {"size", Field::kSize}};

// The field a key names: the exact spelling first (what the plugins write),
// then, as Go does, any ASCII case.
template <std::size_t N>
Field Lookup(const FieldName (&fields)[N], std::string_view key) {
  for (const FieldName& f : fields) {
    if (f.name == key) return f.field;
  }
  for (const FieldName& f : fields) {
    if (internal::EqualFoldAscii(f.name, key)) return f.field;
  }
  return Field::kUnknown;
}

// What a JSON value is, for messages (as internal::KindName).
enum class Kind { kNull, kBool, kInteger, kDouble, kString, kArray, kObject };
std::string_view KindText(Kind k) {
  switch (k) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "a boolean";
    case Kind::kInteger:
      return "an integer";
    case Kind::kDouble:
      return "a non-integer number";
    case Kind::kString:
      return "a string";
    case Kind::kArray:
      return "an array";
    case Kind::kObject:
      return "an object";
  }
  return "a value";
}

class DeviceJsonHandler {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  explicit DeviceJsonHandler(std::vector<Device>* out) : out_(out) {
    stack_.push_back({Ctx::kTop, 0});
  }

  // Set when the handler stopped the parser; the message lacks the offset,
  // which the caller adds.
  std::string error_message;
  std::string error_field;

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_comment_part(std::string_view, boost::system::error_code&) { return true; }
  bool on_comment(std::string_view, boost::system::error_code&) { return true; }
  bool on_number_part(std::string_view, boost::system::error_code&) { return true; }

  bool on_key_part(std::string_view s, std::size_t, boost::system::error_code&) {
    if (Top() != Ctx::kSkip) part_.append(s);
    return true;
  }
  bool on_key(std::string_view s, std::size_t, boost::system::error_code&) {
    if (Top() == Ctx::kSkip) return true;
    std::string_view key = s;
    if (!part_.empty()) {
      part_.append(s);
      key = part_;
    }
    switch (Top()) {
      case Ctx::kDevice:
        field_ = Lookup(kDeviceFields, key);
        break;
      case Ctx::kProfile:
        field_ = Lookup(kProfileFields, key);
        break;
      case Ctx::kPlacement:
        field_ = Lookup(kPlacementFields, key);
        break;
      default:
        field_ = Field::kUnknown;
        break;
    }
    part_.clear();
    return true;
  }

  bool on_string_part(std::string_view s, std::size_t, boost::system::error_code&) {
    if (Top() != Ctx::kSkip) part_.append(s);
    return true;
  }
  bool on_string(std::string_view s, std::size_t, boost::system::error_code& ec) {
    if (Top() == Ctx::kSkip) return true;
    std::string_view value = s;
    if (!part_.empty()) {
      part_.append(s);
      value = part_;
    }
    const bool ok = String(value, ec);
    part_.clear();
    return ok;
  }

  bool on_int64(std::int64_t v, std::string_view, boost::system::error_code& ec) {
    return Integer(static_cast<i128>(v), ec);
  }
  bool on_uint64(std::uint64_t v, std::string_view, boost::system::error_code& ec) {
    return Integer(static_cast<i128>(v), ec);
  }
  bool on_double(double, std::string_view, boost::system::error_code& ec) {
    return Scalar(Kind::kDouble, ec);
  }
  bool on_bool(bool b, boost::system::error_code& ec) {
    if (Top() == Ctx::kSkip) return true;
    if (Top() == Ctx::kDevice && field_ == Field::kHealth) {
      Current().health = b;
      return true;
    }
    return Scalar(Kind::kBool, ec);
  }
  bool on_null(boost::system::error_code& ec) {
    switch (Top()) {
      case Ctx::kSkip:
        return true;
      case Ctx::kTop:
        return true;  // `null`: no devices
      case Ctx::kDevices:
        return Fail(ec, DevicePath(), "an object", Kind::kNull);
      case Ctx::kProfiles:
        return Fail(ec, ProfilePath(), "an object", Kind::kNull);
      case Ctx::kPlacements:
        Profile().placements.emplace_back();
        return true;  // a zero placement
      case Ctx::kDevice:
        if (field_ == Field::kMigProfiles) Current().mig_profiles.clear();
        return true;
      case Ctx::kProfile:
        if (field_ == Field::kPlacements) Profile().placements.clear();
        return true;
      case Ctx::kPlacement:
        return true;
    }
    return true;
  }

  bool on_object_begin(boost::system::error_code& ec) {
    switch (Top()) {
      case Ctx::kSkip:
        ++skip_depth_;
        return true;
      case Ctx::kTop:
        return Fail(ec, "value", "an array of devices", Kind::kObject);
      case Ctx::kDevices:
        out_->emplace_back();
        Push(Ctx::kDevice);
        return true;
      case Ctx::kProfiles:
        Current().mig_profiles.emplace_back();
        Push(Ctx::kProfile);
        return true;
      case Ctx::kPlacements:
        Profile().placements.emplace_back();
        Push(Ctx::kPlacement);
        return true;
      case Ctx::kDevice:
        if (field_ == Field::kCustomInfo || field_ == Field::kUnknown) return Skip();
        return Scalar(Kind::kObject, ec);
      case Ctx::kProfile:
      case Ctx::kPlacement:
        if (field_ == Field::kUnknown) return Skip();
        return Scalar(Kind::kObject, ec);
    }
    return true;
  }
  bool on_object_end(std::size_t, boost::system::error_code&) { return End(); }

  bool on_array_begin(boost::system::error_code& ec) {
    switch (Top()) {
      case Ctx::kSkip:
        ++skip_depth_;
        return true;
      case Ctx::kTop:
        Push(Ctx::kDevices);
        return true;
      case Ctx::kDevices:
        return Fail(ec, DevicePath(), "an object", Kind::kArray);
      case Ctx::kProfiles:
        return Fail(ec, ProfilePath(), "an object", Kind::kArray);
      case Ctx::kPlacements:
        return Fail(ec, PlacementPath(), "an object", Kind::kArray);
      case Ctx::kDevice:
        if (field_ == Field::kMigProfiles) {
          Current().mig_profiles.clear();
          Push(Ctx::kProfiles);
          return true;
        }
        if (field_ == Field::kMigTemplate || field_ == Field::kUnknown) return Skip();
        return Scalar(Kind::kArray, ec);
      case Ctx::kProfile:
        if (field_ == Field::kPlacements) {
          Profile().placements.clear();
          Push(Ctx::kPlacements);
          return true;
        }
        if (field_ == Field::kUnknown) return Skip();
        return Scalar(Kind::kArray, ec);
      case Ctx::kPlacement:
        if (field_ == Field::kUnknown) return Skip();
        return Scalar(Kind::kArray, ec);
    }
    return true;
  }
  bool on_array_end(std::size_t, boost::system::error_code&) { return End(); }

 private:
  struct Frame {
    Ctx ctx;
    std::size_t index;  // for arrays: the element being read
  };

  Ctx Top() const { return stack_.back().ctx; }
  Device& Current() { return out_->back(); }
  MigProfile& Profile() { return Current().mig_profiles.back(); }

  void Push(Ctx ctx) {
    stack_.push_back({ctx, 0});
    field_ = Field::kUnknown;
  }
  bool Skip() {
    stack_.push_back({Ctx::kSkip, 0});
    skip_depth_ = 1;
    return true;
  }
  // The end of an object or array.
  bool End() {
    if (Top() == Ctx::kSkip && --skip_depth_ > 0) return true;
    stack_.pop_back();
    // The finished value was an element of the array now on top.
    Frame& parent = stack_.back();
    if (parent.ctx == Ctx::kDevices || parent.ctx == Ctx::kProfiles ||
        parent.ctx == Ctx::kPlacements) {
      ++parent.index;
    }
    // Back in an object: its key was consumed by the value just ended.
    field_ = Field::kUnknown;
    return true;
  }

  // Paths are built only for errors.
  std::string DevicePath() const { return fmt::format("device[{}]", stack_[1].index); }
  std::string ProfilePath() const {
    return fmt::format("device[{}].migProfiles[{}]", stack_[1].index, stack_[3].index);
  }
  std::string PlacementPath() const {
    return fmt::format("device[{}].migProfiles[{}].placements[{}]", stack_[1].index,
                       stack_[3].index, stack_[5].index);
  }
  std::string FieldPath(std::string_view name) const {
    switch (Top()) {
      case Ctx::kDevice:
        return fmt::format("{}.{}", DevicePath(), name);
      case Ctx::kProfile:
        return fmt::format("{}.{}", ProfilePath(), name);
      case Ctx::kPlacement:
        return fmt::format("{}.{}", PlacementPath(), name);
      default:
        return std::string(name);
    }
  }
  std::string_view FieldText() const {
    for (const FieldName& f : kDeviceFields)
      if (f.field == field_) return f.name;
    for (const FieldName& f : kProfileFields)
      if (f.field == field_) return f.name;
    for (const FieldName& f : kPlacementFields)
      if (f.field == field_) return f.name;
    return "value";
  }

  bool Fail(boost::system::error_code& ec, std::string field, std::string_view expected, Kind got) {
    error_message =
        fmt::format("{}: {}: expected {}, got {}", kJsonWhat, field, expected, KindText(got));
    error_field = std::move(field);
    ec = boost::system::errc::make_error_code(boost::system::errc::invalid_argument);
    return false;
  }

  // A scalar (or container) where the current field wants something else,
  // or where no field is read.
  bool Scalar(Kind kind, boost::system::error_code& ec) {
    switch (Top()) {
      case Ctx::kSkip:
        return true;
      case Ctx::kTop:
        return Fail(ec, "value", "an array of devices", kind);
      case Ctx::kDevices:
        return Fail(ec, DevicePath(), "an object", kind);
      case Ctx::kProfiles:
        return Fail(ec, ProfilePath(), "an object", kind);
      case Ctx::kPlacements:
        return Fail(ec, PlacementPath(), "an object", kind);
      default:
        break;
    }
    std::string_view expected;
    switch (field_) {
      case Field::kUnknown:
        return true;  // unknown keys are ignored
      case Field::kId:
      case Field::kType:
      case Field::kMode:
      case Field::kVendor:
      case Field::kName:
        expected = "a string";
        break;
      case Field::kHealth:
        expected = "a boolean";
        break;
      case Field::kMigProfiles:
      case Field::kMigTemplate:
      case Field::kPlacements:
        expected = "an array";
        break;
      case Field::kCustomInfo:
        expected = "an object";
        break;
      default:
        expected = "an integer";
        break;
    }
    return Fail(ec, FieldPath(FieldText()), expected, kind);
  }

  bool String(std::string_view value, boost::system::error_code& ec) {
    switch (Top()) {
      case Ctx::kDevice:
        switch (field_) {
          case Field::kId:
            Current().id = std::string(value);
            return true;
          case Field::kType:
            Current().type = std::string(value);
            return true;
          case Field::kMode:
            Current().mode = std::string(value);
            return true;
          case Field::kVendor:
            Current().vendor = std::string(value);
            return true;
          default:
            break;
        }
        break;
      case Ctx::kProfile:
        if (field_ == Field::kName) {
          Profile().name = std::string(value);
          return true;
        }
        break;
      default:
        break;
    }
    return Scalar(Kind::kString, ec);
  }

  template <typename T>
  bool Store(i128 v, std::int64_t min, std::int64_t max, T& out, boost::system::error_code& ec) {
    if (v < min || v > max) {
      const std::string field = FieldPath(FieldText());
      // The parser delivers int64 or uint64 values, so one of them holds v.
      const std::string text = v < 0 ? std::to_string(static_cast<std::int64_t>(v))
                                     : std::to_string(static_cast<std::uint64_t>(v));
      error_message =
          fmt::format("{}: {}: {} is out of range [{}, {}]", kJsonWhat, field, text, min, max);
      error_field = field;
      ec = boost::system::errc::make_error_code(boost::system::errc::invalid_argument);
      return false;
    }
    out = static_cast<T>(v);
    return true;
  }

  bool Integer(i128 v, boost::system::error_code& ec) {
    switch (Top()) {
      case Ctx::kDevice: {
        Device& d = Current();
        switch (field_) {
          case Field::kIndex:
            return Store(v, 0, kUint32Max, d.index, ec);
          case Field::kCount:
            return Store(v, kInt32Min, kInt32Max, d.count, ec);
          case Field::kDevmem:
            return Store(v, kInt32Min, kInt32Max, d.devmem, ec);
          case Field::kDevcore:
            return Store(v, kInt32Min, kInt32Max, d.devcore, ec);
          case Field::kNuma:
            return Store(v, kInt32Min, kInt32Max, d.numa, ec);
          default:
            break;
        }
        break;
      }
      case Ctx::kProfile: {
        MigProfile& p = Profile();
        switch (field_) {
          case Field::kMemoryMB:
            return Store(v, kInt32Min, kInt32Max, p.memory_mb, ec);
          case Field::kCore:
            return Store(v, kInt32Min, kInt32Max, p.core, ec);
          case Field::kSliceCount:
            return Store(v, 0, kUint32Max, p.slice_count, ec);
          default:
            break;
        }
        break;
      }
      case Ctx::kPlacement: {
        MigPlacement& p = Profile().placements.back();
        if (field_ == Field::kStart) return Store(v, 0, kUint32Max, p.start, ec);
        if (field_ == Field::kSize) return Store(v, 0, kUint32Max, p.size, ec);
        break;
      }
      default:
        break;
    }
    return Scalar(Kind::kInteger, ec);
  }

  std::vector<Device>* out_;
  std::vector<Frame> stack_;
  Field field_ = Field::kUnknown;
  std::size_t skip_depth_ = 0;
  std::string part_;  // a key or string delivered in parts
};

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
  if (!d.id.empty()) {
    key("id");
    internal::AppendGoJsonString(out, d.id);
  }
  if (d.index != 0) {
    key("index");
    fmt::format_to(std::back_inserter(out), "{}", d.index);
  }
  if (d.count != 0) {
    key("count");
    fmt::format_to(std::back_inserter(out), "{}", d.count);
  }
  if (d.devmem != 0) {
    key("devmem");
    fmt::format_to(std::back_inserter(out), "{}", d.devmem);
  }
  if (d.devcore != 0) {
    key("devcore");
    fmt::format_to(std::back_inserter(out), "{}", d.devcore);
  }
  if (!d.type.empty()) {
    key("type");
    internal::AppendGoJsonString(out, d.type);
  }
  if (d.numa != 0) {
    key("numa");
    fmt::format_to(std::back_inserter(out), "{}", d.numa);
  }
  if (!d.mode.empty()) {
    key("mode");
    internal::AppendGoJsonString(out, d.mode);
  }
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
  if (d.health) {
    key("health");
    out += "true";
  }
  out += '}';
}

}  // namespace

Result<std::vector<Device>> DecodeNodeJsonFull(std::string_view value) {
  std::vector<Device> devices;
  devices.reserve(CountChar(value, '{'));  // at least one per device
  boost::json::basic_parser<DeviceJsonHandler> parser(boost::json::parse_options{}, &devices);
  boost::system::error_code ec;
  const std::size_t consumed = parser.write_some(false, value.data(), value.size(), ec);
  DeviceJsonHandler& handler = parser.handler();
  if (!handler.error_message.empty()) {
    return Status::Malformed(fmt::format("{} at byte {}", handler.error_message, consumed),
                             std::move(handler.error_field), consumed);
  }
  if (ec) {
    return Status::Malformed(
        fmt::format("{}: invalid JSON at byte {}: {}", kJsonWhat, consumed, ec.message()), "",
        consumed);
  }
  std::size_t rest = consumed;
  while (rest < value.size() && (value[rest] == ' ' || value[rest] == '\t' || value[rest] == '\n' ||
                                 value[rest] == '\r')) {
    ++rest;
  }
  if (rest != value.size()) {
    return Status::Malformed(
        fmt::format("{}: unexpected data after the JSON value at byte {}", kJsonWhat, rest), "",
        rest);
  }
  return devices;
}

std::string EncodeNodeJson(std::span<const Device> devices) {
  std::string out;
  out.reserve(devices.size() * 160 + 2);
  out += '[';
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonDevice(out, devices[i]);
  }
  out += ']';
  return out;
}

}  // namespace devshare::internal
