// Private: string helpers with Go's strconv semantics, shared by the codecs.
#ifndef DEVSHARE_SRC_TEXT_HPP_
#define DEVSHARE_SRC_TEXT_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace devshare::internal {

// Go strconv.ParseInt(s, 10, bits): an optional '+' or '-' then decimal
// digits, within the signed range of `bits` (32 or 64). Nothing else.
std::optional<std::int64_t> ParseGoInt(std::string_view s, int bits);

// Whether `c` is one of '0'..'9'.
inline bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// Go strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False.
std::optional<bool> ParseGoBool(std::string_view s);

// Trims ASCII whitespace (space, \t, \n, \v, \f, \r) at both ends.
std::string_view TrimSpace(std::string_view s);

// ASCII case-insensitive equality.
bool EqualFoldAscii(std::string_view a, std::string_view b);

// `s` with ASCII letters upper-cased.
std::string UpperAscii(std::string_view s);

// Quotes `s` for an error message: printable ASCII as is, other bytes as
// \xNN, at most `max_len` input bytes followed by "..." when longer.
std::string Quote(std::string_view s, std::size_t max_len = 64);

// Calls fn(piece, offset_of_piece) for every piece of `s` split on `sep`,
// keeping empty pieces, like Go's strings.Split (one piece for "").
// Stops early and returns false when fn returns false.
template <typename Fn>
bool ForEachSplit(std::string_view s, char sep, Fn&& fn) {
  std::size_t start = 0;
  while (true) {
    std::size_t end = s.find(sep, start);
    if (end == std::string_view::npos) {
      return fn(s.substr(start), start);
    }
    if (!fn(s.substr(start, end - start), start)) return false;
    start = end + 1;
  }
}

// Number of `sep` in `s`.
std::size_t CountChar(std::string_view s, char sep);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_TEXT_HPP_
