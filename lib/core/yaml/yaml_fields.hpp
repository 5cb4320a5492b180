// Reading YAML where every key is known and every value has the right shape
// — the device config (lib/core) and the simulator's scenario files
// (lib/sim). An internal static library of its own, linked into both, never
// exported from libdevshare.
//
// Errors are kInvalidConfig, "<path>: <problem> (line L, column C)", with
// the path (for example `nvidia.defaultMemory`) as the status field; the
// caller says which file the path is in.
#ifndef DEVSHARE_YAML_FIELDS_HPP_
#define DEVSHARE_YAML_FIELDS_HPP_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/status.hpp"

namespace devshare::internal::yaml {

// The error for `path` at `node`.
Status FieldError(const std::string& path, const YAML::Node& node, std::string_view problem);

// Each reader leaves `out` as it is when the node is null (the key given
// without a value).
Status ReadString(const YAML::Node& node, const std::string& path, std::string& out);
// A plain integer within [min, max].
Status ReadInteger(const YAML::Node& node, const std::string& path, std::int64_t min,
                   std::int64_t max, std::int64_t& out);
Status ReadBool(const YAML::Node& node, const std::string& path, bool& out);
Status ReadOptionalBool(const YAML::Node& node, const std::string& path, std::optional<bool>& out);
// A non-negative finite number.
Status ReadOptionalDouble(const YAML::Node& node, const std::string& path,
                          std::optional<double>& out);
Status ReadStringList(const YAML::Node& node, const std::string& path,
                      std::vector<std::string>& out);

template <typename T>
Status ReadInt(const YAML::Node& node, const std::string& path, T& out) {
  std::int64_t value = out;
  Status s =
      ReadInteger(node, path, static_cast<std::int64_t>(std::numeric_limits<T>::min()),
                  static_cast<std::int64_t>(std::min<std::uint64_t>(
                      std::numeric_limits<T>::max(), std::numeric_limits<std::int64_t>::max())),
                  value);
  if (s.ok()) out = static_cast<T>(value);
  return s;
}

template <typename T>
Status ReadOptionalInt(const YAML::Node& node, const std::string& path, std::optional<T>& out) {
  if (node.IsNull()) return Status();
  T value{};
  Status s = ReadInt(node, path, value);
  if (s.ok()) out = value;
  return s;
}

using FieldReader = std::function<Status(const YAML::Node&, const std::string&)>;

// Reads every key of the map `node` through `fields`; an unknown key or a
// non-map node is an error. `path` prefixes the keys' paths.
Status ReadMap(const YAML::Node& node, const std::string& path,
               const std::map<std::string, FieldReader, std::less<>>& fields);

inline FieldReader String(std::string& out) {
  return [&out](const YAML::Node& n, const std::string& p) { return ReadString(n, p, out); };
}
template <typename T>
FieldReader Int(T& out) {
  return [&out](const YAML::Node& n, const std::string& p) { return ReadInt(n, p, out); };
}
inline FieldReader Bool(bool& out) {
  return [&out](const YAML::Node& n, const std::string& p) { return ReadBool(n, p, out); };
}

}  // namespace devshare::internal::yaml

#endif  // DEVSHARE_YAML_FIELDS_HPP_
