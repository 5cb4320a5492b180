// dra::Placer's node and device choice: binpack, spread, fgd, Score's memory,
// CPU and memory fit.
#include "devshare/dra_place.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>

#include "devshare/snapshot.hpp"
#include "dra_snapshot_fixtures.hpp"

using namespace devshare;
using namespace devshare::dra;
using namespace devshare::dra::testing;

namespace {

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
