// The devices the allocator's search tries and their order
// (src/dra/candidates.hpp).
#include "src/dra/candidates.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using devshare::dra::AllocatedState;
using devshare::dra::AllocatorOptions;
using devshare::dra::Capacity;
using devshare::dra::Device;
using devshare::dra::DeviceId;
using devshare::dra::DeviceOrder;
using devshare::dra::GatheredPool;
using devshare::dra::Quantity;
using devshare::dra::ResourceSlice;
using devshare::dra::allocator::CandidateDevice;
using devshare::dra::allocator::OrderedCandidates;

ResourceSlice Slice(std::string pool, std::vector<std::string> devices) {
  ResourceSlice s;
  s.name = pool + "-slice";
  s.driver = "gpu.example.com";
  s.pool.name = std::move(pool);
  for (std::string& name : devices) {
    Device& d = s.devices.emplace_back();
    d.name = std::move(name);
    d.allow_multiple_allocations = true;
    d.capacity["memory"] = Capacity{Quantity{100000}, std::nullopt};
  }
  return s;
}

GatheredPool Pool(const ResourceSlice& slice) {
  GatheredPool p;
  p.driver = slice.driver;
  p.pool = slice.pool.name;
  p.device_slices = {&slice};
  return p;
}

std::vector<std::string> Names(const std::vector<CandidateDevice>& candidates) {
  std::vector<std::string> names;
  for (const CandidateDevice& c : candidates) names.push_back(c.id.pool + "/" + c.id.device);
  return names;
}

}  // namespace

TEST_CASE("OrderedCandidates: upstream's order, leaving out incomplete and invalid pools") {
  const ResourceSlice a = Slice("a", {"a0", "a1"});
  const ResourceSlice b = Slice("b", {"b0"});
  const ResourceSlice c = Slice("c", {"c0"});
  const ResourceSlice d = Slice("d", {"d0"});
  std::vector<GatheredPool> pools = {Pool(a), Pool(b), Pool(c), Pool(d)};
  pools[1].incomplete = true;
  pools[2].invalid = true;
  const std::vector<CandidateDevice> got = OrderedCandidates(pools, AllocatedState{}, {});
  CHECK(Names(got) == std::vector<std::string>{"a/a0", "a/a1", "d/d0"});
  REQUIRE(got.size() == 3);
  CHECK(&got[1].device() == &a.devices[1]);
  CHECK(got[2].pool == &pools[3]);
}

TEST_CASE("OrderedCandidates: by the capacity allocated claims use, upstream's order on ties") {
  const ResourceSlice a = Slice("a", {"a0", "a1", "a2", "a3"});
  const std::vector<GatheredPool> pools = {Pool(a)};
  AllocatedState allocated;
  allocated.consumed_capacity[DeviceId{"gpu.example.com", "a", "a1"}]["memory"] = Quantity{20000};
  allocated.consumed_capacity[DeviceId{"gpu.example.com", "a", "a3"}]["memory"] = Quantity{60000};
  AllocatorOptions options;
  options.device_order = DeviceOrder::kMostUsedFirst;
  CHECK(Names(OrderedCandidates(pools, allocated, options)) ==
        std::vector<std::string>{"a/a3", "a/a1", "a/a0", "a/a2"});
  options.device_order = DeviceOrder::kLeastUsedFirst;
  CHECK(Names(OrderedCandidates(pools, allocated, options)) ==
        std::vector<std::string>{"a/a0", "a/a2", "a/a1", "a/a3"});
  options.device_order = DeviceOrder::kLowestCostFirst;
  options.device_cost = [](const DeviceId& id, const Device&) {
    return id.device == "a2" ? 1.0 : 5.0;
  };
  CHECK(Names(OrderedCandidates(pools, allocated, options)) ==
        std::vector<std::string>{"a/a2", "a/a0", "a/a1", "a/a3"});
}
