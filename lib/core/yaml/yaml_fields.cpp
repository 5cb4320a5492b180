#include "yaml_fields.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "base/text.hpp"

namespace devshare::internal::yaml {

namespace {

std::string Where(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return "";
  return fmt::format(" (line {}, column {})", mark.line + 1, mark.column + 1);
}

// A plain (unquoted) scalar, as YAML typing requires for numbers and booleans.
bool IsPlainScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() != "!"; }

}  // namespace

Status FieldError(const std::string& path, const YAML::Node& node, std::string_view problem) {
  return Status::InvalidConfig(fmt::format("{}: {}{}", path, problem, Where(node)), path);
}

Status ReadString(const YAML::Node& node, const std::string& path, std::string& out) {
  if (node.IsNull()) return Status();
  if (!node.IsScalar()) return FieldError(path, node, "expected a string");
  out = node.Scalar();
  return Status();
}

Status ReadInteger(const YAML::Node& node, const std::string& path, std::int64_t min,
                   std::int64_t max, std::int64_t& out) {
  if (node.IsNull()) return Status();
  auto v = IsPlainScalar(node) ? ParseGoInt(node.Scalar(), 64) : std::nullopt;
  if (!v || *v < min || *v > max) {
    return FieldError(path, node,
                      fmt::format("expected an integer in [{}, {}], got {}", min, max,
                                  Quote(node.IsScalar() ? node.Scalar() : "<not a scalar>")));
  }
  out = *v;
  return Status();
}

Status ReadBool(const YAML::Node& node, const std::string& path, bool& out) {
  if (node.IsNull()) return Status();
  bool value = false;
  if (!IsPlainScalar(node) || !YAML::convert<bool>::decode(node, value)) {
    return FieldError(path, node, "expected true or false");
  }
  out = value;
  return Status();
}

Status ReadOptionalBool(const YAML::Node& node, const std::string& path, std::optional<bool>& out) {
  if (node.IsNull()) return Status();
  bool value = false;
  Status s = ReadBool(node, path, value);
  if (s.ok()) out = value;
  return s;
}

Status ReadOptionalDouble(const YAML::Node& node, const std::string& path,
                          std::optional<double>& out) {
  if (node.IsNull()) return Status();
  double value = 0;
  const std::string& text = node.IsScalar() ? node.Scalar() : std::string();
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!IsPlainScalar(node) || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value) || value < 0) {
    return FieldError(path, node, "expected a non-negative finite number");
  }
  out = value;
  return Status();
}

Status ReadStringList(const YAML::Node& node, const std::string& path,
                      std::vector<std::string>& out) {
  if (node.IsNull()) return Status();
  if (!node.IsSequence()) return FieldError(path, node, "expected a list of strings");
  out.clear();
  for (std::size_t i = 0; i < node.size(); ++i) {
    std::string item;
    Status s = ReadString(node[i], fmt::format("{}[{}]", path, i), item);
    if (!s.ok()) return s;
    out.push_back(std::move(item));
  }
  return Status();
}

Status ReadMap(const YAML::Node& node, const std::string& path,
               const std::map<std::string, FieldReader, std::less<>>& fields) {
  if (node.IsNull()) return Status();
  if (!node.IsMap()) return FieldError(path, node, "expected a mapping");
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) return FieldError(path, entry.first, "expected a string key");
    const std::string& key = entry.first.Scalar();
    const std::string key_path = path.empty() ? key : fmt::format("{}.{}", path, key);
    auto it = fields.find(key);
    if (it == fields.end()) return FieldError(key_path, entry.first, "unknown key");
    Status s = it->second(entry.second, key_path);
    if (!s.ok()) return s;
  }
  return Status();
}

}  // namespace devshare::internal::yaml
