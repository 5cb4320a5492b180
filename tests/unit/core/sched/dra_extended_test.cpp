// Extended resources backed by DRA (devshare/dra_extended.hpp): the asks a
// pod makes, the annotation listing the claims made for them (total: every
// malformed value refused by the field), and the claim itself.
#include "devshare/dra_extended.hpp"

#include <doctest/doctest.h>

#include "testutil.hpp"

using namespace devshare;
using namespace devshare::dra;

TEST_CASE("dra extended: the asks for resources a served class backs, in the containers' order") {
  DeviceClasses classes;
  classes["gpu"] = DeviceClass{"gpu", "", {}, "example.com/gpu"};
  classes["nic"] = DeviceClass{"nic", "", {}, "example.com/nic"};
  Pod pod = devshare::testing::MakePod("p");
  pod.init_containers.push_back(
      Container{"init", {{"deviceclass.resource.kubernetes.io/gpu", "1"}}, {}, false});
  pod.containers.push_back(
      Container{"a", {{"cpu", "1"}, {"example.com/gpu", "3"}}, {{"example.com/gpu", "3"}}, false});
  pod.containers.push_back(
      Container{"b", {{"example.com/nic", "1"}, {"nvidia.com/gpu", "1"}}, {}, false});
  auto asks = ServedExtendedResources(pod, classes, {"gpu"}, {"nvidia.com/gpu"});
  REQUIRE(asks.ok());
  CHECK(*asks == std::vector<ExtendedResourceAsk>{
                     {true, 0, "init", "deviceclass.resource.kubernetes.io/gpu", "gpu", 1, false},
                     {false, 0, "a", "example.com/gpu", "gpu", 3, true}});
  // A device plugin's name is left alone even when a served class names it.
  classes["gpu"].extended_resource_name = "nvidia.com/gpu";
  pod.containers[0].limits = StringMap{{"nvidia.com/gpu", "1"}};
  asks = ServedExtendedResources(pod, classes, {"gpu"}, {"nvidia.com/gpu"});
  REQUIRE(asks.ok());
  CHECK(asks->size() == 1);
  for (const char* bad : {"0", "1.5", "abc"}) {
    CAPTURE(bad);
    pod.containers[0].limits = StringMap{{"deviceclass.resource.kubernetes.io/gpu", bad}};
    auto refused = ServedExtendedResources(pod, classes, {"gpu"}, {});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().field() == "spec.containers[0].resources.limits");
  }
}

TEST_CASE("dra extended: the claims annotation round-trips and refuses what is malformed") {
  const std::vector<ExtendedClaim> claims = {{"c-0", "gpu", 2}, {"c-1", "nic", 1}};
  auto back = DecodeExtendedClaims(EncodeExtendedClaims(claims));
  REQUIRE(back.ok());
  CHECK(*back == claims);
  struct Bad {
    const char* json;
    const char* field;
  };
  const Bad rows[] = {
      {"{}", "value"},
      {"[1]", "[0]"},
      {R"([{"deviceClassName":"gpu","count":1}])", "[0].claim"},
      {R"([{"claim":"c","count":1}])", "[0].deviceClassName"},
      {R"([{"claim":"c","deviceClassName":"gpu","count":0}])", "[0].count"},
      {R"([{"claim":"c","deviceClassName":"gpu"}])", "[0].count"},  // found by the fuzzer
      {R"([{"claim":"c","deviceClassName":"gpu","count":"2"}])", "[0].count"},
      {R"([{"claim":"c","deviceClassName":"gpu","count":1},{"claim":7}])", "[1].claim"},
  };
  for (const Bad& row : rows) {
    CAPTURE(row.json);
    auto r = DecodeExtendedClaims(row.json);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().field() == row.field);
  }
  CHECK_FALSE(DecodeExtendedClaims("[").ok());
}

TEST_CASE("dra extended: the claim asks exactly the count of the class") {
  const ResourceClaim c = MakeExtendedClaim({"c-0", "gpu", 2}, "team-a");
  CHECK(c.claim_namespace == "team-a");
  CHECK(c.name == "c-0");
  REQUIRE(c.spec.requests.size() == 1);
  CHECK(c.spec.requests[0].name == "devices");
  REQUIRE(c.spec.requests[0].exactly);
  CHECK(c.spec.requests[0].exactly->device_class_name == "gpu");
  CHECK(c.spec.requests[0].exactly->count == 2);
  CHECK(c.spec.requests[0].exactly->allocation_mode == AllocationMode::kExactCount);
}
