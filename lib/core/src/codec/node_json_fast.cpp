#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "codec/node_json.hpp"

namespace devshare::internal {

namespace {

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool Eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool AtEnd() const { return i_ == s_.size(); }
  // A string after '"' (the whole value was checked to be printable ASCII
  // without backslashes, so the next quote ends it).
  bool String(std::string_view& out) {
    if (!Eat('"')) return false;
    const char* begin = s_.data() + i_;
    const auto* quote = static_cast<const char*>(std::memchr(begin, '"', s_.size() - i_));
    if (quote == nullptr) return false;
    out = std::string_view(begin, static_cast<std::size_t>(quote - begin));
    i_ += out.size() + 1;
    return true;
  }
  // A JSON integer (no fraction or exponent) of at most 18 digits.
  bool Integer(std::int64_t& out) {
    const bool negative = Eat('-');
    const std::size_t start = i_;
    std::int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      if (i_ - start == 18) return false;  // more digits than the fast path reads
      v = v * 10 + (s_[i_++] - '0');
    }
    const std::size_t digits = i_ - start;
    if (digits == 0 || (digits > 1 && s_[start] == '0')) return false;
    if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) return false;
    out = negative ? -v : v;
    return true;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

bool Int32(Cursor& c, std::int32_t& out) {
  std::int64_t v = 0;
  if (!c.Integer(v) || v < std::numeric_limits<std::int32_t>::min() ||
      v > std::numeric_limits<std::int32_t>::max()) {
    return false;
  }
  out = static_cast<std::int32_t>(v);
  return true;
}

bool Field(Cursor& c, std::string_view key, Device& d) {
  std::string_view text;
  if (key == "id" || key == "type" || key == "mode" || key == "devicevendor") {
    if (!c.String(text)) return false;
    std::string& out = key == "id"     ? d.id
                       : key == "type" ? d.type
                       : key == "mode" ? d.mode
                                       : d.vendor;
    out = std::string(text);
    return true;
  }
  if (key == "index") {
    std::int64_t v = 0;
    if (!c.Integer(v) || v < 0 || v > std::numeric_limits<std::uint32_t>::max()) return false;
    d.index = static_cast<std::uint32_t>(v);
    return true;
  }
  if (key == "count") return Int32(c, d.count);
  if (key == "devmem") return Int32(c, d.devmem);
  if (key == "devcore") return Int32(c, d.devcore);
  if (key == "numa") return Int32(c, d.numa);
  if (key == "health") {
    if (c.Literal("true")) {
      d.health = true;
      return true;
    }
    if (c.Literal("false")) {
      d.health = false;
      return true;
    }
    return false;
  }
  return false;  // MIG profiles and anything else: the full decoder
}

// Printable ASCII without backslashes (so no escapes, no whitespace other
// than spaces inside strings, nothing to validate as UTF-8). One pass over
// the whole value, branch-free so that it vectorises.
bool PlainAscii(std::string_view s) {
  std::uint8_t bad = 0;
  for (const char ch : s) {
    const auto c = static_cast<std::uint8_t>(ch);
    bad |= static_cast<std::uint8_t>(static_cast<std::uint8_t>(c - 0x20) > 0x5e) |
           static_cast<std::uint8_t>(c == 0x5c);
  }
  return bad == 0;
}

}  // namespace

std::optional<std::vector<Device>> DecodeNodeJsonFast(std::string_view value) {
  if (!PlainAscii(value)) return std::nullopt;
  Cursor c(value);
  std::vector<Device> devices;
  if (!c.Eat('[')) return std::nullopt;
  if (c.Eat(']')) return c.AtEnd() ? std::optional(std::move(devices)) : std::nullopt;
  devices.reserve(8);
  do {
    if (!c.Eat('{')) return std::nullopt;
    Device& d = devices.emplace_back();
    if (!c.Eat('}')) {
      do {
        std::string_view key;
        if (!c.String(key) || !c.Eat(':') || !Field(c, key, d)) return std::nullopt;
      } while (c.Eat(','));
      if (!c.Eat('}')) return std::nullopt;
    }
  } while (c.Eat(','));
  if (!c.Eat(']') || !c.AtEnd()) return std::nullopt;
  return devices;
}

}  // namespace devshare::internal
