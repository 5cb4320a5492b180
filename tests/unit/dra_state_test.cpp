// The DRA state of ClusterSnapshot (pools gathered per node as slices,
// nodes and claims change) and dra::Placer's node and device choice.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "devshare/dra_place.hpp"
#include "devshare/dra_pools.hpp"
#include "devshare/snapshot.hpp"
#include "dra_fixtures.hpp"

using namespace devshare;
using namespace devshare::dra;
using namespace devshare::dra::testing;

namespace {

Node LabelledNode(std::string name, std::string zone) {
  Node n = NamedNode(std::move(name));
  n.labels.Set("zone", std::move(zone));
  n.allocatable.Set("cpu", "8");
  n.allocatable.Set("memory", "64Gi");
  return n;
}

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

ResourceClaim Share(std::string name, std::int64_t cores) {
  DeviceSelection s = Select("gpu");
  s.capacity_requests = {{"cores", Q(cores)}, {"memory", Q(kGi)}};
  return Claim(std::move(name), {Exactly("gpu", s)});
}

ClusterSnapshot TwoNodes() {
  ClusterSnapshot snapshot;
  snapshot.AddDeviceClass(Classes().at("gpu"));
  for (const char* name : {"node-a", "node-b"}) {
    REQUIRE(snapshot.AddNode(LabelledNode(name, "z1")).ok());
    snapshot.AddResourceSlice(NodeSlice(name, {SharedGpu(0), SharedGpu(1)}));
  }
  return snapshot;
}

// Places `claim` where `placer` says and records its allocation.
std::string PlaceOne(ClusterSnapshot& snapshot, Placer& placer, ResourceClaim claim) {
  Result<Placement> p = placer.Place(snapshot, {claim}, PodResources{});
  REQUIRE(p.ok());
  if (!p->chosen) return "none";
  claim.allocation = p->chosen->allocations[0];
  const std::string where = p->chosen->node + "/" + claim.allocation->devices[0].device;
  snapshot.AddResourceClaim(std::move(claim));
  return where;
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

TEST_CASE("dra placer: binpack fills the used GPU, spread opens the free ones") {
  Result<Placer> binpack = Placer::Make(PlacerOptions{Policy::kBinpack, {}, false});
  Result<Placer> spread = Placer::Make(PlacerOptions{Policy::kSpread, {}, false});
  REQUIRE(binpack.ok());
  REQUIRE(spread.ok());
  ClusterSnapshot packed = TwoNodes();
  ClusterSnapshot spreaded = TwoNodes();
  Strings packed_at, spread_at;
  for (int i = 0; i < 4; ++i) {
    packed_at.push_back(PlaceOne(packed, *binpack, Share("c" + std::to_string(i), 30)));
    spread_at.push_back(PlaceOne(spreaded, *spread, Share("c" + std::to_string(i), 30)));
  }
  CHECK(packed_at == Strings{"node-a/gpu-0", "node-a/gpu-0", "node-a/gpu-0", "node-a/gpu-1"});
  CHECK(spread_at == Strings{"node-a/gpu-0", "node-b/gpu-0", "node-a/gpu-1", "node-b/gpu-1"});
}

TEST_CASE("dra placer: fgd keeps whole GPUs free for the workload's whole-GPU pods") {
  // node-a: gpu-0 60 % used; node-b: both free. A 40 % share fits gpu-0
  // exactly; any other choice breaks a whole GPU the 1-GPU class needs.
  const std::vector<WorkloadClass> workload = {{1, 1, 0, 0, 0}, {1, 0, 400, 0, 0}};
  Result<Placer> fgd = Placer::Make(PlacerOptions{Policy::kFgd, workload, false});
  Result<Placer> spread = Placer::Make(PlacerOptions{Policy::kSpread, workload, false});
  REQUIRE(fgd.ok());
  REQUIRE(spread.ok());
  ClusterSnapshot snapshot = TwoNodes();
  REQUIRE(PlaceOne(snapshot, *fgd, Share("first", 60)) == "node-a/gpu-0");
  const double before = fgd->MeasureFragmentation(snapshot).fragmented_gpus;
  CHECK(before > 0);  // gpu-0's 40 % free is no use to the whole-GPU class
  ClusterSnapshot other = snapshot;
  CHECK(PlaceOne(other, *spread, Share("second", 40)) != "node-a/gpu-0");
  CHECK(PlaceOne(snapshot, *fgd, Share("second", 40)) == "node-a/gpu-0");
  CHECK(fgd->MeasureFragmentation(snapshot).fragmented_gpus < before);
  CHECK(fgd->MeasureFragmentation(snapshot).free_gpus == doctest::Approx(3.0));
}

TEST_CASE("dra placer: Score is Fit's score, remembered only while the node is unchanged") {
  for (Policy policy : {Policy::kUpstream, Policy::kBinpack, Policy::kSpread, Policy::kFgd}) {
    Result<Placer> placer = Placer::Make(PlacerOptions{policy, {}, false});
    Result<Placer> fresh = Placer::Make(PlacerOptions{policy, {}, false});
    REQUIRE(placer.ok());
    ClusterSnapshot snapshot = TwoNodes();
    std::mt19937_64 rng(3);
    for (int i = 0; i < 12; ++i) {
      const ResourceClaim claim = Share("c" + std::to_string(i), 10 + static_cast<int>(rng() % 60));
      for (const char* node : {"node-a", "node-b"}) {
        Result<std::optional<FitScore>> remembered = placer->Score(snapshot, {claim}, {}, node);
        Result<std::optional<NodeFit>> fit = fresh->Fit(snapshot, {claim}, {}, node);
        REQUIRE(remembered.ok());
        REQUIRE(fit.ok());
        CHECK(remembered->has_value() == fit->has_value());
        if (*fit) {
          CHECK((*remembered)->score == (*fit)->score);
          CHECK((*remembered)->free_gpus == (*fit)->free_gpus);
        }
      }
      ResourceClaim placed = claim;
      auto a = snapshot.AllocateClaims({claim}, i % 2 == 0 ? "node-a" : "node-b");
      REQUIRE(a.ok());
      if (!a->has_value()) continue;
      placed.allocation = (**a)[0];
      snapshot.AddResourceClaim(placed);
    }
    if (policy == Policy::kUpstream)
      CHECK(placer->Place(snapshot, {}, {}).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("dra placer: Score's memory is of one snapshot object; another makes it forget") {
  // Two snapshots with the same history of versions, differing in what
  // holds node-a's GPUs: a score remembered for one must not answer for
  // the other, however the calls alternate.
  Result<Placer> placer = Placer::Make(PlacerOptions{Policy::kBinpack, {}, false});
  Result<Placer> fresh = Placer::Make(PlacerOptions{Policy::kBinpack, {}, false});
  REQUIRE(placer.ok());
  ClusterSnapshot empty = TwoNodes();
  ClusterSnapshot used = TwoNodes();
  REQUIRE(PlaceOne(empty, *fresh, Share("small", 10)) == "node-a/gpu-0");
  REQUIRE(PlaceOne(used, *fresh, Share("held", 60)) == "node-a/gpu-0");
  const ResourceClaim claim = Share("c", 30);
  auto score = [&](const ClusterSnapshot& snapshot) {
    Result<std::optional<FitScore>> s = placer->Score(snapshot, {claim}, {}, "node-a");
    REQUIRE(s.ok());
    REQUIRE(s->has_value());
    return (*s)->score;
  };
  auto fit = [&](const ClusterSnapshot& snapshot) {
    Result<std::optional<NodeFit>> f = fresh->Fit(snapshot, {claim}, {}, "node-a");
    REQUIRE(f.ok());
    REQUIRE(f->has_value());
    return (*f)->score;
  };
  REQUIRE(fit(empty) != fit(used));
  for (int round = 0; round < 2; ++round) {
    CHECK(score(empty) == fit(empty));
    CHECK(score(used) == fit(used));
  }
  // The same object changed through its own methods: the node's version
  // moves on and its memory goes.
  REQUIRE(PlaceOne(empty, *fresh, Share("now-held", 60)) == "node-a/gpu-0");
  CHECK(score(empty) == fit(empty));
}

TEST_CASE("dra placer: a pod's CPU and memory must fit the node") {
  Result<Placer> placer = Placer::Make(PlacerOptions{Policy::kBinpack, {}, false});
  REQUIRE(placer.ok());
  ClusterSnapshot snapshot = TwoNodes();
  Result<Placement> p = placer->Place(snapshot, {Share("c", 10)}, PodResources{9000, 0});
  REQUIRE(p.ok());
  CHECK(!p->chosen);
  CHECK(p->short_of_cpu_or_memory == 2);
  p = placer->Place(snapshot, {Share("c", 10)}, PodResources{8000, 64 * kGi});
  REQUIRE(p.ok());
  CHECK(p->chosen.has_value());
}
