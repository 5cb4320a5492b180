// A claim's matchAttribute and distinctAttribute constraints as the
// allocator's search adds and takes back devices (src/dra/constraint.hpp).
#include "src/dra/constraint.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using devshare::dra::AttributeValue;
using devshare::dra::Device;
using devshare::dra::DeviceId;
using devshare::dra::allocator::Constraint;

Device WithModel(std::string name, AttributeValue model) {
  Device d;
  d.name = std::move(name);
  d.attributes["model"] = std::move(model);
  return d;
}

DeviceId Id(const Device& d) { return DeviceId{"gpu.example.com", "pool", d.name}; }

}  // namespace

TEST_CASE("Constraint: matchAttribute takes devices of one value, and forgets on Remove") {
  Constraint match({}, "gpu.example.com/model", false);
  const Device a1 = WithModel("a1", std::string("A100"));
  const Device a2 = WithModel("a2", std::string("A100"));
  const Device h = WithModel("h", std::string("H100"));
  CHECK(match.Add("req", "", a1, Id(a1)));  // by the name in the driver's domain
  CHECK(match.Add("req", "", a2, Id(a2)));
  CHECK_FALSE(match.Add("req", "", h, Id(h)));
  match.Remove("req", "");
  match.Remove("req", "");
  CHECK(match.Add("req", "", h, Id(h)));  // none left: any value starts again
  CHECK_FALSE(match.Add("req", "", a1, Id(a1)));
}

TEST_CASE("Constraint: distinctAttribute takes devices of different values") {
  Constraint distinct({}, "model", true);
  const Device a = WithModel("a", std::int64_t{1});
  const Device b = WithModel("b", std::int64_t{2});
  const Device a_again = WithModel("c", std::int64_t{1});
  const Device text_one = WithModel("d", std::string("1"));  // another kind: another value
  CHECK(distinct.Add("req", "", a, Id(a)));
  CHECK(distinct.Add("req", "", b, Id(b)));
  CHECK_FALSE(distinct.Add("req", "", a_again, Id(a_again)));
  CHECK(distinct.Add("req", "", text_one, Id(text_one)));
  distinct.Remove("req", "");  // text_one
  distinct.Remove("req", "");  // b
  CHECK(distinct.Add("req", "", b, Id(b)));
}

TEST_CASE("Constraint: a device without the attribute, or with a list, breaks it") {
  Constraint match({}, "model", false);
  Constraint distinct({}, "model", true);
  Device bare;
  bare.name = "bare";
  const Device list = WithModel("list", std::vector<std::string>{"A100"});
  CHECK_FALSE(match.Add("req", "", bare, Id(bare)));
  CHECK_FALSE(distinct.Add("req", "", bare, Id(bare)));
  CHECK_FALSE(distinct.Add("req", "", list, Id(list)));
  CHECK(match.Add("req", "", list, Id(list)));        // the first value is taken as it is
  CHECK_FALSE(match.Add("req", "", list, Id(list)));  // a list is never the same as another
  // Another driver's domain is not the device's own.
  Constraint foreign({}, "other.example.com/model", false);
  const Device a = WithModel("a", std::string("A100"));
  CHECK_FALSE(foreign.Add("req", "", a, Id(a)));
}

TEST_CASE("Constraint: only the requests it names, by request or request/subrequest") {
  Constraint match({"first", "second/large"}, "model", false);
  const Device a = WithModel("a", std::string("A100"));
  const Device h = WithModel("h", std::string("H100"));
  CHECK(match.Add("first", "", a, Id(a)));
  CHECK(match.Add("other", "", h, Id(h)));        // not named: not counted
  CHECK(match.Add("second", "small", h, Id(h)));  // another subrequest: not counted
  CHECK_FALSE(match.Add("second", "large", h, Id(h)));
  CHECK(match.Add("second", "large", a, Id(a)));
}
