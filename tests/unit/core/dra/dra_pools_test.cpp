// The pools a node sees, as Kubernetes v1.37's structured allocator gathers
// them: newest generation only, complete or marked incomplete, obsolete
// ones dropped, invalid ones marked, binding-condition pools last.
#include "devshare/dra_pools.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace devshare;
using namespace devshare::dra;

namespace {

Device Named(std::string name, std::optional<NodeScope> scope = std::nullopt) {
  Device d;
  d.name = std::move(name);
  d.node_scope = std::move(scope);
  return d;
}

ResourceSlice Slice(std::string name, std::string pool, std::int64_t generation, std::int64_t count,
                    std::vector<std::string> devices, std::string node = "node-a") {
  ResourceSlice s;
  s.name = std::move(name);
  s.driver = "gpu.example.com";
  s.pool = Pool{std::move(pool), generation, count};
  s.node_scope.node_name = std::move(node);
  for (std::string& d : devices) s.devices.push_back(Named(std::move(d)));
  return s;
}

Node NodeA() {
  Node n;
  n.name = "node-a";
  n.labels.Set("zone", "z1");
  return n;
}

std::vector<std::string> DeviceNames(const GatheredPool& pool) {
  std::vector<std::string> names;
  for (const ResourceSlice* s : pool.device_slices) {
    for (const Device& d : s->devices) names.push_back(d.name);
  }
  return names;
}

}  // namespace

TEST_CASE("dra pools: the newest complete generation of each pool, in driver and pool order") {
  std::vector<ResourceSlice> slices = {
      Slice("b-2", "pool-b", 1, 2, {"b1"}),
      Slice("a-old", "pool-a", 1, 1, {"stale"}),
      Slice("b-1", "pool-b", 1, 2, {"b0"}),
      Slice("a-new", "pool-a", 2, 1, {"fresh"}),
      Slice("other-node", "pool-c", 1, 1, {"c0"}, "node-b"),
  };
  std::vector<GatheredPool> pools = GatherPools(slices, NodeA());
  REQUIRE(pools.size() == 2);
  CHECK(pools[0].pool == "pool-a");
  CHECK(DeviceNames(pools[0]) == std::vector<std::string>{"fresh"});
  CHECK(pools[1].pool == "pool-b");
  CHECK_FALSE(pools[1].incomplete);
  CHECK(DeviceNames(pools[1]) == std::vector<std::string>{"b0", "b1"});  // slices by name
}

TEST_CASE(
    "dra pools: a pool missing slices is incomplete; one with a newer slice elsewhere is "
    "left out") {
  std::vector<ResourceSlice> slices = {
      Slice("p-1", "pool", 1, 3, {"d0"}),
      Slice("p-2", "pool", 1, 3, {"d1"}),
  };
  SUBCASE("missing") {
    std::vector<GatheredPool> pools = GatherPools(slices, NodeA());
    REQUIRE(pools.size() == 1);
    CHECK(pools[0].incomplete);
    CHECK(pools[0].device_slices.empty());
  }
  SUBCASE("the third slice is for another node: complete, and its devices are elsewhere") {
    slices.push_back(Slice("p-3", "pool", 1, 3, {"d2"}, "node-b"));
    slices.back().node_scope = NodeScope{};
    slices.back().node_scope.node_selector =
        NodeSelector{{NodeSelectorTerm{{NodeSelectorRequirement{"zone", "In", {"z2"}}}, {}}}};
    std::vector<GatheredPool> pools = GatherPools(slices, NodeA());
    REQUIRE(pools.size() == 1);
    CHECK_FALSE(pools[0].incomplete);
    CHECK(DeviceNames(pools[0]) == std::vector<std::string>{"d0", "d1"});
    REQUIRE(pools[0].device_slices_elsewhere.size() == 1);
    CHECK(pools[0].device_slices_elsewhere[0]->name == "p-3");
  }
  SUBCASE("a newer generation published for another node: obsolete here") {
    slices.push_back(Slice("p-new", "pool", 2, 1, {"d9"}, "node-b"));
    slices.back().node_scope = NodeScope{};
    slices.back().node_scope.node_selector =
        NodeSelector{{NodeSelectorTerm{{NodeSelectorRequirement{"zone", "In", {"z2"}}}, {}}}};
    CHECK(GatherPools(slices, NodeA()).empty());
  }
}

TEST_CASE("dra pools: which slices a node sees") {
  ResourceSlice all = Slice("all", "shared", 1, 1, {"s0"}, "");
  all.node_scope.all_nodes = true;
  ResourceSlice selected = Slice("sel", "zone", 1, 1, {"z0"}, "");
  selected.node_scope.node_selector =
      NodeSelector{{NodeSelectorTerm{{NodeSelectorRequirement{"zone", "In", {"z1"}}}, {}}}};
  ResourceSlice per_device = Slice("per", "per", 1, 1, {}, "");
  per_device.per_device_node_selection = true;
  per_device.devices = {Named("far", NodeScope{"node-b", {}, false}),
                        Named("near", NodeScope{"node-a", {}, false})};
  ResourceSlice counters_only = Slice("counters", "counters", 1, 1, {}, "");
  counters_only.shared_counters = {CounterSet{"gpu-0", {{"memory", Quantity{1000}}}}};
  ResourceSlice grouped = Slice("grouped", "grouped", 1, 1, {"g0"});
  grouped.devices[0].consumes_counters = {CounterConsumption{"gpu-0", {}, {"group-a"}}};
  std::vector<GatheredPool> pools =
      GatherPools({all, selected, per_device, counters_only, grouped}, NodeA());
  std::vector<std::string> seen;
  for (const GatheredPool& p : pools) seen.push_back(p.pool);
  // Counter-only slices target no node; compatibility groups are alpha (off).
  CHECK(seen == std::vector<std::string>{"per", "shared", "zone"});
}

TEST_CASE("dra pools: invalid pools are marked with the reason") {
  struct Row {
    std::vector<ResourceSlice> slices;
    std::string reason;
  };
  ResourceSlice duplicate = Slice("d", "pool", 1, 1, {"gpu-0", "gpu-0"});
  ResourceSlice consumer = Slice("c", "pool", 1, 2, {"mig-0"});
  consumer.devices[0].consumes_counters = {
      CounterConsumption{"gpu-0", {{"memory", Quantity{1000}}}, {}}};
  ResourceSlice counters = Slice("s", "pool", 1, 2, {});
  counters.shared_counters = {CounterSet{"gpu-0", {{"memory", Quantity{80000}}}}};
  ResourceSlice wrong_counter = counters;
  wrong_counter.shared_counters[0].counters = {{"cores", Quantity{100000}}};
  ResourceSlice no_set = consumer;
  no_set.pool.resource_slice_count = 1;
  ResourceSlice twice = counters;
  twice.name = "t";
  twice.pool.resource_slice_count = 3;
  ResourceSlice consumer3 = consumer;
  consumer3.pool.resource_slice_count = 3;
  ResourceSlice counters3 = counters;
  counters3.pool.resource_slice_count = 3;
  const Row rows[] = {
      {{duplicate}, "duplicate device name gpu-0"},
      {{no_set}, "counter set gpu-0 not found"},
      {{consumer, wrong_counter}, "counter memory not found in counter set gpu-0"},
      {{consumer3, counters3, twice}, "duplicate counter set name gpu-0"},
      {{consumer, counters}, ""},
  };
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    CAPTURE(i);
    std::vector<GatheredPool> pools = GatherPools(rows[i].slices, NodeA());
    REQUIRE(pools.size() == 1);
    CHECK(pools[0].invalid == !rows[i].reason.empty());
    CHECK(pools[0].invalid_reason == rows[i].reason);
    if (rows[i].reason.empty()) CHECK(pools[0].counter_sets.contains("gpu-0"));
  }
}

TEST_CASE("dra pools: pools with binding conditions come last") {
  ResourceSlice bound = Slice("a", "a-pool", 1, 1, {"fabric-0"});
  bound.devices[0].binding_conditions = {"attached"};
  std::vector<GatheredPool> pools =
      GatherPools({bound, Slice("z", "z-pool", 1, 1, {"g"})}, NodeA());
  REQUIRE(pools.size() == 2);
  CHECK(pools[0].pool == "z-pool");
  CHECK(pools[1].pool == "a-pool");
}
