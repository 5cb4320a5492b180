// Private (dra layer): the tokenizer of CEL selectors, by the lexer rules
// of cel-go's CEL.g4: numbers keep their text for the parser, string
// literals (quoted, triple-quoted, raw) come decoded, `//` comments and
// whitespace are skipped. Errors go to an Errors (errors.hpp): an invalid
// escape, an unterminated string or a stray character is kMalformed at its
// byte; backquoted identifiers and bytes literals are kUnsupported.
#ifndef DEVSHARE_SRC_DRA_CEL_LEXER_HPP_
#define DEVSHARE_SRC_DRA_CEL_LEXER_HPP_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dra/cel/errors.hpp"

namespace devshare::dra::cel {

enum class Tok : std::uint8_t {
  kEnd,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kIdent,
  kIn,
  kTrue,
  kFalse,
  kNull,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kDot,
  kComma,
  kColon,
  kQuestion,
  kNot,
  kMinus,
  kPlus,
  kStar,
  kSlash,
  kPercent,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};

struct Token {
  Tok kind = Tok::kEnd;
  std::size_t offset = 0;
  std::string text;  // identifier, number as written, or the decoded string
};

// Reads `src` one token at a time. A Lexer is a cursor: copying one peeks
// ahead without moving the original. `src` and `errors` must outlive it.
class Lexer {
 public:
  Lexer(std::string_view src, Errors& errors) : src_(src), errors_(errors) {}

  // The next token; kEnd at the end, and kEnd with errors.failed() after a
  // lexical error.
  Token Next();

 private:
  void SkipSpaceAndComments();
  Token Number(Token t);
  Token Ident(Token t);
  Token String(Token t, bool raw, bool bytes);
  bool Escape(std::string& out);

  std::string_view src_;
  Errors& errors_;
  std::size_t pos_ = 0;
};

// The byte offset of the first invalid UTF-8 sequence of `s` (overlong,
// surrogate, beyond U+10FFFF or truncated), if any.
std::optional<std::size_t> InvalidUtf8(std::string_view s);

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_LEXER_HPP_
