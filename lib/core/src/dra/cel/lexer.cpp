// The tokenizer of CEL selectors (lexer.hpp).
#include "dra/cel/lexer.hpp"

#include <fmt/format.h>

#include <utility>

#include "base/text.hpp"

namespace devshare::dra::cel {
namespace {

using devshare::internal::IsAsciiDigit;

bool IsIdentStart(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsAsciiDigit(c); }
bool IsHex(char c) { return IsAsciiDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int HexValue(char c) { return IsAsciiDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }

void AppendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

std::optional<std::size_t> InvalidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;
    for (int k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::nullopt;
}

// The next token; kEnd with errors_.failed() after a lexical error.
Token Lexer::Next() {
  SkipSpaceAndComments();
  Token t;
  t.offset = pos_;
  if (pos_ >= src_.size()) return t;
  const char c = src_[pos_];
  if (IsAsciiDigit(c) || (c == '.' && pos_ + 1 < src_.size() && IsAsciiDigit(src_[pos_ + 1]))) {
    return Number(t);
  }
  if (c == '"' || c == '\'') return String(t, /*raw=*/false, /*bytes=*/false);
  if (IsIdentStart(c)) return Ident(t);
  if (c == '`') {
    errors_.Unsupported("a backquoted identifier");
    return t;
  }
  struct Punct {
    std::string_view text;
    Tok kind;
  };
  static constexpr Punct kPuncts[] = {
      {"==", Tok::kEq},    {"!=", Tok::kNe},      {"<=", Tok::kLe},      {">=", Tok::kGe},
      {"&&", Tok::kAnd},   {"||", Tok::kOr},      {"<", Tok::kLt},       {">", Tok::kGt},
      {"(", Tok::kLParen}, {")", Tok::kRParen},   {"[", Tok::kLBracket}, {"]", Tok::kRBracket},
      {"{", Tok::kLBrace}, {"}", Tok::kRBrace},   {".", Tok::kDot},      {",", Tok::kComma},
      {":", Tok::kColon},  {"?", Tok::kQuestion}, {"!", Tok::kNot},      {"-", Tok::kMinus},
      {"+", Tok::kPlus},   {"*", Tok::kStar},     {"/", Tok::kSlash},    {"%", Tok::kPercent},
  };
  for (const Punct& p : kPuncts) {
    if (src_.substr(pos_, p.text.size()) == p.text) {
      pos_ += p.text.size();
      t.kind = p.kind;
      return t;
    }
  }
  errors_.Malformed(pos_, fmt::format("syntax error: token recognition error at: '{}'", c));
  return t;
}

void Lexer::SkipSpaceAndComments() {
  while (pos_ < src_.size()) {
    const char c = src_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      ++pos_;
    } else if (src_.substr(pos_, 2) == "//") {
      while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
    } else {
      return;
    }
  }
}

// NUM_INT, NUM_UINT and NUM_FLOAT; the text keeps its form for the parser.
Token Lexer::Number(Token t) {
  const std::size_t start = pos_;
  if (src_.substr(pos_, 2) == "0x") {
    std::size_t end = pos_ + 2;
    while (end < src_.size() && IsHex(src_[end])) ++end;
    if (end > pos_ + 2) {
      pos_ = end;
      t.kind = Tok::kInt;
      if (pos_ < src_.size() && (src_[pos_] == 'u' || src_[pos_] == 'U')) {
        ++pos_;
        t.kind = Tok::kUint;
      }
      t.text = std::string(src_.substr(start, pos_ - start));
      return t;
    }
  }
  t.kind = Tok::kInt;
  while (pos_ < src_.size() && IsAsciiDigit(src_[pos_])) ++pos_;
  if (pos_ + 1 < src_.size() && src_[pos_] == '.' && IsAsciiDigit(src_[pos_ + 1])) {
    t.kind = Tok::kDouble;
    ++pos_;
    while (pos_ < src_.size() && IsAsciiDigit(src_[pos_])) ++pos_;
  }
  if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
    std::size_t end = pos_ + 1;
    if (end < src_.size() && (src_[end] == '+' || src_[end] == '-')) ++end;
    if (end < src_.size() && IsAsciiDigit(src_[end])) {
      while (end < src_.size() && IsAsciiDigit(src_[end])) ++end;
      pos_ = end;
      t.kind = Tok::kDouble;
    }
  }
  if (t.kind == Tok::kInt && pos_ < src_.size() && (src_[pos_] == 'u' || src_[pos_] == 'U')) {
    ++pos_;
    t.kind = Tok::kUint;
  }
  t.text = std::string(src_.substr(start, pos_ - start));
  return t;
}

Token Lexer::Ident(Token t) {
  const std::size_t start = pos_;
  while (pos_ < src_.size() && IsIdentChar(src_[pos_])) ++pos_;
  const std::string_view word = src_.substr(start, pos_ - start);
  // STRING may be raw (r"..."), BYTES is b followed by a STRING.
  if (pos_ < src_.size() && (src_[pos_] == '"' || src_[pos_] == '\'')) {
    const bool bytes = !word.empty() && (word[0] == 'b' || word[0] == 'B');
    const std::string_view rest = word.substr(bytes ? 1 : 0);
    const bool raw = rest == "r" || rest == "R";
    if ((bytes || raw) && (rest.empty() || raw)) return String(t, raw, bytes);
  }
  static constexpr std::pair<std::string_view, Tok> kWords[] = {
      {"in", Tok::kIn}, {"true", Tok::kTrue}, {"false", Tok::kFalse}, {"null", Tok::kNull}};
  t.kind = Tok::kIdent;
  for (const auto& [text, kind] : kWords) {
    if (word == text) t.kind = kind;
  }
  t.text = std::string(word);
  return t;
}

// A quoted literal at pos_ (after any r/b prefix), escapes decoded unless
// raw (cel-go's unescape: \x, octal and \u give code points).
Token Lexer::String(Token t, bool raw, bool bytes) {
  if (bytes) {
    errors_.Unsupported("a bytes literal");
    return t;
  }
  const char q = src_[pos_];
  const bool triple = src_.substr(pos_, 3) == std::string(3, q);
  const std::string_view close = triple ? src_.substr(pos_, 3) : src_.substr(pos_, 1);
  pos_ += close.size();
  t.kind = Tok::kString;
  while (true) {
    if (pos_ >= src_.size() || (!triple && (src_[pos_] == '\n' || src_[pos_] == '\r'))) {
      errors_.Malformed(t.offset, "syntax error: unterminated string literal");
      t.kind = Tok::kEnd;
      return t;
    }
    if (src_.substr(pos_, close.size()) == close) {
      pos_ += close.size();
      return t;
    }
    if (src_[pos_] != '\\' || raw) {
      t.text += src_[pos_++];
      continue;
    }
    if (!Escape(t.text)) {
      t.kind = Tok::kEnd;
      return t;
    }
  }
}

bool Lexer::Escape(std::string& out) {
  const std::size_t at = pos_;
  auto bad = [&] {
    errors_.Malformed(at, "syntax error: invalid escape sequence");
    return false;
  };
  if (pos_ + 1 >= src_.size()) return bad();
  const char e = src_[pos_ + 1];
  static constexpr std::string_view kSimple = "abfnrtv\\'\"`?";
  static constexpr std::string_view kDecoded = "\a\b\f\n\r\t\v\\'\"`?";
  if (const std::size_t k = kSimple.find(e); k != std::string_view::npos) {
    out += kDecoded[k];
    pos_ += 2;
    return true;
  }
  std::size_t digits = 0;
  int radix = 16;
  if (e == 'x' || e == 'X') {
    digits = 2;
  } else if (e == 'u') {
    digits = 4;
  } else if (e == 'U') {
    digits = 8;
  } else if (e >= '0' && e <= '3') {
    digits = 3;
    radix = 8;
  } else {
    return bad();
  }
  const std::size_t first = radix == 8 ? pos_ + 1 : pos_ + 2;
  if (first + digits > src_.size()) return bad();
  std::uint32_t cp = 0;
  for (std::size_t k = 0; k < digits; ++k) {
    const char d = src_[first + k];
    if (radix == 8 ? (d < '0' || d > '7') : !IsHex(d)) return bad();
    cp = cp * static_cast<std::uint32_t>(radix) + static_cast<std::uint32_t>(HexValue(d));
  }
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return bad();
  AppendUtf8(out, cp);
  pos_ = first + digits;
  return true;
}

}  // namespace devshare::dra::cel
