// The CEL selector type checker alone (src/dra/cel/checker.hpp), on trees
// the parser builds: the type of each expression in Kubernetes' DRA
// environment, the overloads it resolves, and the type errors.
#include "src/dra/cel/checker.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "src/dra/cel/parser.hpp"

namespace {

using devshare::StatusCode;
using devshare::dra::cel::Check;
using devshare::dra::cel::Errors;
using devshare::dra::cel::Fn;
using devshare::dra::cel::NodePtr;
using devshare::dra::cel::Parse;
using devshare::dra::cel::TypeName;

struct Checked {
  NodePtr root;  // nullptr when parsing failed
  bool ok = false;
  devshare::Status status;
};

Checked ParseAndCheck(std::string_view src) {
  Errors errors(src);
  Checked out;
  out.root = Parse(src, errors);
  REQUIRE_MESSAGE(out.root != nullptr, errors.take().ToString());
  out.ok = Check(*out.root, errors);
  out.status = errors.take();
  return out;
}

TEST_CASE("cel checker: the types of expressions") {
  struct Row {
    std::string_view src;
    std::string_view type;
  };
  const Row rows[] = {
      {"device", "kubernetes.DRADevice"},
      {"device.driver", "string"},
      {"device.allowMultipleAllocations", "bool"},
      {"device.attributes", "map(string, map(string, dyn))"},
      {"device.attributes['d']", "map(string, dyn)"},
      {"device.attributes['d'].model", "dyn"},
      {"device.capacity['d'].memory", "kubernetes.Quantity"},
      {"has(device.attributes.d)", "bool"},
      {"1 + 2", "int"},
      {"1u * 2u", "uint"},
      {"1.5 / 2.0", "double"},
      {"'a' + 'b'", "string"},
      {"[1] + [2]", "list(int)"},
      {"[1] + []", "list(dyn)"},
      {"[]", "list(dyn)"},
      {"[[1], [2]]", "list(list(int))"},
      {"device.attributes['d'].x + 1", "int"},  // dyn takes the other side's type
      {"device.attributes['d'].x + device.attributes['d'].y", "dyn"},
      {"-1.5", "double"},
      {"1 < 2u", "bool"},  // ordering across numeric types
      {"true ? 1 : 2", "int"},
      {"true ? 1 : device.attributes['d'].x", "dyn"},
      {"true ? null : quantity('1')", "dyn"},  // assignable, not equivalent
      {"'a' in ['a']", "bool"},
      {"'k' in device.attributes", "bool"},
      {"size('abc')", "int"},
      {"'abc'.size()", "int"},
      {"size(device.attributes)", "int"},
      {"'Ab'.lowerAscii()", "string"},
      {"quantity('1Gi')", "kubernetes.Quantity"},
      {"quantity('1').add(1)", "kubernetes.Quantity"},
      {"quantity('1').compareTo(quantity('2'))", "int"},
      {"semver('1.0.0').major()", "int"},
      {"semver('1', true) == semver('1.0.0')", "bool"},
      {"device.attributes['d'].v.compareTo(semver('1.0.0'))", "int"},
      {"device.attributes['d'].x.compareTo(device.attributes['d'].y)", "int"},
      {"device.attributes['d'].x.isGreaterThan(device.attributes['d'].y)", "bool"},
      {"[1, 2].all(x, x > 0)", "bool"},
      {"device.attributes.exists(d, d == 'x')", "bool"},
      {"device.attributes['d'].l.exists_one(x, x)", "bool"},
      {"['a'].exists(x, x.startsWith('a'))", "bool"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.src);
    Checked c = ParseAndCheck(row.src);
    CAPTURE(c.status.ToString());
    REQUIRE(c.ok);
    CHECK(TypeName(*c.root->type) == row.type);
  }
}

TEST_CASE("cel checker: calls resolve to the function devshare evaluates") {
  struct Row {
    std::string_view src;
    Fn fn;
  };
  const Row rows[] = {
      {"size('a')", Fn::kSize},
      {"'a'.endsWith('b')", Fn::kEndsWith},
      {"[1].includes(1)", Fn::kIncludes},
      {"isQuantity('1')", Fn::kIsQuantity},
      {"sign(quantity('1'))", Fn::kSign},
      {"quantity('1').sub(quantity('1'))", Fn::kSub},
      {"quantity('1').asInteger()", Fn::kAsInteger},
      {"quantity('1').isInteger()", Fn::kIsInteger},
      {"isSemver('1.0.0', true)", Fn::kIsSemver},
      {"semver('1.0.0').patch()", Fn::kPatch},
      {"semver('1.0.0').isLessThan(semver('2.0.0'))", Fn::kIsLessThan},
  };
  for (const Row& row : rows) {
    CAPTURE(row.src);
    Checked c = ParseAndCheck(row.src);
    REQUIRE(c.ok);
    CHECK(c.root->fn == row.fn);
  }
}

TEST_CASE("cel checker: type errors at the offending node") {
  struct Row {
    std::string_view src;
    StatusCode code;
    std::size_t offset;        // kMalformed
    std::string_view message;  // in the message (kMalformed) or field() (kUnsupported)
  };
  const Row rows[] = {
      {"x", StatusCode::kMalformed, 0, "undeclared reference to 'x'"},
      {"device.driver == y", StatusCode::kMalformed, 17, "undeclared reference to 'y'"},
      {"device.foo", StatusCode::kMalformed, 7, "undefined field 'foo'"},
      {"device.driver.x", StatusCode::kMalformed, 14,
       "type 'string' does not support field selection"},
      {"1 + 1u", StatusCode::kMalformed, 2,
       "found no matching overload for '_+_' applied to '(int, uint)'"},
      {"1 == 'a'", StatusCode::kMalformed, 2,
       "found no matching overload for '_==_' applied to '(int, string)'"},
      {"'a' < 1", StatusCode::kMalformed, 4, "found no matching overload for '_<_'"},
      {"1.5 % 2.0", StatusCode::kMalformed, 4, "found no matching overload for '_%_'"},
      {"!1", StatusCode::kMalformed, 0, "found no matching overload for '!_'"},
      {"-1u", StatusCode::kMalformed, 0, "found no matching overload for '-_'"},
      {"1 && true", StatusCode::kMalformed, 2, "found no matching overload for '_&&_'"},
      {"1 ? 2 : 3", StatusCode::kMalformed, 2, "found no matching overload for '_?_:_'"},
      {"true ? 1 : 'a'", StatusCode::kMalformed, 5, "found no matching overload for '_?_:_'"},
      {"[1, 'a']", StatusCode::kMalformed, 4, "expected type 'int' but found 'string'"},
      {"1 in 2", StatusCode::kMalformed, 2, "found no matching overload for '@in'"},
      {"'a'[0]", StatusCode::kMalformed, 3, "found no matching overload for '_[_]'"},
      {"size(1)", StatusCode::kMalformed, 0,
       "found no matching overload for 'size' applied to '(int)'"},
      {"quantity(1)", StatusCode::kMalformed, 0, "found no matching overload for 'quantity'"},
      {"'a'.startsWith(1)", StatusCode::kMalformed, 4,
       "found no matching overload for 'startsWith'"},
      {"1.all(x, true)", StatusCode::kMalformed, 0,
       "expression of type 'int' cannot be the range of a comprehension"},
      {"[1].all(x, x)", StatusCode::kMalformed, 4, "found no matching overload for '_&&_'"},
      {"[1].exists_one(x, 1)", StatusCode::kMalformed, 4, "found no matching overload for '_?_:_'"},
      {"[1].all(x, y)", StatusCode::kMalformed, 11, "undeclared reference to 'y'"},
      {"matches('a', 'b')", StatusCode::kUnsupported, 0, "matches (RE2 regular expressions)"},
      {"quantity('1').asApproximateFloat() > 0.0", StatusCode::kUnsupported, 0,
       "asApproximateFloat (its result depends on how Go holds the quantity)"},
      {"int(1) == 1", StatusCode::kUnsupported, 0, "the function 'int'"},
      {"cel.bind(x, 1, x) == 1", StatusCode::kUnsupported, 0, "the function 'cel.bind'"},
      {"type(1) == int", StatusCode::kUnsupported, 0, "the function 'type'"},
      {"int == int", StatusCode::kUnsupported, 0, "the type name 'int'"},
      {"[[1]].all(l, l.all(x, x > 0))", StatusCode::kUnsupported, 0,
       "a comprehension inside a comprehension"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.src);
    Checked c = ParseAndCheck(row.src);
    CAPTURE(c.status.ToString());
    CHECK_FALSE(c.ok);
    CHECK(c.status.code() == row.code);
    if (row.code == StatusCode::kMalformed) {
      CHECK(c.status.offset() == row.offset);
      CHECK(c.status.message().find(row.message) != std::string_view::npos);
    } else {
      CHECK(c.status.field() == row.message);
    }
  }
}

TEST_CASE("cel checker: a bound comprehension variable shadows device and namespaces") {
  CHECK(ParseAndCheck("['a'].all(device, device.startsWith('a'))").ok);
  CHECK(ParseAndCheck("['a'].all(cel, cel.startsWith('a'))").ok);
  CHECK_FALSE(ParseAndCheck("['a'].all(x, device.startsWith('a'))").ok);
}

}  // namespace
