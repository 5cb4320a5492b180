// A node's register annotation: its format named and detected, and each
// format's decoder and encoder chosen (node_json.hpp, node_colon.hpp).
#include "devshare/node_codec.hpp"

#include "base/text.hpp"
#include "codec/node_colon.hpp"
#include "codec/node_json.hpp"

namespace devshare {

namespace {

RegisterFormat DetectFormat(std::string_view value) {
  const std::string_view trimmed = internal::TrimSpace(value);
  if (trimmed.empty() || trimmed.front() == '[' || trimmed.front() == '{' || trimmed == "null") {
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
  return kRegisterFormatNames.Parse(name, "register format");
}

std::string_view RegisterFormatName(RegisterFormat format) {
  return kRegisterFormatNames.Name(format);
}

Result<std::vector<Device>> DecodeNodeDevices(std::string_view value, RegisterFormat format) {
  if (format == RegisterFormat::kAuto) format = DetectFormat(value);
  switch (format) {
    case RegisterFormat::kJson: {
      if (auto fast = internal::DecodeNodeJsonFast(value)) return std::move(*fast);
      return internal::DecodeNodeJsonFull(value);
    }
    case RegisterFormat::kVolcano:
      return internal::DecodeNodeVolcano(value);
    case RegisterFormat::kLegacy:
    case RegisterFormat::kAuto:
      break;
  }
  return internal::DecodeNodeLegacy(value);
}

std::string EncodeNodeDevices(std::span<const Device> devices, RegisterFormat format) {
  switch (format) {
    case RegisterFormat::kLegacy:
      return internal::EncodeNodeLegacy(devices);
    case RegisterFormat::kVolcano:
      return internal::EncodeNodeVolcano(devices);
    case RegisterFormat::kAuto:
    case RegisterFormat::kJson:
      break;
  }
  return internal::EncodeNodeJson(devices);
}

}  // namespace devshare
