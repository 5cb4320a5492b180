#include "json_member.hpp"

#include <fmt/format.h>

namespace devshare::kube {

const boost::json::value* Member(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

const boost::json::object* ObjectMember(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v == nullptr ? nullptr : v->if_object();
}

Result<std::optional<std::string>> StringMember(const boost::json::object& o, std::string_view key,
                                                std::string_view where) {
  const boost::json::value* v = Member(o, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) {
    if (where.empty()) where = key;
    return Status::Malformed(fmt::format("{} is not a string", where), std::string(where));
  }
  return std::optional<std::string>(std::string(v->get_string()));
}

std::string StringOrEmpty(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::string MetadataString(const boost::json::value& object, std::string_view key) {
  const boost::json::object* meta =
      object.is_object() ? ObjectMember(object.get_object(), "metadata") : nullptr;
  return meta != nullptr ? StringOrEmpty(*meta, key) : std::string();
}

}  // namespace devshare::kube
