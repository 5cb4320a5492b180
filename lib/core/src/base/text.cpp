#include "base/text.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace devshare::internal {

std::optional<std::int64_t> ParseGoInt(std::string_view s, int bits) {
  if (s.empty()) return std::nullopt;
  if (s.size() <= 9) {
    // Up to 9 plain digits always fit: no overflow checks needed.
    std::int64_t value = 0;
    bool plain = true;
    for (const char c : s) {
      plain = plain && c >= '0' && c <= '9';
      value = value * 10 + (c - '0');
    }
    if (plain) return value;
  }
  bool negative = false;
  std::size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) return std::nullopt;
  const std::uint64_t limit = bits == 32
                                  ? (negative ? 2147483648ULL : 2147483647ULL)
                                  : (negative ? 9223372036854775808ULL : 9223372036854775807ULL);
  std::uint64_t value = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (limit - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (negative) {
    if (value == 9223372036854775808ULL) return std::numeric_limits<std::int64_t>::min();
    return -static_cast<std::int64_t>(value);
  }
  return static_cast<std::int64_t>(value);
}

std::optional<bool> ParseGoBool(std::string_view s) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") {
    return true;
  }
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") {
    return false;
  }
  return std::nullopt;
}

namespace {
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
}  // namespace

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string UpperAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

bool EqualFoldAscii(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

std::string Quote(std::string_view s, std::size_t max_len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  const std::size_t n = std::min(s.size(), max_len);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  out += '"';
  if (s.size() > max_len) out += "...";
  return out;
}

std::size_t CountChar(std::string_view s, char sep) {
  std::size_t n = 0;
  const char* p = s.data();
  const char* end = p + s.size();
  while ((p = static_cast<const char*>(std::memchr(p, sep, static_cast<std::size_t>(end - p)))) !=
         nullptr) {
    ++n;
    ++p;
  }
  return n;
}

}  // namespace devshare::internal
