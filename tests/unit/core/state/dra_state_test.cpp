// The DRA state of ClusterSnapshot: pools gathered per node as slices,
// nodes and claims change.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "devshare/dra_pools.hpp"
#include "devshare/snapshot.hpp"
#include "dra_snapshot_fixtures.hpp"

using namespace devshare;
using namespace devshare::dra;
using namespace devshare::dra::testing;

namespace {

// The pools as GatherPools reports them, by what they hold.
std::string Describe(const std::vector<GatheredPool>& pools) {
  std::string out;
  for (const GatheredPool& p : pools) {
    std::string d = p.driver + "/" + p.pool + (p.incomplete ? " incomplete" : "") +
                    (p.invalid ? " invalid" : "") + ":";
    for (const ResourceSlice* s : p.device_slices) d += " " + s->name;
    d += " |";
    for (const ResourceSlice* s : p.device_slices_elsewhere) d += " " + s->name;
    out += d + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE(
    "dra snapshot: each node's pools equal GatherPools over every slice, change after change") {
  // Random slices over three nodes: pools split over several slices and
  // nodes, generations moving on, slices selecting nodes by label or all
  // of them; after every change each node's pools are those gathered from
  // the whole list.
  std::mt19937_64 rng(7);
  ClusterSnapshot snapshot;
  std::map<std::string, ResourceSlice> slices;
  std::vector<Node> nodes = {LabelledNode("node-a", "z1"), LabelledNode("node-b", "z1"),
                             LabelledNode("node-c", "z2")};
  for (const Node& n : nodes) REQUIRE(snapshot.AddNode(n).ok());
  for (int step = 0; step < 400; ++step) {
    const int what = static_cast<int>(rng() % 10);
    const std::string name = "slice-" + std::to_string(rng() % 8);
    if (what < 6) {
      ResourceSlice s;
      s.name = name;
      s.driver = std::string(kDriver);
      s.pool = Pool{"pool-" + std::to_string(rng() % 3), static_cast<std::int64_t>(rng() % 3),
                    static_cast<std::int64_t>(1 + rng() % 3)};
      switch (rng() % 4) {
        case 0:
          s.node_scope.all_nodes = true;
          break;
        case 1: {
          NodeSelector selector;
          NodeSelectorTerm& term = selector.terms.emplace_back();
          term.match_expressions.push_back(NodeSelectorRequirement{"zone", "In", {"z1"}});
          s.node_scope.node_selector = selector;
          break;
        }
        default:
          s.node_scope.node_name = nodes[rng() % nodes.size()].name;
      }
      s.devices = {SharedGpu(static_cast<int>(rng() % 4))};
      slices[name] = s;
      snapshot.AddResourceSlice(s);
    } else if (what < 8) {
      CHECK(snapshot.RemoveResourceSlice(name) == (slices.erase(name) == 1));
    } else if (what == 8) {
      Node& n = nodes[rng() % nodes.size()];
      n.labels.Set("zone", rng() % 2 == 0 ? "z1" : "z2");
      REQUIRE(snapshot.AddNode(n).ok());
    } else {
      ClusterSnapshot copy = snapshot;  // a copy's pools point into its own slices
      snapshot = copy;
    }
    std::vector<ResourceSlice> all;
    for (const auto& [n, s] : slices) all.push_back(s);
    for (const Node& n : nodes) {
      Result<const std::vector<GatheredPool>*> pools = snapshot.DraPools(n.name);
      REQUIRE(pools.ok());
      INFO("step " << step << ", node " << n.name);
      CHECK(Describe(**pools) == Describe(GatherPools(all, n)));
    }
  }
  CHECK(snapshot.resource_slice_count() == slices.size());
}

TEST_CASE("dra snapshot: allocated claims hold devices until they are removed or replaced") {
  ClusterSnapshot snapshot = TwoNodes();
  const ResourceClaim big = Share("big", 80);
  auto first = snapshot.AllocateClaims({big}, "node-a");
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  ResourceClaim held = big;
  held.allocation = (**first)[0];
  snapshot.AddResourceClaim(held);
  CHECK(snapshot.dra_allocated().Shared(DeviceId{std::string(kDriver), "node-a", "gpu-0"}));
  // gpu-0 has 20 cores left: the next big share goes to gpu-1.
  CHECK(Chosen(snapshot.AllocateClaims({Share("next", 80)}, "node-a")) == Strings{"gpu:gpu-1"});
  // Replaced by itself: counted once.
  snapshot.AddResourceClaim(held);
  CHECK(Chosen(snapshot.AllocateClaims({Share("small", 20)}, "node-a")) == Strings{"gpu:gpu-0"});
  CHECK(snapshot.RemoveResourceClaim("default", "big"));
  CHECK(snapshot.dra_allocated().consumed_capacity.empty());
  CHECK(snapshot.dra_allocated().shares.empty());
  CHECK(Chosen(snapshot.AllocateClaims({Share("next", 80)}, "node-a")) == Strings{"gpu:gpu-0"});
  CHECK(!snapshot.RemoveResourceClaim("default", "big"));
  CHECK(snapshot.AllocateClaims({big}, "node-z").status().code() == StatusCode::kNotFound);
}
