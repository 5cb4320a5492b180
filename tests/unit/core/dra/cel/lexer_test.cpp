// The CEL selector tokenizer alone (src/dra/cel/lexer.hpp): the tokens of
// each kind with their offsets and texts, and the lexical errors with
// their positions.
#include "src/dra/cel/lexer.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

namespace {

using devshare::StatusCode;
using devshare::dra::cel::Errors;
using devshare::dra::cel::InvalidUtf8;
using devshare::dra::cel::Lexer;
using devshare::dra::cel::Tok;
using devshare::dra::cel::Token;

struct Lexed {
  std::vector<Token> tokens;  // up to, without, the final kEnd
  devshare::Status status;
};

Lexed LexAll(std::string_view src) {
  Errors errors(src);
  Lexer lexer(src, errors);
  Lexed out;
  for (Token t = lexer.Next(); t.kind != Tok::kEnd; t = lexer.Next()) out.tokens.push_back(t);
  out.status = errors.take();
  return out;
}

struct Expected {
  Tok kind;
  std::size_t offset;
  std::string text;
};

TEST_CASE("cel lexer: tokens, offsets and texts") {
  struct Row {
    std::string_view src;
    std::vector<Expected> tokens;
  };
  const Row rows[] = {
      {"", {}},
      {"  // only a comment", {}},
      {"device.driver",
       {{Tok::kIdent, 0, "device"}, {Tok::kDot, 6, ""}, {Tok::kIdent, 7, "driver"}}},
      {"a<=b", {{Tok::kIdent, 0, "a"}, {Tok::kLe, 1, ""}, {Tok::kIdent, 3, "b"}}},
      {"a < b", {{Tok::kIdent, 0, "a"}, {Tok::kLt, 2, ""}, {Tok::kIdent, 4, "b"}}},
      {"== != >= > && || ! ? : , [ ] ( ) { } + - * / %",
       {{Tok::kEq, 0, ""},      {Tok::kNe, 3, ""},        {Tok::kGe, 6, ""},
        {Tok::kGt, 9, ""},      {Tok::kAnd, 11, ""},      {Tok::kOr, 14, ""},
        {Tok::kNot, 17, ""},    {Tok::kQuestion, 19, ""}, {Tok::kColon, 21, ""},
        {Tok::kComma, 23, ""},  {Tok::kLBracket, 25, ""}, {Tok::kRBracket, 27, ""},
        {Tok::kLParen, 29, ""}, {Tok::kRParen, 31, ""},   {Tok::kLBrace, 33, ""},
        {Tok::kRBrace, 35, ""}, {Tok::kPlus, 37, ""},     {Tok::kMinus, 39, ""},
        {Tok::kStar, 41, ""},   {Tok::kSlash, 43, ""},    {Tok::kPercent, 45, ""}}},
      {"in true false null inx",
       {{Tok::kIn, 0, "in"},
        {Tok::kTrue, 3, "true"},
        {Tok::kFalse, 8, "false"},
        {Tok::kNull, 14, "null"},
        {Tok::kIdent, 19, "inx"}}},
      // Numbers keep their text: the parser reads them.
      {"42 7u 0x1F 0xffU 1.5 .5 1e3 2E-2 3e",
       {{Tok::kInt, 0, "42"},
        {Tok::kUint, 3, "7u"},
        {Tok::kInt, 6, "0x1F"},
        {Tok::kUint, 11, "0xffU"},
        {Tok::kDouble, 17, "1.5"},
        {Tok::kDouble, 21, ".5"},
        {Tok::kDouble, 24, "1e3"},
        {Tok::kDouble, 28, "2E-2"},
        {Tok::kInt, 33, "3"},
        {Tok::kIdent, 34, "e"}}},
      // "1." is an int and a dot: a member may follow.
      {"1.size", {{Tok::kInt, 0, "1"}, {Tok::kDot, 1, ""}, {Tok::kIdent, 2, "size"}}},
      {"0x", {{Tok::kInt, 0, "0"}, {Tok::kIdent, 1, "x"}}},
      // Strings come decoded; raw strings keep their backslashes.
      {R"("a\tb" 'q\'' "\x41\101\u00e9\U0001F600")",
       {{Tok::kString, 0, "a\tb"},
        {Tok::kString, 7, "q'"},
        {Tok::kString, 13, "AA\xc3\xa9\xf0\x9f\x98\x80"}}},
      {R"(r"a\n" R'\d')", {{Tok::kString, 0, "a\\n"}, {Tok::kString, 7, "\\d"}}},
      {"'''x\n'y'''", {{Tok::kString, 0, "x\n'y"}}},
      {"\"\"\"\"\"\"", {{Tok::kString, 0, ""}}},
      {"a // c\n b", {{Tok::kIdent, 0, "a"}, {Tok::kIdent, 8, "b"}}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.src);
    const Lexed lexed = LexAll(row.src);
    CHECK(lexed.status.ok());
    REQUIRE(lexed.tokens.size() == row.tokens.size());
    for (std::size_t i = 0; i < row.tokens.size(); ++i) {
      CAPTURE(i);
      CHECK(lexed.tokens[i].kind == row.tokens[i].kind);
      CHECK(lexed.tokens[i].offset == row.tokens[i].offset);
      CHECK(lexed.tokens[i].text == row.tokens[i].text);
    }
  }
}

TEST_CASE("cel lexer: errors with their positions") {
  struct Row {
    std::string_view src;
    StatusCode code;
    std::size_t offset;  // kMalformed only
    std::string_view message;
    std::size_t tokens_before;  // tokens read before the error
  };
  const Row rows[] = {
      {"a # b", StatusCode::kMalformed, 2, "token recognition error at: '#'", 1},
      {"a = b", StatusCode::kMalformed, 2, "token recognition error at: '='", 1},
      {"x == \"abc", StatusCode::kMalformed, 5, "unterminated string literal", 2},
      {"'a\nb'", StatusCode::kMalformed, 0, "unterminated string literal", 0},
      {"'''abc''", StatusCode::kMalformed, 0, "unterminated string literal", 0},
      {R"(  "\q")", StatusCode::kMalformed, 3, "invalid escape sequence", 0},
      {R"("ab\x4")", StatusCode::kMalformed, 3, "invalid escape sequence", 0},
      {R"("\uD800")", StatusCode::kMalformed, 1, "invalid escape sequence", 0},
      {R"("\U00110000")", StatusCode::kMalformed, 1, "invalid escape sequence", 0},
      {R"("\8")", StatusCode::kMalformed, 1, "invalid escape sequence", 0},
      {"\"a\\", StatusCode::kMalformed, 2, "invalid escape sequence", 0},
      {"`a.b`", StatusCode::kUnsupported, 0, "a backquoted identifier", 0},
      {"b'abc'", StatusCode::kUnsupported, 0, "a bytes literal", 0},
      {"x + BR'a'", StatusCode::kUnsupported, 0, "a bytes literal", 2},
  };
  for (const Row& row : rows) {
    CAPTURE(row.src);
    const Lexed lexed = LexAll(row.src);
    CAPTURE(lexed.status.ToString());
    CHECK(lexed.tokens.size() == row.tokens_before);
    CHECK(lexed.status.code() == row.code);
    if (row.code == StatusCode::kMalformed) {
      CHECK(lexed.status.offset() == row.offset);
      CHECK(lexed.status.message().find(row.message) != std::string_view::npos);
      CHECK(lexed.status.message().find("(at byte " + std::to_string(row.offset) + ")") !=
            std::string_view::npos);
    } else {
      CHECK(lexed.status.field() == row.message);
    }
  }
}

TEST_CASE("cel lexer: a copied lexer peeks without moving the original") {
  Errors errors("a b c");
  Lexer lexer("a b c", errors);
  CHECK(lexer.Next().text == "a");
  Lexer peek = lexer;
  CHECK(peek.Next().text == "b");
  CHECK(peek.Next().text == "c");
  CHECK(lexer.Next().text == "b");
}

TEST_CASE("cel lexer: invalid UTF-8 is found at its first byte") {
  struct Row {
    std::string_view text;
    std::optional<std::size_t> bad;
  };
  const Row rows[] = {
      {"plain", std::nullopt}, {"caf\xc3\xa9 \xf0\x9f\x98\x80", std::nullopt},
      {"ab\xff", 2},           {"a\xc3", 1},  // truncated
      {"\xc0\xaf", 0},                        // overlong '/'
      {"x\xed\xa0\x80", 1},                   // a surrogate
      {"\xf4\x90\x80\x80", 0},                // beyond U+10FFFF
      {"ok\xe2\x82", 2},                      // truncated three-byte sequence
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    CHECK(InvalidUtf8(row.text) == row.bad);
  }
}

}  // namespace
