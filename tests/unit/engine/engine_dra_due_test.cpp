// What concerns a gated pod (engine.hpp, "DRA"; dra_due.cpp): a pod held
// is judged again only when something it could use changes, and only
// where; none is left held while it fits.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <random>

#include "devshare/dra_extended.hpp"
#include "devshare/dra_place.hpp"
#include "devshare/engine/engine.hpp"
#include "dra_engine_fixture.hpp"
#include "engine_commands.hpp"
#include "testutil.hpp"

using namespace devshare;
using namespace devshare::engine;
using devshare::dra::testing::NodeSlice;
using devshare::dra::testing::SharedGpu;
using devshare::engine::testing::AsWritten;
using devshare::engine::testing::DraEngine;
using devshare::engine::testing::Gated;
using devshare::engine::testing::kNowMs;
using devshare::engine::testing::NodeOf;
using devshare::engine::testing::Of;
using devshare::engine::testing::Share;
using devshare::testing::MakeNode;

namespace {

// Completes every write of `out` and what follows; a pod whose gate is
// removed is observed ungated and bound where its first claim went.
// Returns the pods bound.
std::vector<Pod> Complete(Engine& engine, std::vector<Command> out,
                          const std::map<std::string, Pod>& gated, std::int64_t now_ms) {
  std::vector<Pod> bound;
  while (!out.empty()) {
    std::vector<Command> next;
    for (const Command& c : out) {
      if (const auto* w = std::get_if<WriteClaimStatus>(&c)) {
        // The watch shows the claim as written, then the write answers.
        engine.ResourceClaimObserved(
            AsWritten(*engine.snapshot().FindResourceClaim(w->claim_namespace, w->name), *w));
        engine.ApiResult(w->id, true, now_ms, next);
      } else if (const auto* g = std::get_if<RemoveSchedulingGate>(&c)) {
        engine.ApiResult(g->id, true, now_ms, next);
        Pod pod = gated.at(g->uid);
        pod.scheduling_gates.clear();
        const dra::ResourceClaim* claim = engine.snapshot().FindResourceClaim(
            pod.pod_namespace, pod.resource_claims.at(0).resource_claim_name);
        REQUIRE(claim != nullptr);
        REQUIRE(claim->allocation);
        pod.node_name = NodeOf(*claim->allocation);
        engine.PodObserved(pod);
        bound.push_back(pod);
      }
    }
    out = std::move(next);
  }
  return bound;
}

std::uint64_t Judged(const Engine& engine) { return engine.counters().dra_pods_judged; }

}  // namespace

TEST_CASE("engine dra: a pod held for want of room is judged again only where room may grow") {
  DraEngine f;
  f.engine.DraSynced();
  std::map<std::string, Pod> gated;
  for (const char* name : {"a", "b", "c"}) {
    f.engine.ResourceClaimObserved(Share(name, 60));
    gated[fmt::format("uid-{}", name)] = Gated(name, {name});
    f.engine.PodObserved(gated[fmt::format("uid-{}", name)]);
  }
  std::vector<Pod> bound = Complete(f.engine, f.Tick(), gated, kNowMs);
  REQUIRE(bound.size() == 2);  // a and b, a GPU each; c fits nowhere
  REQUIRE(f.engine.dra_held().at("uid-c").kind == DraHoldKind::kNoFit);
  const std::uint64_t judged = Judged(f.engine);

  // Heartbeats, a node's annotations, a claim written back as it is, a pod
  // bound elsewhere: nothing that gives room, nobody judged.
  f.engine.NodeObserved(MakeNode("n1"), kNowMs, f.out);
  Node n2 = MakeNode("n2");
  n2.annotations.Set("hami.io/node-handshake", "Requesting_2026.12.01 19:00:00");
  f.engine.NodeObserved(n2, kNowMs, f.out);
  f.engine.ResourceClaimObserved(f.Claimed("a"));
  Pod other = devshare::testing::MakePod("other");
  other.node_name = "n1";
  f.engine.PodObserved(other);
  CHECK(f.Tick().empty());
  CHECK(f.engine.NextWakeMs() != kNowMs);
  CHECK(Judged(f.engine) == judged);

  // a's pod goes (its CPU freed, its claim still allocated): c is judged
  // on a's node alone, still fits nowhere, and says nothing new.
  const std::string a_node = bound[0].node_name;
  f.engine.PodDeleted("uid-a");
  CHECK(f.Tick().empty());
  CHECK(Judged(f.engine) == judged + 1);
  CHECK(f.engine.dra_held().at("uid-c").kind == DraHoldKind::kNoFit);

  // a's claim released: c goes where it freed.
  dra::ResourceClaim released = f.Claimed("a");
  released.allocation.reset();
  released.reserved_for.clear();
  f.engine.ResourceClaimObserved(released);
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].name == "c");
  CHECK(NodeOf(*writes[0].allocation) == a_node);
  CHECK(Judged(f.engine) == judged + 2);
}

TEST_CASE("engine dra: a node that comes to admit a held pod judges it; one that does not, not") {
  DraEngine f;
  f.engine.DraSynced();
  f.engine.ResourceClaimObserved(Share("z", 10));
  Pod pod = Gated("z", {"z"});
  pod.node_selector.Set("zone", "b");
  f.engine.PodObserved(pod);
  CHECK(Of<WriteClaimStatus>(f.Tick()).empty());
  REQUIRE(f.engine.dra_held().at("uid-z").kind == DraHoldKind::kNoFit);
  const std::uint64_t judged = Judged(f.engine);
  Node n1 = MakeNode("n1");
  n1.labels.Set("zone", "a");
  f.engine.NodeObserved(n1, kNowMs, f.out);
  CHECK(f.Tick().empty());
  CHECK(Judged(f.engine) == judged);  // n1 changed, but z may not go there
  Node n2 = MakeNode("n2");
  n2.labels.Set("zone", "b");
  f.engine.NodeObserved(n2, kNowMs, f.out);
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(NodeOf(*writes[0].allocation) == "n2");
}

TEST_CASE("engine dra: a pod waiting for its claim is judged when that claim comes, not others") {
  DraEngine f;
  f.engine.DraSynced();
  f.engine.PodObserved(Gated("w", {"mine"}));
  CHECK(Of<WriteClaimStatus>(f.Tick()).empty());
  REQUIRE(f.engine.dra_held().at("uid-w").kind == DraHoldKind::kWaiting);
  const std::uint64_t judged = Judged(f.engine);
  f.engine.ResourceClaimObserved(Share("someone-elses", 10));
  f.Tick();
  CHECK(Judged(f.engine) == judged);
  f.engine.ResourceClaimObserved(Share("mine", 10));
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].name == "mine");
}

TEST_CASE("engine dra: every held pod is judged again each 5 minutes, for what no event says") {
  DraEngine f;
  f.engine.DraSynced();
  for (const char* name : {"a", "b", "c"}) f.engine.ResourceClaimObserved(Share(name, 60));
  for (const char* pod : {"a", "b", "c"}) f.engine.PodObserved(Gated(pod, {pod}));
  f.Tick();
  REQUIRE(f.engine.dra_held().contains("uid-c"));
  const std::uint64_t judged = Judged(f.engine);
  f.Tick(kNowMs + 5 * 60 * 1000 - 1);
  CHECK(Judged(f.engine) == judged);
  f.Tick(kNowMs + 5 * 60 * 1000);
  CHECK(Judged(f.engine) == judged + 1);
}

// Random events on six nodes of one shared GPU and 4 CPUs: after each
// pass, a fresh placer over the engine's snapshot finds no node for any pod
// held for want of room. (A change the engine failed to count as giving
// room would leave such a pod held; the 5-minute sweep is never reached.)
TEST_CASE("engine dra: no pod is left held for want of room while it fits (random events)") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](std::size_t n) {
      return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    };
    Engine engine(DraEngine::Options(seed % 2 ? dra::Policy::kBinpack : dra::Policy::kFgd));
    std::vector<Command> out;
    std::vector<Node> nodes;
    for (int i = 0; i < 6; ++i) {
      nodes.push_back(MakeNode(fmt::format("n{}", i)).Cpu("4"));
      engine.NodeObserved(nodes.back(), kNowMs, out);
      engine.ResourceSliceObserved(NodeSlice(nodes.back().name, {SharedGpu(0)}));
    }
    for (auto& [name, c] : dra::testing::Classes()) engine.DeviceClassObserved(c);
    engine.DraSynced();
    std::map<std::string, Pod> gated, placed;
    std::map<std::string, dra::ResourceClaim> claims;  // by pod UID
    std::int64_t now = kNowMs;
    const std::int64_t sizes[] = {10, 20, 30, 50, 70, 100};
    for (int step = 0, made = 0; step < 150; ++step) {
      now += 100;
      const std::size_t action = pick(6);
      if (action <= 1 || placed.empty()) {  // a new pod
        const std::string name = fmt::format("p{}", made++);
        dra::ResourceClaim claim = Share(name, sizes[pick(6)]);
        Pod pod = Gated(name, {name});
        pod.cpu_milli = static_cast<std::int64_t>(pick(3)) * 1000;
        if (pick(4) == 0) pod.node_selector.Set("zone", "b");
        claims[pod.uid] = claim;
        gated[pod.uid] = pod;
        engine.ResourceClaimObserved(claim);
        engine.PodObserved(pod);
      } else if (action == 2) {  // a bound pod and its claim go
        auto it = std::next(placed.begin(), static_cast<std::ptrdiff_t>(pick(placed.size())));
        engine.PodDeleted(it->first);
        engine.ResourceClaimDeleted("default", claims.at(it->first).name);
        placed.erase(it);
      } else if (action == 3) {  // a heartbeat
        Node& n = nodes[pick(nodes.size())];
        n.annotations.Set("heartbeat", std::to_string(step));
        engine.NodeObserved(n, now, out);
      } else if (action == 4) {  // a label that some pods select
        Node& n = nodes[pick(nodes.size())];
        if (n.labels.Find("zone") != nullptr) {
          n.labels.Erase("zone");
        } else {
          n.labels.Set("zone", "b");
        }
        engine.NodeObserved(n, now, out);
      } else {  // cordoned, or back
        Node& n = nodes[pick(nodes.size())];
        n.unschedulable = !n.unschedulable;
        engine.NodeObserved(n, now, out);
      }
      out.clear();
      engine.Tick(now, out);
      for (Pod& pod : Complete(engine, std::move(out), gated, now)) {
        gated.erase(pod.uid);
        placed[pod.uid] = pod;
      }
      out.clear();
      Result<dra::Placer> placer =
          dra::Placer::Make(dra::PlacerOptions{dra::Policy::kBinpack, {}, false});
      REQUIRE(placer.ok());
      for (const auto& held : engine.dra_held()) {
        if (held.second.kind != DraHoldKind::kNoFit) continue;
        const Pod& pod = gated.at(held.first);
        Result<dra::Placement> p = placer->Place(engine.snapshot(), {claims.at(held.first)},
                                                 {pod.cpu_milli, pod.memory_bytes}, &pod);
        REQUIRE(p.ok());
        INFO("step ", step, ": ", held.first, " held: ", held.second.reason);
        CHECK_FALSE(p->chosen);
      }
    }
  }
}

TEST_CASE("engine dra: the claims named for a pod's extended resources are made, then allocated") {
  DraEngine f;
  f.engine.DraSynced();
  const dra::ExtendedClaim listed{"devshare-ext-r1-0", "gpu", 1};
  Pod pod = devshare::testing::MakePod("p");
  pod.resource_claims.push_back(PodResourceClaim{"devshare-ext-0", listed.claim, "", ""});
  pod.scheduling_gates = {std::string(dra::kSchedulingGate)};
  pod.annotations.Set(dra::kExtendedClaimsAnnotation, dra::EncodeExtendedClaims({listed}));
  f.engine.PodObserved(pod);
  auto creates = Of<CreateResourceClaim>(f.Tick());
  REQUIRE(creates.size() == 1);
  CHECK(creates[0].claim == dra::MakeExtendedClaim(listed, "default"));
  CHECK(creates[0].owner_name == "p");
  CHECK(creates[0].owner_uid == "uid-p");
  CHECK(f.engine.dra_held().at("uid-p").kind == DraHoldKind::kWaiting);
  // Made once: judged again (the sweep, say) it is not made twice.
  f.engine.DeviceClassObserved(dra::testing::Classes().at("gpu"));
  CHECK(Of<CreateResourceClaim>(f.Tick()).empty());
  // A failed create is made again after the retry's wait.
  CHECK(f.Result(creates[0].id, false).empty());
  CHECK(f.engine.NextWakeMs() == kNowMs + 1000);
  creates = Of<CreateResourceClaim>(f.Tick(kNowMs + 1000));
  REQUIRE(creates.size() == 1);
  CHECK(f.Result(creates[0].id, true).empty());
  CHECK(f.engine.counters().dra_claims_created == 1);
  // The watch brings it: allocated, a whole device.
  dra::ResourceClaim made = creates[0].claim;
  made.uid = "uid-made";
  f.engine.ResourceClaimObserved(made);
  auto writes = Of<WriteClaimStatus>(f.Tick(kNowMs + 1000));
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].name == listed.claim);
  REQUIRE(writes[0].allocation);
  CHECK(writes[0].allocation->devices.size() == 1);
  CHECK(Of<CreateResourceClaim>(f.out).empty());
}

TEST_CASE("engine dra: a pod whose list of extended-resource claims does not decode is refused") {
  DraEngine f;
  f.engine.DraSynced();
  Pod pod = Gated("p", {"missing"});
  pod.annotations.Set(dra::kExtendedClaimsAnnotation, R"([{"claim":"x"}])");
  f.engine.PodObserved(pod);
  CHECK(Of<CreateResourceClaim>(f.Tick()).empty());
  const DraHold& hold = f.engine.dra_held().at("uid-p");
  CHECK(hold.kind == DraHoldKind::kRefused);
  CHECK(hold.reason.starts_with("annotation devshare.dev/extended-resource-claims: "));
}

// As the failover e2e found it: the status write answers before the watch
// delivers the event of the finalizer write before it; that older event
// must not show the allocated device free.
TEST_CASE("engine dra: a claim's event older than the snapshot's claim is passed over") {
  DraEngine f;
  f.engine.DraSynced();
  dra::ResourceClaim whole = Share("whole", 100);
  whole.resource_version = "10";
  f.engine.ResourceClaimObserved(whole);
  f.engine.PodObserved(Gated("w", {"whole"}));
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  const std::string node = NodeOf(*writes[0].allocation);
  const dra::ResourceClaim answered =
      AsWritten(whole, writes[0], "12");  // the status write's event
  f.engine.ResourceClaimObserved(answered);
  CHECK(f.Result(writes[0].id, true).size() == 1);  // the gate's removal
  dra::ResourceClaim finalizer_event = whole;       // rv 11: the finalizer written, no allocation
  finalizer_event.resource_version = "11";
  f.engine.ResourceClaimObserved(finalizer_event);
  CHECK(f.Claimed("whole").allocation == writes[0].allocation);
  // Another whole-GPU pod goes to the other node, not onto the same GPU.
  f.engine.ResourceClaimObserved(Share("next", 100));
  f.engine.PodObserved(Gated("n", {"next"}));
  writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(NodeOf(*writes[0].allocation) != node);
  // A newer event is taken, of course; and one of a claim made anew (another
  // UID) whatever its version.
  dra::ResourceClaim later = answered;
  later.resource_version = "13";
  later.reserved_for.clear();
  f.engine.ResourceClaimObserved(later);
  CHECK(f.Claimed("whole").reserved_for.empty());
  dra::ResourceClaim anew = Share("whole", 10);
  anew.uid = "uid-whole-2";
  anew.resource_version = "5";
  f.engine.ResourceClaimObserved(anew);
  CHECK(f.Claimed("whole").uid == "uid-whole-2");
}

// kube-scheduler binds a pod some time after its gate is removed; meanwhile
// its CPU and memory count where its claims went, or the next pods would be
// placed there as though it were not coming (and kube-scheduler, finding the
// node short of CPU, would allocate their claims again elsewhere).
TEST_CASE("engine dra: a placed pod's CPU counts on its node until it is seen bound") {
  Engine engine(DraEngine::Options(dra::Policy::kBinpack));
  std::vector<Command> out;
  for (const char* node : {"n1", "n2"}) {
    engine.NodeObserved(MakeNode(node).Cpu("4"), kNowMs, out);
    engine.ResourceSliceObserved(NodeSlice(node, {SharedGpu(0)}));
  }
  for (auto& [name, c] : dra::testing::Classes()) engine.DeviceClassObserved(c);
  engine.DraSynced();
  std::map<std::string, Pod> gated;
  auto add = [&](const std::string& name) {
    Pod pod = Gated(name, {name});
    pod.cpu_milli = 3000;
    gated[pod.uid] = pod;
    engine.ResourceClaimObserved(Share(name, 10));
    engine.PodObserved(pod);
  };
  add("a");
  out.clear();
  engine.Tick(kNowMs, out);
  auto writes = Of<WriteClaimStatus>(out);
  REQUIRE(writes.size() == 1);
  const std::string a_node = NodeOf(*writes[0].allocation);
  out.clear();
  engine.ApiResult(writes[0].id, true, kNowMs, out);  // the gate's removal follows
  Pod ungated = gated.at("uid-a");
  ungated.scheduling_gates.clear();
  engine.PodObserved(ungated);  // ungated, not bound yet
  // b (3 CPUs) cannot share a's node (4 CPUs) though binpack would put it there.
  add("b");
  out.clear();
  engine.Tick(kNowMs, out);
  writes = Of<WriteClaimStatus>(out);
  REQUIRE(writes.size() == 1);
  CHECK(NodeOf(*writes[0].allocation) != a_node);
  // Bound where it was placed: counted as bound; deleted: the room is back.
  ungated.node_name = a_node;
  engine.PodObserved(ungated);
  REQUIRE(engine.snapshot().NodeCpuMemoryOf(a_node).ok());
  CHECK(engine.snapshot().NodeCpuMemoryOf(a_node)->cpu_requested_milli == 3000);
  engine.PodDeleted("uid-a");
  CHECK(engine.snapshot().NodeCpuMemoryOf(a_node)->cpu_requested_milli == 0);
}
