#include "base/json_reader.hpp"

#include "base/json.hpp"

namespace devshare::internal {

namespace bj = boost::json;

const bj::value* Member(const bj::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}

const bj::object* ObjectMember(const bj::object& o, std::string_view key) {
  const bj::value* v = Member(o, key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

void JsonReader::Fail(const std::string& path, std::string_view message) {
  if (ok()) status_ = Status::Malformed(fmt::format("{}: {}: {}", what_, path, message), path);
}

void JsonReader::Fail(Status status) {
  if (ok()) status_ = std::move(status);
}

void JsonReader::Expect(const std::string& path, std::string_view expected, const bj::value& got) {
  if (ok()) status_ = TypeError(what_, path, expected, got);
}

const bj::object* JsonReader::Object(const bj::object& o, std::string_view key,
                                     const std::string& path) {
  const bj::value* v = Get(o, key);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) return Expect(path, "an object", *v), nullptr;
  return &v->get_object();
}

void JsonReader::String(const bj::value& v, const std::string& path, std::string& out) {
  if (ok()) status_ = ReadString(v, what_, path, out);
}

void JsonReader::Int(const bj::value& v, const std::string& path, std::int64_t& out,
                     std::int64_t min, std::int64_t max) {
  if (ok()) status_ = ReadInt(v, min, max, what_, path, out);
}

void JsonReader::Bool(const bj::value& v, const std::string& path, bool& out) {
  if (ok()) status_ = ReadBool(v, what_, path, out);
}

}  // namespace devshare::internal
