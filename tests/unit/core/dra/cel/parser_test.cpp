// The CEL selector parser alone (src/dra/cel/parser.hpp): AST shapes as
// S-expressions (precedence, associativity, macros, literals), and the
// syntax errors with their positions.
#include "src/dra/cel/parser.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <string_view>

namespace {

using devshare::StatusCode;
using devshare::dra::cel::Errors;
using devshare::dra::cel::Node;
using devshare::dra::cel::NodePtr;
using devshare::dra::cel::Op;
using devshare::dra::cel::Parse;

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kConst:
      return "const";
    case Op::kIdent:
      return "ident";
    case Op::kSelect:
      return ".";
    case Op::kHas:
      return "has";
    case Op::kIndex:
      return "[]";
    case Op::kList:
      return "list";
    case Op::kNot:
      return "!";
    case Op::kNeg:
      return "neg";
    case Op::kAnd:
      return "&&";
    case Op::kOr:
      return "||";
    case Op::kCond:
      return "?:";
    case Op::kEq:
      return "==";
    case Op::kNe:
      return "!=";
    case Op::kLt:
      return "<";
    case Op::kLe:
      return "<=";
    case Op::kGt:
      return ">";
    case Op::kGe:
      return ">=";
    case Op::kIn:
      return "in";
    case Op::kAdd:
      return "+";
    case Op::kSub:
      return "-";
    case Op::kMul:
      return "*";
    case Op::kDiv:
      return "/";
    case Op::kMod:
      return "%";
    case Op::kCall:
      return "call";
    case Op::kAll:
      return "all";
    case Op::kExists:
      return "exists";
    case Op::kExistsOne:
      return "exists_one";
  }
  return "?";
}

// The tree as an S-expression: literals as written by type (1, 1u, 1.5d,
// "s", true, null), identifiers by name, the rest "(op[:name] args...)".
std::string Dump(const Node& n) {
  namespace cel = devshare::dra::cel;
  if (n.op == Op::kConst) {
    const cel::Value& v = n.value;
    if (const auto* i = cel::As<std::int64_t>(v)) return std::to_string(*i);
    if (const auto* u = cel::As<std::uint64_t>(v)) return std::to_string(*u) + "u";
    if (const auto* d = cel::As<double>(v)) return fmt::format("{}d", *d);
    if (const auto* s = cel::As<std::string>(v)) return fmt::format("{:?}", *s);
    if (const auto* b = cel::As<bool>(v)) return *b ? "true" : "false";
    return "null";
  }
  if (n.op == Op::kIdent) return n.name;
  std::string out = "(" + std::string(OpName(n.op));
  if (!n.name.empty()) out += ":" + n.name;
  if (n.op == Op::kCall && n.member) out += ":member";
  for (const auto& a : n.args) out += " " + Dump(*a);
  return out + ")";
}

TEST_CASE("cel parser: AST shapes, precedence and associativity") {
  struct Row {
    std::string_view src;
    std::string_view tree;
  };
  const Row rows[] = {
      {"device.driver == 'x'", R"((== (.:driver device) "x"))"},
      {"a || b && c", "(|| a (&& b c))"},
      {"a && b || c && d", "(|| (&& a b) (&& c d))"},
      {"a || b || c", "(|| a b c)"},  // one n-ary node
      {"a && b && c", "(&& a b c)"},
      {"1 + 2 * 3", "(+ 1 (* 2 3))"},
      {"1 - 2 - 3", "(- (- 1 2) 3)"},  // left-associative
      {"8 / 4 % 3 * 2", "(* (% (/ 8 4) 3) 2)"},
      {"1 < 2 == true", "(== (< 1 2) true)"},
      {"'a' in ['a', 'b']", R"((in "a" (list "a" "b")))"},
      {"a ? b : c ? d : e", "(?: a b (?: c d e))"},
      {"a || b ? 1 : 2", "(?: (|| a b) 1 2)"},
      {"(1 + 2) * 3", "(* (+ 1 2) 3)"},
      // Unary runs: an even count disappears.
      {"!a", "(! a)"},
      {"!!a", "a"},
      {"!!!a", "(! a)"},
      {"--a", "a"},
      {"-a", "(neg a)"},
      // A '-' before a number is part of the literal.
      {"-1", "-1"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"- -1", "(neg -1)"},
      {"-1u", "(neg 1u)"},  // the checker refuses it
      {"-1.5", "-1.5d"},
      {"1u + 0x10 + 0x10u", "(+ (+ 1u 16) 16u)"},
      {"1e3 + .5", "(+ 1000d 0.5d)"},
      {"1e-400 == 0.0", "(== 0d 0d)"},  // underflow reads as 0
      {"'s' + \"t\" + r'\\d'", R"((+ (+ "s" "t") "\\d"))"},
      {"null == null", "(== null null)"},
      {"[]", "(list)"},
      {"[1, 2,]", "(list 1 2)"},  // a trailing comma
      // Members: selection, index, calls.
      {"device.attributes['gpu.example.com'].model",
       R"((.:model ([] (.:attributes device) "gpu.example.com")))"},
      {"l[0][1]", "([] ([] l 0) 1)"},
      {"size(x)", "(call:size x)"},
      {"s.startsWith('a')", R"((call:startsWith:member s "a"))"},
      {"quantity('1Gi').isLessThan(quantity('2Gi'))",
       R"((call:isLessThan:member (call:quantity "1Gi") (call:quantity "2Gi")))"},
      {"f()", "(call:f)"},
      // Macros.
      {"has(device.attributes.x)", "(has:x (.:attributes device))"},
      {"l.all(e, e > 0)", "(all:e l (> e 0))"},
      {"m.exists(k, k == 'a')", R"((exists:k m (== k "a")))"},
      {"l.exists_one(e, e)", "(exists_one:e l e)"},
      {"l.existsOne(e, e)", "(exists_one:e l e)"},
      {"l.all(e)", "(call:all:member l e)"},  // not the macro's arity
      {"has(a.b, c)", "(call:has (.:b a) c)"},
      {"  true  // comment", "true"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.src);
    Errors errors(row.src);
    NodePtr root = Parse(row.src, errors);
    const devshare::Status status = errors.take();
    CAPTURE(status.ToString());
    REQUIRE(root != nullptr);
    CHECK(Dump(*root) == row.tree);
  }
}

TEST_CASE("cel parser: offsets name the operator or name of each node") {
  Errors errors("a.b + c[0]");
  NodePtr root = Parse("a.b + c[0]", errors);
  REQUIRE(root != nullptr);
  CHECK(root->offset == 4);           // +
  CHECK(root->args[0]->offset == 2);  // b
  CHECK(root->args[1]->offset == 7);  // [
  CHECK(root->args[1]->args[0]->offset == 6);
  CHECK(root->depth == 3);
}

TEST_CASE("cel parser: syntax errors and unsupported constructs") {
  struct Row {
    std::string_view src;
    StatusCode code;
    std::size_t offset;        // kMalformed
    std::string_view message;  // in the message (kMalformed) or field() (kUnsupported)
  };
  const Row rows[] = {
      {"", StatusCode::kMalformed, 0, "unexpected end of input"},
      {"a ==", StatusCode::kMalformed, 4, "unexpected end of input"},
      {"1 +* 2", StatusCode::kMalformed, 3, "unexpected token"},
      {"1 2", StatusCode::kMalformed, 2, "unexpected token"},
      {"a ? b", StatusCode::kMalformed, 5, "unexpected end of input"},
      {"a ? b ? c : d : e", StatusCode::kMalformed, 6, "unexpected token"},
      {"(a", StatusCode::kMalformed, 2, "unexpected end of input"},
      {"[1 2]", StatusCode::kMalformed, 3, "unexpected token"},
      {"f(1,)", StatusCode::kMalformed, 4, "unexpected token"},
      {"a.1", StatusCode::kMalformed, 1, "unexpected token"},  // ".1" is a double
      {"a.in", StatusCode::kMalformed, 2, "unexpected token"},
      {"!-a", StatusCode::kMalformed, 2, "unexpected token"},
      {"has(a)", StatusCode::kMalformed, 4, "invalid argument to has() macro"},
      {"l.all(1, true)", StatusCode::kMalformed, 6, "argument must be a simple name"},
      {"9223372036854775808", StatusCode::kMalformed, 0, "invalid int literal"},
      {"x + -9223372036854775809", StatusCode::kMalformed, 4, "invalid int literal"},
      {"18446744073709551616u", StatusCode::kMalformed, 0, "invalid uint literal"},
      {"1e309", StatusCode::kMalformed, 0, "invalid double literal"},
      {"a = 1", StatusCode::kMalformed, 2, "token recognition error"},
      {"{'a': 1}", StatusCode::kUnsupported, 0, "a map literal"},
      {"a.?b", StatusCode::kUnsupported, 0, "optional field selection (.?)"},
      {"a[?0]", StatusCode::kUnsupported, 0, "optional index ([?])"},
      {"[?a]", StatusCode::kUnsupported, 0, "an optional list element ([?x])"},
      {"T{}", StatusCode::kUnsupported, 0, "message construction"},
      {"a.T{}", StatusCode::kUnsupported, 0, "message construction"},
      {".a", StatusCode::kUnsupported, 0, "a leading-dot identifier"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.src);
    Errors errors(row.src);
    NodePtr root = Parse(row.src, errors);
    CHECK(root == nullptr);
    const devshare::Status status = errors.take();
    CAPTURE(status.ToString());
    CHECK(status.code() == row.code);
    if (row.code == StatusCode::kMalformed) {
      CHECK(status.offset() == row.offset);
      CHECK(status.message().find(row.message) != std::string_view::npos);
    } else {
      CHECK(status.field() == row.message);
    }
  }
}

TEST_CASE("cel parser: nesting is bounded at 100 levels") {
  const std::string ok = std::string(99, '(') + "a" + std::string(99, ')');
  Errors fine(ok);
  CHECK(Parse(ok, fine) != nullptr);

  const std::string deep = std::string(100, '(') + "a" + std::string(100, ')');
  Errors errors(deep);
  CHECK(Parse(deep, errors) == nullptr);
  const devshare::Status status = errors.take();
  CHECK(status.code() == StatusCode::kUnsupported);
  CHECK(status.field() == "an expression nested more than 100 levels deep");

  std::string chain = "a";
  for (int i = 0; i < 100; ++i) chain += " + a";
  Errors chained(chain);
  CHECK(Parse(chain, chained) == nullptr);  // 101 levels of + nodes
  CHECK(chained.take().code() == StatusCode::kUnsupported);
}

}  // namespace
