// Private: reading the members of JSON objects into values, Go's way (an
// absent or null member leaves its destination as it is), the one member
// reader of the core's decoders. Messages name the document (`what`) and
// the member's path: "<what>: <path>: expected an object, got a string".
#ifndef DEVSHARE_SRC_BASE_JSON_READER_HPP_
#define DEVSHARE_SRC_BASE_JSON_READER_HPP_

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.hpp"
#include "devshare/status.hpp"

namespace devshare::internal {

// The member `key` of `o`, or nullptr when it is absent or null.
const boost::json::value* Member(const boost::json::object& o, std::string_view key);

// The member `key` of `o` when it is an object, else nullptr (absent, null
// or of another kind): for readers that skip what they do not understand.
const boost::json::object* ObjectMember(const boost::json::object& o, std::string_view key);

// Reads members into values, keeping the first error. Every reader does
// nothing once an error has been recorded, so a decoder reads straight
// through and asks `status()` at the end. `what` must outlive the reader.
class JsonReader {
 public:
  explicit JsonReader(std::string_view what) : what_(what) {}

  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

  // Records "<what>: <path>: <message>" (kMalformed, field `path`).
  void Fail(const std::string& path, std::string_view message);
  // Records `status` as it is (a message of the decoder's own form).
  void Fail(Status status);
  // Records "<what>: <path>: expected <expected>, got <kind of got>".
  void Expect(const std::string& path, std::string_view expected, const boost::json::value& got);

  // The member, or nullptr when absent, null or after an error.
  const boost::json::value* Get(const boost::json::object& o, std::string_view key) const {
    return ok() ? Member(o, key) : nullptr;
  }
  // The object member, or nullptr when absent, null, not an object (an
  // error) or after an error.
  const boost::json::object* Object(const boost::json::object& o, std::string_view key,
                                    const std::string& path);

  // Calls `item(value, path)` for each element of an array member, path
  // "<path>[<index>]"; a member that is not an array is an error.
  template <typename Item>
  void Each(const boost::json::object& o, std::string_view key, const std::string& path,
            Item&& item) {
    const boost::json::value* v = Get(o, key);
    if (v == nullptr) return;
    if (!v->is_array()) return Expect(path, "an array", *v);
    std::size_t i = 0;
    for (const boost::json::value& element : v->get_array()) {
      if (!ok()) return;
      item(element, fmt::format("{}[{}]", path, i++));
    }
  }
  // Calls `item(object, path)` for each element, which must be an object.
  template <typename Item>
  void EachObject(const boost::json::object& o, std::string_view key, const std::string& path,
                  Item&& item) {
    Each(o, key, path, [&](const boost::json::value& v, const std::string& at) {
      if (!v.is_object()) return Expect(at, "an object", v);
      item(v.get_object(), at);
    });
  }
  // Calls `entry(key, value, path)` for each member of an object member,
  // path "<path>[\"<key>\"]".
  template <typename Entry>
  void Members(const boost::json::object& o, std::string_view key, const std::string& path,
               Entry&& entry) {
    const boost::json::object* m = Object(o, key, path);
    if (m == nullptr) return;
    for (const auto& member : *m) {
      if (!ok()) return;
      entry(std::string(member.key()), member.value(),
            fmt::format("{}[{}]", path, Quote(member.key())));
    }
  }

  // Scalars: a value of another kind is an error; null leaves `out`.
  void String(const boost::json::value& v, const std::string& path, std::string& out);
  void String(const boost::json::object& o, std::string_view key, const std::string& path,
              std::string& out) {
    if (const boost::json::value* v = Get(o, key)) String(*v, path, out);
  }
  void String(const boost::json::object& o, std::string_view key, const std::string& path,
              std::optional<std::string>& out) {
    if (const boost::json::value* v = Get(o, key)) String(*v, path, out.emplace());
  }
  // An integer within [min, max]; a number outside is an error.
  void Int(const boost::json::value& v, const std::string& path, std::int64_t& out,
           std::int64_t min = std::numeric_limits<std::int64_t>::min(),
           std::int64_t max = std::numeric_limits<std::int64_t>::max());
  void Int(const boost::json::object& o, std::string_view key, const std::string& path,
           std::int64_t& out, std::int64_t min = std::numeric_limits<std::int64_t>::min(),
           std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
    if (const boost::json::value* v = Get(o, key)) Int(*v, path, out, min, max);
  }
  void Bool(const boost::json::value& v, const std::string& path, bool& out);
  void Bool(const boost::json::object& o, std::string_view key, const std::string& path,
            bool& out) {
    if (const boost::json::value* v = Get(o, key)) Bool(*v, path, out);
  }
  // An array of strings, appended to `out`.
  void Strings(const boost::json::object& o, std::string_view key, const std::string& path,
               std::vector<std::string>& out) {
    Each(o, key, path, [&](const boost::json::value& v, const std::string& at) {
      String(v, at, out.emplace_back());
    });
  }

 private:
  std::string_view what_;
  Status status_;
};

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_BASE_JSON_READER_HPP_
