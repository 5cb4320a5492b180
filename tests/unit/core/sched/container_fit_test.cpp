// The device checks of Fit (spec §4.4) that run inline for every device
// (src/sched/container_fit.hpp), and the policy names Filter validates.
#include "src/sched/container_fit.hpp"

#include <doctest/doctest.h>

#include "devshare/filter.hpp"
#include "testutil.hpp"

using namespace devshare;
using internal::HotDevice;

namespace {

// A device of 100 cores and 8000 MiB with 10 slots, `used` of them taken.
HotDevice Device8G(std::int32_t used, std::int32_t usedmem, std::int32_t usedcores) {
  HotDevice d;
  d.count = 10;
  d.devmem = 8000;
  d.devcore = 100;
  d.used = used;
  d.usedmem = usedmem;
  d.usedcores = usedcores;
  return d;
}

ContainerRequest Ask(std::int32_t memreq, std::int32_t percentage) {
  ContainerRequest r;
  r.nums = 1;
  r.vendor = "NVIDIA";
  r.memreq = memreq;
  r.mem_percentage = percentage;
  return r;
}

}  // namespace

TEST_CASE("container fit: the memory a request takes on a device") {
  using internal::FitMemory;
  CHECK(FitMemory(Ask(3000, ContainerRequest::kPercentageUnset), 8000) == 3000);
  CHECK(FitMemory(Ask(3000, 50), 8000) == 3000);  // MiB asked: the percentage is ignored
  CHECK(FitMemory(Ask(0, 50), 8000) == 4000);
  CHECK(FitMemory(Ask(0, 33), 1000) == 330);  // rounded down
  CHECK(FitMemory(Ask(0, ContainerRequest::kPercentageUnset), 8000) == 0);
}

TEST_CASE("container fit: room checks fail with HAMi's reasons in HAMi's order") {
  using internal::CheckRoom;
  CHECK(CheckRoom(Device8G(1, 4000, 50), 4000, 50) == internal::kReasonCount);
  CHECK(CheckRoom(Device8G(1, 4000, 50), 4001, 50) == internal::kCardInsufficientMemory);
  CHECK(CheckRoom(Device8G(1, 4000, 50), 4000, 51) == internal::kCardInsufficientCore);
  // Memory is checked first when both are short.
  CHECK(CheckRoom(Device8G(1, 4000, 50), 4001, 51) == internal::kCardInsufficientMemory);
  // A whole device asked on a device someone uses, even with room.
  CHECK(CheckRoom(Device8G(1, 0, 0), 1000, 100) == internal::kExclusiveDeviceAllocateConflict);
  CHECK(CheckRoom(Device8G(0, 0, 0), 1000, 100) == internal::kReasonCount);
  // A zero-core ask on a device whose cores are all taken.
  CHECK(CheckRoom(Device8G(2, 1000, 100), 1000, 0) == internal::kCardComputeUnitsExhausted);
  CHECK(CheckRoom(Device8G(2, 1000, 99), 1000, 0) == internal::kReasonCount);
}

TEST_CASE(
    "container fit: fgd visits the smallest increase, then the fuller device, then the lower "
    "index") {
  using internal::FgdVisitsFirst;
  HotDevice a = Device8G(1, 0, 0), b = Device8G(1, 0, 0);
  a.index = 0;
  b.index = 1;
  CHECK(FgdVisitsFirst(0.5f, b, 0.7f, a));
  CHECK(!FgdVisitsFirst(0.7f, a, 0.5f, b));
  b.used = 2;
  CHECK(FgdVisitsFirst(0.5f, b, 0.5f, a));
  b.used = 1;
  CHECK(FgdVisitsFirst(0.5f, a, 0.5f, b));
  CHECK(!FgdVisitsFirst(0.5f, b, 0.5f, a));
}

TEST_CASE("filter options: a bad policy name is an error listing the valid ones") {
  ClusterSnapshot s;
  REQUIRE(s.AddNode(testing::MakeNode("node1").Gpus(1)).ok());
  const Pod pod = testing::MakePod("p").Container(1);
  auto error = [&](std::string node_policy, std::string gpu_policy) {
    FilterOptions o;
    o.node_policy = std::move(node_policy);
    o.gpu_policy = std::move(gpu_policy);
    const Result<FilterResult> r = Filter(s, pod, {}, 0, o);
    return r.ok() ? std::string("<ok>") : std::string(r.status().message());
  };
  CHECK(error("best", "spread") ==
        "unknown node policy \"best\" (want one of binpack, spread, fgd, volcano)");
  CHECK(error("binpack", "spread,best") ==
        "unknown GPU policy \"best\" (want one of binpack, spread, topology-aware, mutex, "
        "numa, fgd, volcano-binpack, volcano-spread)");
  CHECK(error("volcano", "binpack, volcano-spread") ==
        "GPU policy \"volcano-spread\" cannot be part of a chain");
  for (const auto& [name, policy] : kNodePolicyNames)
    CHECK(error(std::string(name), "spread") == "<ok>");
  for (const auto& [name, word] : kGpuPolicyNames)
    CHECK(error("binpack", std::string(name)) == "<ok>");
  CHECK(error("binpack", " numa , binpack ") == "<ok>");
}
