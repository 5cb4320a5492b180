// Private (dra layer): the runtime values of the CEL selector evaluator —
// CEL's null, bool, int, uint, double, string, list and map, and the
// Kubernetes quantity and semantic version types. Values are immutable
// once built; lists and maps are shared, so copying a Value is cheap.
#ifndef DEVSHARE_SRC_DRA_CEL_VALUE_HPP_
#define DEVSHARE_SRC_DRA_CEL_VALUE_HPP_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dra/cel/semver.hpp"
#include "k8s/quantity.hpp"

namespace devshare::dra::cel {

struct Value;
using List = std::vector<Value>;
using Entries = std::map<std::string, Value, std::less<>>;

struct Null {};

struct MapValue {
  std::shared_ptr<const Entries> entries;
  // A missing key reads as an empty map: device.attributes and
  // device.capacity (newStringInterfaceMapWithDefault in compile.go).
  bool default_empty = false;
};

// A kubernetes.Quantity value (apiserver/pkg/cel/quantity.go).
struct QuantityValue {
  k8s::Quantity quantity;
  // Add and sub return a *apiservercel.Quantity, whose Equal the value
  // type's Equal refuses as "no such overload".
  bool boxed = false;
};

// The alternatives in the order RuntimeTypeName and GoTypeName index.
struct Value {
  std::variant<Null, bool, std::int64_t, std::uint64_t, double, std::string,
               std::shared_ptr<const List>, MapValue, QuantityValue, std::shared_ptr<const Semver>>
      v;
};

// The alternative of `v` of type T, or nullptr.
template <typename T>
const T* As(const Value& v) {
  return std::get_if<T>(&v.v);
}

// The type's name as CEL prints it (TypeName()).
inline std::string_view RuntimeTypeName(const Value& v) {
  static constexpr std::string_view kNames[] = {"null_type",
                                                "bool",
                                                "int",
                                                "uint",
                                                "double",
                                                "string",
                                                "list",
                                                "map",
                                                "kubernetes.Quantity",
                                                "kubernetes.Semver"};
  return kNames[v.v.index()];
}

// The Go type of a value (as %T prints it).
inline std::string_view GoTypeName(const Value& v) {
  if (const auto* q = As<QuantityValue>(v); q && q->boxed) return "*cel.Quantity";
  static constexpr std::string_view kNames[] = {
      "types.Null",   "types.Bool",      "types.Int",      "types.Uint",   "types.Double",
      "types.String", "*types.baseList", "*types.baseMap", "cel.Quantity", "cel.Semver"};
  return kNames[v.v.index()];
}

inline Value SemverValue(Semver v) { return Value{std::make_shared<const Semver>(std::move(v))}; }

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_VALUE_HPP_
