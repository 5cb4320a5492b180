// The core's one JSON member reader (src/base/json_reader.hpp): Go's rule
// for absent and null members, the first error kept, paths in messages.
#include "src/base/json_reader.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace {

namespace bj = boost::json;
using devshare::internal::JsonReader;

bj::object Object(std::string_view json) { return bj::parse(json).as_object(); }

}  // namespace

TEST_CASE("Member and ObjectMember: absent and null are nothing") {
  const bj::object o = Object(R"({"a": 1, "n": null, "o": {"x": 2}})");
  using devshare::internal::Member;
  using devshare::internal::ObjectMember;
  REQUIRE(Member(o, "a") != nullptr);
  CHECK(Member(o, "a")->as_int64() == 1);
  CHECK(Member(o, "n") == nullptr);
  CHECK(Member(o, "missing") == nullptr);
  REQUIRE(ObjectMember(o, "o") != nullptr);
  CHECK(ObjectMember(o, "o")->contains("x"));
  CHECK(ObjectMember(o, "a") == nullptr);  // another kind: skipped, not an error
  CHECK(ObjectMember(o, "n") == nullptr);
}

TEST_CASE("JsonReader: scalars, leaving the destination for absent and null") {
  const bj::object o =
      Object(R"({"s": "text", "i": -3, "b": true, "n": null, "list": ["x", "y"], "o": {}})");
  JsonReader r("doc");
  std::string s = "kept", n = "kept", absent = "kept";
  std::int64_t i = 0;
  bool b = false;
  std::vector<std::string> list;
  std::optional<std::string> opt;
  r.String(o, "s", "s", s);
  r.String(o, "n", "n", n);
  r.String(o, "absent", "absent", absent);
  r.Int(o, "i", "i", i);
  r.Bool(o, "b", "b", b);
  r.Strings(o, "list", "list", list);
  r.String(o, "s", "s", opt);
  CHECK(r.ok());
  CHECK(s == "text");
  CHECK(n == "kept");
  CHECK(absent == "kept");
  CHECK(i == -3);
  CHECK(b);
  CHECK(list == std::vector<std::string>{"x", "y"});
  CHECK(opt == "text");
  CHECK(r.Object(o, "o", "o") != nullptr);
  CHECK(r.Object(o, "n", "n") == nullptr);
  CHECK(r.ok());
}

TEST_CASE("JsonReader: members and elements with their paths") {
  const bj::object o = Object(R"({"m": {"a": 1, "b/c": 2}, "arr": [{"k": 1}, {"k": 2}]})");
  JsonReader r("doc");
  std::map<std::string, std::string> paths;
  r.Members(o, "m", "spec.m", [&](const std::string& key, const bj::value&, const std::string& at) {
    paths[key] = at;
  });
  std::vector<std::string> items;
  r.EachObject(o, "arr", "spec.arr",
               [&](const bj::object&, const std::string& at) { items.push_back(at); });
  CHECK(r.ok());
  CHECK(paths ==
        std::map<std::string, std::string>{{"a", "spec.m[\"a\"]"}, {"b/c", "spec.m[\"b/c\"]"}});
  CHECK(items == std::vector<std::string>{"spec.arr[0]", "spec.arr[1]"});
}

TEST_CASE("JsonReader: the first error is kept, and nothing is read after it") {
  const bj::object o = Object(R"({"s": 1, "t": "later", "arr": [{}, 2, 3]})");
  JsonReader r("doc");
  std::string s, t;
  r.String(o, "s", "spec.s", s);
  r.String(o, "t", "spec.t", t);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == devshare::StatusCode::kMalformed);
  CHECK(r.status().message() == "doc: spec.s: expected a string, got an integer");
  CHECK(t.empty());
  CHECK(r.Get(o, "t") == nullptr);
  r.Fail("spec.t", "other");
  CHECK(r.status().message() == "doc: spec.s: expected a string, got an integer");

  JsonReader elements("doc");
  int seen = 0;
  elements.EachObject(o, "arr", "arr", [&](const bj::object&, const std::string&) { ++seen; });
  CHECK(seen == 1);
  CHECK(elements.status().message() == "doc: arr[1]: expected an object, got an integer");
}

TEST_CASE("JsonReader: integer ranges, and messages of the decoder's own") {
  const bj::object o = Object(R"({"big": 3000000000, "neg": -1})");
  JsonReader r("doc");
  std::int64_t v = 7;
  r.Int(o, "big", "big", v, INT32_MIN, INT32_MAX);
  CHECK(r.status().message() == "doc: big: 3000000000 is out of range [-2147483648, 2147483647]");
  CHECK(v == 7);

  JsonReader own("doc");
  own.Fail(devshare::Status::Malformed("doc: x is missing", "x"));
  own.Fail("y", "ignored");
  CHECK(own.status().message() == "doc: x is missing");
  CHECK(own.status().field() == "x");

  JsonReader plain("doc");
  plain.Fail("spec.name", "missing");
  CHECK(plain.status().message() == "doc: spec.name: missing");
}
