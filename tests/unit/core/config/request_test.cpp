// Per-container device requests (spec/hami-behaviour.md §3.3).
#include "devshare/request.hpp"

#include <doctest/doctest.h>

#include "testutil.hpp"

using namespace devshare;

TEST_CASE("requests: spec §3.3 table") {
  VendorSpec nvidia = DefaultDeviceConfig().vendors[0];
  struct Row {
    const char* what;
    StringMap limits;
    StringMap requests;
    ContainerRequest want;
  };
  const Row rows[] = {
      {"count only: a whole card by percentage",
       {{"nvidia.com/gpu", "1"}},
       {},
       {1, "NVIDIA", 0, 100, 0}},
      {"memory and cores",
       {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}},
       {},
       {2, "NVIDIA", 3000, 101, 30}},
      {"requests when limits lack the key",
       {{"nvidia.com/gpu", "1"}},
       {{"nvidia.com/gpumem", "1024"}},
       {1, "NVIDIA", 1024, 101, 0}},
      {"16Gi of gpumem is above int32: no request",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "16Gi"}},
       {},
       {0, "", 0, 101, 0}},
      {"fractional gpumem: no request",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1.5"}},
       {},
       {0, "", 0, 101, 0}},
      {"percentage above 100 clamps",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "150"}},
       {},
       {1, "NVIDIA", 0, 100, 0}},
      {"percentage 0 is unset, then the default whole card",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}},
       {},
       {1, "NVIDIA", 0, 100, 0}},
      {"percentage 40",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "40"}},
       {},
       {1, "NVIDIA", 0, 40, 0}},
      {"no count: no request", {{"nvidia.com/gpumem", "1000"}}, {}, {0, "", 0, 101, 0}},
      {"count 0: no request", {{"nvidia.com/gpu", "0"}}, {}, {0, "", 0, 101, 0}},
      {"non-integral cores keep the default",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "12.5"}},
       {},
       {1, "NVIDIA", 0, 100, 0}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    Container c{"c", row.limits, row.requests, false};
    CHECK(GenerateRequest(c, nvidia) == row.want);
  }
}

TEST_CASE("requests: memory factor and default memory") {
  VendorSpec v = DefaultDeviceConfig().vendors[0];
  v.memory_factor = 2;
  Container c{"c", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}}, {}, false};
  CHECK(GenerateRequest(c, v).memreq == 2000);
  // 1Gi * 2 would pass int32 / 2: rejected.
  c.limits.Set("nvidia.com/gpumem", "1Gi");
  CHECK(GenerateRequest(c, v).nums == 0);
  v.memory_factor = 1;
  v.default_memory = 4096;
  v.default_cores = 10;
  Container d{"d", {{"nvidia.com/gpu", "1"}}, {}, false};
  CHECK(GenerateRequest(d, v) == ContainerRequest{1, "NVIDIA", 4096, 101, 10});
}

TEST_CASE("pod requests: init containers first, one entry per container") {
  Pod pod = testing::MakePod("p").Init(0).Init(1, 100).Container(0).Container(2);
  auto r = PodRequests(pod, DefaultDeviceConfig());
  REQUIRE(r.size() == 4);
  CHECK(r[0].empty());
  REQUIRE(r[1].size() == 1);
  CHECK(r[1][0].memreq == 100);
  CHECK(r[2].empty());
  CHECK(r[3][0].nums == 2);
  CHECK(HasRequests(r));
  CHECK_FALSE(HasRequests(PodRequests(testing::MakePod("q").Container(0), DefaultDeviceConfig())));
}
