#include "base/json.hpp"

#include <fmt/format.h>

#include "base/text.hpp"

namespace devshare::internal {

Result<boost::json::value> ParseJson(std::string_view text, std::string_view what,
                                     const boost::json::storage_ptr& sp) {
  // The constructor's storage holds only the parser's temporaries; reset()
  // puts the document itself in `sp` too.
  unsigned char temporaries[512];
  boost::json::stream_parser parser(sp, {}, temporaries, sizeof(temporaries));
  parser.reset(sp);
  boost::system::error_code ec;
  const std::size_t consumed = parser.write_some(text.data(), text.size(), ec);
  if (!ec && consumed == text.size()) parser.finish(ec);
  if (ec) {
    return Status::Malformed(
        fmt::format("{}: invalid JSON at byte {}: {}", what, consumed, ec.message()), "", consumed);
  }
  if (consumed != text.size()) {
    return Status::Malformed(
        fmt::format("{}: unexpected data after the JSON value at byte {}", what, consumed), "",
        consumed);
  }
  return parser.release();
}

std::string_view KindName(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null:
      return "null";
    case boost::json::kind::bool_:
      return "a boolean";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
      return "an integer";
    case boost::json::kind::double_:
      return "a non-integer number";
    case boost::json::kind::string:
      return "a string";
    case boost::json::kind::array:
      return "an array";
    case boost::json::kind::object:
      return "an object";
  }
  return "a value";
}

Status TypeError(std::string_view what, const std::string& field, std::string_view expected,
                 const boost::json::value& got) {
  return Status::Malformed(
      fmt::format("{}: {}: expected {}, got {}", what, field, expected, KindName(got)), field);
}

Status ReadInt(const boost::json::value& v, std::int64_t min, std::int64_t max,
               std::string_view what, const std::string& field, std::int64_t& out) {
  if (v.is_null()) return Status();
  std::int64_t n = 0;
  if (v.is_int64()) {
    n = v.get_int64();
  } else if (v.is_uint64()) {
    const std::uint64_t u = v.get_uint64();
    if (u > static_cast<std::uint64_t>(max)) {
      return Status::Malformed(
          fmt::format("{}: {}: {} is out of range [{}, {}]", what, field, u, min, max), field);
    }
    n = static_cast<std::int64_t>(u);
  } else {
    return TypeError(what, field, "an integer", v);
  }
  if (n < min || n > max) {
    return Status::Malformed(
        fmt::format("{}: {}: {} is out of range [{}, {}]", what, field, n, min, max), field);
  }
  out = n;
  return Status();
}

Status ReadString(const boost::json::value& v, std::string_view what, const std::string& field,
                  std::string& out) {
  if (v.is_null()) return Status();
  if (!v.is_string()) return TypeError(what, field, "a string", v);
  const boost::json::string& s = v.get_string();
  out.assign(s.data(), s.size());
  return Status();
}

Status ReadBool(const boost::json::value& v, std::string_view what, const std::string& field,
                bool& out) {
  if (v.is_null()) return Status();
  if (!v.is_bool()) return TypeError(what, field, "a boolean", v);
  out = v.get_bool();
  return Status();
}

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when it is invalid.
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](std::size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;  // overlong
    if (b0 == 0xED && b1 > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b0 == 0xF0 && b1 < 0x90) return 0;  // overlong
    if (b0 == 0xF4 && b1 > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

void AppendGoJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '<':
          out += "\\u003c";
          break;
        case '>':
          out += "\\u003e";
          break;
        case '&':
          out += "\\u0026";
          break;
        default:
          if (c < 0x20) {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const std::size_t len = Utf8SequenceLength(s, i);
    if (len == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (len == 3 && c == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
         static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  out += '"';
}

}  // namespace devshare::internal
