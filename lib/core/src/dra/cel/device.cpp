// The `device` variable of a CEL selector (device.hpp).
#include "dra/cel/device.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "k8s/quantity.hpp"

namespace devshare::dra::cel {
namespace {

// An attribute's value as CEL sees it; nullopt with `error` set for a
// version that is not a semantic version.
std::optional<Value> AttributeValue(const dra::AttributeValue& attribute, std::string& error) {
  auto version = [&](const Version& v) -> std::optional<Value> {
    auto parsed = ParseSemver(v.text);
    if (auto* e = std::get_if<std::string>(&parsed)) {
      error = "parse semantic version: " + *e;
      return std::nullopt;
    }
    return SemverValue(std::get<Semver>(std::move(parsed)));
  };
  auto scalar = [&](const auto& x) -> std::optional<Value> {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, Version>) {
      return version(x);
    } else {
      return Value{x};
    }
  };
  return std::visit(
      [&](const auto& x) -> std::optional<Value> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<std::int64_t>> ||
                      std::is_same_v<T, std::vector<bool>> ||
                      std::is_same_v<T, std::vector<std::string>> ||
                      std::is_same_v<T, std::vector<Version>>) {
          auto list = std::make_shared<List>();
          for (const auto& e : x) {
            auto v = scalar(static_cast<typename T::value_type>(e));
            if (!v) return std::nullopt;
            list->push_back(std::move(*v));
          }
          return Value{std::shared_ptr<const List>(std::move(list))};
        } else {
          return scalar(x);
        }
      },
      attribute);
}

}  // namespace

Result<Value> DeviceValue(std::string_view driver, const Device& device) {
  std::map<std::string, Entries, std::less<>> attributes;
  for (const auto& [key, attribute] : device.attributes) {
    std::string error;
    auto value = AttributeValue(attribute, error);
    if (!value) return Status::InvalidArgument(fmt::format("attribute {}: {}", key, error));
    const QualifiedName q = SplitQualifiedName(key, driver);
    attributes[std::string(q.domain)][std::string(q.name)] = std::move(*value);
  }
  std::map<std::string, Entries, std::less<>> capacity;
  for (const auto& [key, c] : device.capacity) {
    const QualifiedName q = SplitQualifiedName(key, driver);
    capacity[std::string(q.domain)][std::string(q.name)] =
        Value{QuantityValue{k8s::QuantityOfCanonicalMilli(c.value.milli), false}};
  }
  auto outer = [](std::map<std::string, Entries, std::less<>>& domains) {
    auto entries = std::make_shared<Entries>();
    for (auto& [domain, inner] : domains) {
      (*entries)[domain] =
          Value{MapValue{std::make_shared<const Entries>(std::move(inner)), false}};
    }
    return Value{MapValue{std::move(entries), true}};
  };
  auto fields = std::make_shared<Entries>();
  (*fields)["driver"] = Value{std::string(driver)};
  (*fields)["allowMultipleAllocations"] = Value{device.allow_multiple_allocations};
  (*fields)["attributes"] = outer(attributes);
  (*fields)["capacity"] = outer(capacity);
  return Value{MapValue{std::move(fields), false}};
}

}  // namespace devshare::dra::cel
