// The engine's DRA flow (engine.hpp, "DRA"): gated pods' claims allocated by
// policy, written, the gate removed; holds, failures and restarts.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "devshare/engine/engine.hpp"
#include "devshare/kube/metrics.hpp"
#include "dra_engine_fixture.hpp"
#include "engine_commands.hpp"
#include "testutil.hpp"

using namespace devshare;
using namespace devshare::engine;
using namespace devshare::dra::testing;
using devshare::engine::testing::AsWritten;
using devshare::engine::testing::DraEngine;
using devshare::engine::testing::Gated;
using devshare::engine::testing::kNowMs;
using devshare::engine::testing::NodeOf;
using devshare::engine::testing::Of;
using devshare::engine::testing::Share;
using devshare::testing::MakeNode;
using devshare::testing::MakePod;

TEST_CASE(
    "engine dra: a gated pod's claim is allocated, written with the pod reserved, then the "
    "gate removed") {
  DraEngine f;
  f.engine.ResourceClaimObserved(Share("a", 60));
  f.engine.PodObserved(Gated("p", {"a"}));
  CHECK(f.Tick().empty());  // nothing before the DRA objects are synced
  f.engine.DraSynced();
  CHECK(f.engine.NextWakeMs() == 0);
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  const WriteClaimStatus& w = writes[0];
  CHECK(w.name == "a");
  CHECK(w.uid == "uid-a");
  CHECK(w.add_finalizer);
  REQUIRE(w.allocation);
  CHECK(w.allocation->devices.at(0).consumed_capacity.at("cores") == Q(60));
  // When it is written, as kube-scheduler v1.37 writes it: the field is immutable
  // with the allocation, so kube-scheduler, adding a reservation after its
  // own Unreserve took devshare's, would otherwise set it and be refused.
  CHECK(w.allocation->allocated_unix_seconds == kNowMs / 1000);
  CHECK(w.reserved_for == std::vector<dra::ClaimConsumer>{{"", "pods", "p", "uid-p"}});
  // Counted before the write returns: the snapshot holds the assumption.
  CHECK(f.Claimed("a").allocation == w.allocation);
  CHECK(Of<RemoveSchedulingGate>(f.out).empty());

  // The gate waits for the watch to show the claim allocated: kube-scheduler,
  // seeing the pod ungated, then sees the claim so too.
  CHECK(f.Result(w.id, true).empty());
  CHECK(Of<RemoveSchedulingGate>(f.Tick()).empty());
  f.engine.ResourceClaimObserved(Share("a", 60));  // another change: still unallocated
  CHECK(Of<RemoveSchedulingGate>(f.Tick()).empty());
  f.engine.ResourceClaimObserved(AsWritten(Share("a", 60), w, "11"));
  auto gates = Of<RemoveSchedulingGate>(f.Tick());
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].name == "p");
  CHECK(gates[0].uid == "uid-p");
  CHECK(f.Result(gates[0].id, true).empty());
  CHECK(f.engine.counters().dra_claims_allocated == 1);
  CHECK(f.engine.counters().dra_gates_removed == 1);
  CHECK(f.Tick().empty());  // released: not judged again while the watch catches up
  Pod ungated = Gated("p", {"a"});
  ungated.scheduling_gates.clear();
  f.engine.PodObserved(ungated);
  CHECK(f.engine.dra_gated() == 0);
}

TEST_CASE(
    "engine dra: the gate goes at the write's answer when the watch was first, and 10 s after "
    "it when the watch shows nothing") {
  DraEngine f;
  f.engine.DraSynced();
  for (const char* name : {"a", "b"}) f.engine.ResourceClaimObserved(Share(name, 60));
  f.engine.PodObserved(Gated("p", {"a"}));
  f.engine.PodObserved(Gated("q", {"b"}));
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 2);
  f.engine.ResourceClaimObserved(AsWritten(Share("a", 60), writes[0], "11"));  // before the answer
  CHECK(Of<RemoveSchedulingGate>(f.Tick()).empty());
  auto gates = Of<RemoveSchedulingGate>(f.Result(writes[0].id, true));
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].name == "p");
  // q's claim is never shown (a cut watch): its gate goes after 10 s.
  CHECK(f.Result(writes[1].id, true).empty());
  CHECK(Of<RemoveSchedulingGate>(f.Tick(kNowMs + 9999)).empty());
  CHECK(f.engine.NextWakeMs() == kNowMs + 10000);
  gates = Of<RemoveSchedulingGate>(f.Tick(kNowMs + 10000));
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].name == "q");
}

TEST_CASE("engine dra: pods are placed in arrival order, each seeing the ones before") {
  DraEngine f;
  f.engine.DraSynced();
  for (const char* name : {"a", "b", "c"}) f.engine.ResourceClaimObserved(Share(name, 60));
  for (const char* pod : {"a", "b", "c"}) f.engine.PodObserved(Gated(pod, {pod}));
  auto writes = Of<WriteClaimStatus>(f.Tick());
  // 60 % each: one GPU per pod; the third fits nowhere and waits, said once.
  REQUIRE(writes.size() == 2);
  CHECK(writes[0].name == "a");
  CHECK(writes[1].name == "b");
  CHECK(NodeOf(*writes[0].allocation) != NodeOf(*writes[1].allocation));
  auto events = Of<PodEvent>(f.out);
  REQUIRE(events.size() == 1);
  CHECK(events[0].name == "c");
  CHECK(events[0].reason == "DevshareNoFit");
  CHECK(events[0].message ==
        "no node fits its claims: 2 of 2 nodes short of devices, 0 short of CPU or memory, 0 "
        "excluded by its node selector, affinity or tolerations");
  CHECK(f.engine.dra_held().at("uid-c").kind == DraHoldKind::kNoFit);
  f.engine.NodeObserved(MakeNode("n1"), kNowMs, f.out);
  CHECK(Of<PodEvent>(f.Tick()).empty());  // the same reason: no second Event
  // Room frees when a's claim goes: c is placed.
  f.engine.ResourceClaimDeleted("default", "a");
  writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].name == "c");
  CHECK(f.engine.dra_held().empty());
}

TEST_CASE("engine dra: a failed claim write takes the assumption back and is tried again") {
  DraEngine f;
  f.engine.DraSynced();
  f.engine.ResourceClaimObserved(Share("a", 60));
  f.engine.PodObserved(Gated("p", {"a"}));
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  // The watch shows the claim unchanged meanwhile: the assumption stays.
  f.engine.ResourceClaimObserved(Share("a", 60));
  CHECK(f.Claimed("a").allocation);
  CHECK(f.Result(writes[0].id, false).empty());  // a 409
  CHECK_FALSE(f.Claimed("a").allocation);
  CHECK(f.engine.counters().dra_claim_writes_failed == 1);
  CHECK(Of<WriteClaimStatus>(f.Tick(kNowMs + 10)).empty());
  CHECK(f.engine.NextWakeMs() == kNowMs + 1000);
  CHECK(Of<WriteClaimStatus>(f.Tick(kNowMs + 1000)).size() == 1);
}

TEST_CASE("engine dra: waiting for the claim made from a template; refusal; not served") {
  DraEngine f;
  f.engine.DraSynced();
  dra::ResourceClaimTemplate t;
  t.template_namespace = "default";
  t.name = "share";
  t.spec = Share("x", 10).spec;
  f.engine.ResourceClaimTemplateObserved(t);
  Pod p = Gated("p", {});
  p.resource_claims = {PodResourceClaim{"gpu", "", "share", ""}};
  f.engine.PodObserved(p);
  // Usual for a moment: said only when it lasts 10 s.
  CHECK(Of<PodEvent>(f.Tick()).empty());
  CHECK(f.engine.dra_held().at("uid-p").kind == DraHoldKind::kWaiting);
  CHECK(f.engine.NextWakeMs() == kNowMs + 10000);
  auto events = Of<PodEvent>(f.Tick(kNowMs + 10000));
  REQUIRE(events.size() == 1);
  CHECK(events[0].reason == "DevshareWaitingForClaims");
  // The resourceclaim controller makes the claim and names it on the pod.
  f.engine.ResourceClaimObserved(Share("p-gpu-x1", 10));
  p.resource_claims[0].generated_claim_name = "p-gpu-x1";
  f.engine.PodObserved(p);
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].name == "p-gpu-x1");

  // A claim of a class devshare does not serve: released as it is.
  dra::ResourceClaim other = Claim("whole", {Exactly("gpu", Select("a100"))});
  f.engine.ResourceClaimObserved(other);
  f.engine.PodObserved(Gated("q", {"whole"}));
  auto out = f.Tick();
  CHECK(Of<WriteClaimStatus>(out).empty());
  auto gates = Of<RemoveSchedulingGate>(out);
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].name == "q");

  // A selector devshare cannot evaluate, on a pod created while devshare
  // did not see the claim: held, with the reason.
  dra::DeviceSelection odd = Select("gpu");
  odd.selectors = {"size({'a': 1}) == 1"};
  f.engine.ResourceClaimObserved(Claim("odd", {Exactly("gpu", odd)}));
  f.engine.PodObserved(Gated("r", {"odd"}));
  events = Of<PodEvent>(f.Tick());
  REQUIRE(events.size() == 1);
  CHECK(events[0].reason == "DevshareCannotAllocate");
  CHECK(events[0].message.find("selector `size({'a': 1}) == 1`") != std::string::npos);
}

// `claim` as the engine writes it for pod `pod` on n2 (n1 left out).
dra::ResourceClaim WrittenOnN2(dra::ResourceClaim claim, const std::string& pod) {
  DraEngine probe;
  probe.engine.DraSynced();
  probe.engine.ResourceClaimObserved(claim);
  probe.engine.ResourceSliceDeleted("n1-slice");
  probe.engine.PodObserved(Gated(pod, {claim.name}));
  auto w = Of<WriteClaimStatus>(probe.Tick());
  REQUIRE(w.size() == 1);
  claim.allocation = w[0].allocation;
  claim.reserved_for = w[0].reserved_for;
  REQUIRE(NodeOf(*claim.allocation) == "n2");
  return claim;
}

// The release a crowded n2 makes: `written` (claim a, on n2 for pod p)
// beside another pod's half of n2's GPU, and p's claim b asking 30 more, so
// b no longer fits beside a. Returns the WriteClaimStatus commands of the
// Tick that judges p on `f`.
std::vector<WriteClaimStatus> CrowdedN2Writes(DraEngine& f, const dra::ResourceClaim& written) {
  f.engine.DraSynced();
  f.engine.ResourceClaimObserved(written);
  f.engine.ResourceClaimObserved(WrittenOnN2(Share("o", 50), "other"));
  f.engine.ResourceClaimObserved(Share("b", 30));
  f.engine.PodObserved(Gated("p", {"a", "b"}));
  return Of<WriteClaimStatus>(f.Tick());
}

TEST_CASE(
    "engine dra: after a restart, claims written already count; the pod is finished on "
    "their node or they are released") {
  // Claim a was written for p on n2 before the restart; b was not.
  const dra::ResourceClaim written = WrittenOnN2(Share("a", 30), "p");
  DraEngine restarted;
  restarted.engine.DraSynced();
  restarted.engine.ResourceClaimObserved(written);
  restarted.engine.ResourceClaimObserved(Share("b", 30));
  restarted.engine.PodObserved(Gated("p", {"a", "b"}));
  auto writes = Of<WriteClaimStatus>(restarted.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].name == "b");
  CHECK(NodeOf(*writes[0].allocation) == "n2");

  // All written: only the gate is left.
  DraEngine done;
  done.engine.DraSynced();
  done.engine.ResourceClaimObserved(written);
  done.engine.PodObserved(Gated("p", {"a"}));
  auto out = done.Tick();
  CHECK(Of<WriteClaimStatus>(out).empty());
  CHECK(Of<RemoveSchedulingGate>(out).size() == 1);

  // Another pod took half of n2's GPU meanwhile, so b no longer fits beside
  // a: a is released, and the pod placed anew, on n1.
  DraEngine full;
  auto releases = CrowdedN2Writes(full, written);
  REQUIRE(releases.size() == 1);
  CHECK(releases[0].name == "a");
  CHECK_FALSE(releases[0].allocation);
  CHECK(releases[0].reserved_for.empty());
  CHECK_FALSE(releases[0].add_finalizer);
  CHECK(full.Result(releases[0].id, true).empty());
  CHECK(full.engine.counters().dra_claims_released == 1);
  auto placed = Of<WriteClaimStatus>(full.Tick());
  REQUIRE(placed.size() == 2);
  CHECK(NodeOf(*placed[0].allocation) == "n1");
  CHECK(NodeOf(*placed[1].allocation) == "n1");

  // A claim shared with another pod on a full node: the pod waits.
  DraEngine shared;
  shared.engine.DraSynced();
  dra::ResourceClaim theirs = WrittenOnN2(Share("o", 90), "other");
  shared.engine.ResourceClaimObserved(theirs);
  shared.engine.ResourceClaimObserved(Share("b", 30));
  shared.engine.PodObserved(Gated("p", {"o", "b"}));
  auto events = Of<PodEvent>(shared.Tick());
  REQUIRE(events.size() == 1);
  CHECK(events[0].message == "the node its allocated claims are on has no room for the others");
}

namespace {

// A replica "me" following the Lease, serving one node with one shared GPU,
// pod p held for its claim a.
void FollowerWithHeldPod(Engine& engine) {
  std::vector<Command> out;
  engine.NodeObserved(MakeNode("n1"), kNowMs, out);
  engine.ResourceSliceObserved(NodeSlice("n1", {SharedGpu(0)}));
  for (auto& [name, c] : Classes()) engine.DeviceClassObserved(c);
  engine.ResourceClaimObserved(Share("a", 10));
  engine.PodObserved(Gated("p", {"a"}));
  engine.DraSynced();
}

EngineOptions FollowingAsMe() {
  EngineOptions o = DraEngine::Options(dra::Policy::kBinpack);
  o.leadership = Leadership::kFollowLease;
  o.hostname = "me";
  return o;
}

}  // namespace

TEST_CASE("engine dra: a follower allocates nothing") {
  Engine engine(FollowingAsMe());
  FollowerWithHeldPod(engine);
  std::vector<Command> out;
  engine.Tick(kNowMs, out);
  CHECK(out.empty());
  CHECK(engine.dra_gated() == 1);
}

TEST_CASE(
    "engine dra: a replica whose Lease lapsed while its claims were written leaves the gate") {
  // Leading on a 15 s Lease observed at kNowMs, then the claim's write
  // answers: in time the gate goes; after the Lease has lapsed it stays,
  // for the leader to remove.
  for (const std::int64_t answered_ms : {kNowMs + 1000, kNowMs + 16000}) {
    CAPTURE(answered_ms);
    Engine engine(FollowingAsMe());
    FollowerWithHeldPod(engine);
    std::vector<Command> out;
    LeaseRecord lease;
    lease.holder = "me_abc";
    lease.duration_seconds = 15;
    lease.resource_version = "1";
    engine.LeaseObserved(lease, kNowMs, out);
    out.clear();
    engine.Tick(kNowMs, out);
    const std::vector<WriteClaimStatus> writes = Of<WriteClaimStatus>(out);
    REQUIRE(writes.size() == 1);
    engine.ResourceClaimObserved(AsWritten(Share("a", 10), writes[0], "11"));  // before the answer
    out.clear();
    engine.ApiResult(writes[0].id, true, answered_ms, out);
    CHECK(Of<RemoveSchedulingGate>(out).size() == (answered_ms < kNowMs + 15000 ? 1U : 0U));
  }
}

TEST_CASE(
    "engine dra: the auditor reads claims again that changed, went or came without an "
    "event, never one with a write in flight") {
  DraEngine f;
  f.engine.DraSynced();
  auto claim = [](std::string name, std::string version) {
    dra::ResourceClaim c = Share(std::move(name), 10);
    c.resource_version = std::move(version);
    return c;
  };
  f.engine.ResourceClaimObserved(claim("changed", "1"));
  f.engine.ResourceClaimObserved(claim("gone", "1"));
  f.engine.ResourceClaimObserved(claim("same", "1"));
  f.engine.ResourceClaimObserved(claim("writing", "1"));
  f.engine.PodObserved(Gated("p", {"writing"}));
  REQUIRE(Of<WriteClaimStatus>(f.Tick()).size() == 1);  // in flight from here on
  AuditListing listing;
  for (const char* node : {"n1", "n2"}) listing.nodes.push_back(ListedObject{"", node, "", "", {}});
  listing.pods.push_back(ListedObject{"default", "p", "uid-p", "", {}});
  for (const auto& [name, version] : std::vector<std::pair<std::string, std::string>>{
           {"changed", "2"}, {"came", "5"}, {"same", "1"}, {"writing", "7"}}) {
    listing.claims.push_back(ListedObject{"default", name, "uid-" + name, version, {}});
  }
  std::vector<Command> out;
  AuditReport first = f.engine.Audit(listing, kNowMs, out);
  std::vector<std::string> kinds;
  for (const Drift& d : first.differences) {
    kinds.push_back(std::string(DriftKindName(d.kind)) + " " + d.object);
    CHECK_FALSE(d.confirmed);
  }
  INFO(fmt::format("{}", fmt::join(kinds, "; ")));
  CHECK(kinds == std::vector<std::string>{"claim-gone default/gone", "claim-missed default/came",
                                          "claim-changed default/changed"});
  AuditReport confirmed = f.engine.Audit(listing, kNowMs + 30000, out);
  std::vector<std::string> reads;
  for (const ObjectToRead& r : confirmed.claims_to_read) reads.push_back(r.name);
  CHECK(reads == std::vector<std::string>{"changed", "gone", "came"});
  CHECK(f.engine.audit_totals().found[static_cast<std::size_t>(DriftKind::kClaimChanged)] == 1);
  f.engine.ClaimRead({"default", "gone"}, std::nullopt);
  f.engine.ClaimRead({"default", "came"}, claim("came", "5"));
  f.engine.ClaimRead({"default", "changed"}, claim("changed", "2"));
  CHECK(f.engine.snapshot().FindResourceClaim("default", "gone") == nullptr);
  CHECK(f.engine.Audit(listing, kNowMs + 31000, out).differences.empty());
}

TEST_CASE("engine dra: only the nodes a pod may go to: node selector, taints, cordons") {
  DraEngine f;
  f.engine.DraSynced();
  Node n1 = MakeNode("n1");
  n1.taints = {Taint{"dedicated", "infer", "NoSchedule"}};
  f.engine.NodeObserved(n1, kNowMs, f.out);
  Node n2 = MakeNode("n2");
  n2.labels.Set("zone", "b");
  f.engine.NodeObserved(n2, kNowMs, f.out);
  for (const char* name : {"a", "b", "c"}) f.engine.ResourceClaimObserved(Share(name, 10));
  // n1 is tainted: a pod that does not tolerate it goes to n2 (binpack's
  // tie would pick n1).
  f.engine.PodObserved(Gated("plain", {"a"}));
  Pod tolerant = Gated("tolerant", {"b"});
  tolerant.tolerations = {Toleration{"dedicated", "Equal", "infer", "NoSchedule"}};
  tolerant.node_selector.Set("zone", "a");  // ... and selects no node
  f.engine.PodObserved(tolerant);
  auto out = f.Tick();
  auto writes = Of<WriteClaimStatus>(out);
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].name == "a");
  CHECK(NodeOf(*writes[0].allocation) == "n2");
  auto events = Of<PodEvent>(out);
  REQUIRE(events.size() == 1);
  CHECK(events[0].message ==
        "no node fits its claims: 0 of 2 nodes short of devices, 0 short of CPU or memory, 2 "
        "excluded by its node selector, affinity or tolerations");
  // Cordoning n2 and tolerating n1's taint: the next pod goes to n1.
  n2.unschedulable = true;
  f.engine.NodeObserved(n2, kNowMs, f.out);
  Pod c = Gated("c", {"c"});
  c.tolerations = {Toleration{"dedicated", "Exists", "", ""}};
  f.engine.PodObserved(c);
  writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(NodeOf(*writes[0].allocation) == "n1");
}

TEST_CASE("engine dra: /metrics measures each device's capacity left and each pool's counters") {
  ClusterSnapshot snapshot;
  REQUIRE(snapshot.AddNode(MakeNode("n1")).ok());
  // The pool's devices in one slice, its shared counters in another (the
  // API keeps them apart).
  dra::ResourceSlice slice = NodeSlice("n1", {SharedGpu(0, 40 * kGi), WholeGpu(1), WholeGpu(2)});
  slice.pool.resource_slice_count = 2;
  for (int d : {1, 2}) {
    slice.devices[d].consumes_counters = {
        dra::CounterConsumption{"gpu-1-memory", {{"memory", Q(20)}}, {}}};
  }
  dra::ResourceSlice counters = NodeSlice("n1", {});
  counters.name = "n1-counters";
  counters.pool.resource_slice_count = 2;
  counters.shared_counters = {dra::CounterSet{"gpu-1-memory", {{"memory", Q(40)}}}};
  snapshot.AddResourceSlice(slice);
  snapshot.AddResourceSlice(counters);
  auto held = [](std::string name, std::string device,
                 std::map<std::string, dra::Quantity> consumed) {
    dra::ResourceClaim c = Share(std::move(name), 1);
    dra::AllocatedDevice d;
    d.request = "gpu";
    d.driver = std::string(kDriver);
    d.pool = "n1";
    d.device = std::move(device);
    if (!consumed.empty()) d.share_id = "s-" + c.name;
    d.consumed_capacity = std::move(consumed);
    c.allocation = dra::Allocation{{d}, std::nullopt, std::nullopt};
    return c;
  };
  snapshot.AddResourceClaim(held("a", "gpu-0", {{"cores", Q(30)}, {"memory", Q(10 * kGi)}}));
  snapshot.AddResourceClaim(held("b", "gpu-1", {}));
  const kube::DraUsage usage = kube::MeasureDraUsage(snapshot);
  std::vector<std::string> devices;
  for (const kube::DraDeviceCapacity& d : usage.devices)
    devices.push_back(fmt::format("{} {} {}/{}", d.device, d.capacity, d.free, d.total));
  CHECK(devices ==
        std::vector<std::string>{"gpu-0 cores 70/100",
                                 fmt::format("gpu-0 memory {}/{}", 30.0 * kGi, 40.0 * kGi)});
  REQUIRE(usage.counters.size() == 1);
  CHECK(usage.counters[0].counter_set == "gpu-1-memory");
  CHECK(usage.counters[0].total == 40);
  CHECK(usage.counters[0].free == 20);  // gpu-1 is held; gpu-2 is not
  kube::Metrics metrics;
  kube::DraGauges gauges;
  gauges.usage = usage;
  metrics.SetDra(gauges);
  const std::string text = metrics.Render();
  CHECK(text.find("devshare_dra_counter_free{driver=\"gpu.example.com\",pool=\"n1\",counter_set="
                  "\"gpu-1-memory\",counter=\"memory\"} 20\n") != std::string::npos);
  CHECK(text.find("devshare_dra_device_capacity_free{driver=\"gpu.example.com\",pool=\"n1\","
                  "device=\"gpu-0\",capacity=\"cores\"} 70\n") != std::string::npos);
}

TEST_CASE("engine dra: a released claim is written next at the version its release's answer gave") {
  // As devshare serve drives a write: the watch's event of the release may
  // come while the write is in flight, then the result, then (after it) the
  // claim the write's answer carries.
  dra::ResourceClaim written = WrittenOnN2(Share("a", 30), "p");
  written.resource_version = "10";
  DraEngine full;
  auto releases = CrowdedN2Writes(full, written);
  REQUIRE(releases.size() == 1);
  CHECK(releases[0].resource_version == "10");
  dra::ResourceClaim released = written;
  released.allocation.reset();
  released.reserved_for.clear();
  released.resource_version = "11";
  full.engine.ResourceClaimObserved(released);  // the watch, during the write
  CHECK(full.Result(releases[0].id, true).empty());
  full.engine.ResourceClaimObserved(released);  // the write's answer
  auto placed = Of<WriteClaimStatus>(full.Tick());
  REQUIRE(placed.size() == 2);
  for (const WriteClaimStatus& w : placed) {
    CAPTURE(w.name);
    CHECK(w.add_finalizer);
    CHECK(w.resource_version == (w.name == "a" ? "11" : Share("b", 30).resource_version));
  }
}

namespace {

// Pod `name` of `priority` whose claim `claim` (`cores` percent of a GPU)
// the engine allocates; then, ungated, bound where the allocation says and
// its claim observed as written. Returns the node.
std::string RunningPod(DraEngine& f, const std::string& name, const std::string& claim,
                       std::int64_t cores, std::int64_t priority, StringMap labels = {}) {
  f.engine.ResourceClaimObserved(Share(claim, cores));
  Pod p = Gated(name, {claim});
  p.priority = priority;
  p.labels = std::move(labels);
  f.engine.PodObserved(p);
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(f.Result(writes[0].id, true).empty());
  f.engine.ResourceClaimObserved(AsWritten(Share(claim, cores), writes[0]));
  auto gates = Of<RemoveSchedulingGate>(f.Tick());
  REQUIRE(gates.size() == 1);
  f.Result(gates[0].id, true);
  p.scheduling_gates.clear();
  p.node_name = NodeOf(*writes[0].allocation);
  f.engine.PodObserved(p);
  return p.node_name;
}

// A gated pod of `priority` with claim `claim` of `cores` percent.
Pod GatedAt(DraEngine& f, const std::string& name, const std::string& claim, std::int64_t cores,
            std::int64_t priority) {
  f.engine.ResourceClaimObserved(Share(claim, cores));
  Pod p = Gated(name, {claim});
  p.priority = priority;
  f.engine.PodObserved(p);
  return p;
}

std::vector<std::string> EventsOf(const std::vector<Command>& out) {
  std::vector<std::string> events;
  for (const PodEvent& e : Of<PodEvent>(out)) events.push_back(e.name + " " + e.reason);
  return events;
}

}  // namespace

TEST_CASE(
    "engine dra: a pod whose claims fit nowhere evicts a lower-priority holder, keeps what it "
    "frees, and is allocated once the victim and its claim are gone") {
  DraEngine f;
  f.engine.DraSynced();
  REQUIRE(RunningPod(f, "low", "a", 60, 0) == "n1");
  REQUIRE(RunningPod(f, "mid", "b", 60, 10) == "n2");
  // A pod of the lowest priority, before it in the queue, fits nowhere.
  GatedAt(f, "late", "l", 50, 0);
  GatedAt(f, "urgent", "u", 60, 100);
  auto out = f.Tick();
  CHECK(Of<WriteClaimStatus>(out).empty());
  auto evictions = Of<EvictPod>(out);
  REQUIRE(evictions.size() == 1);
  CHECK(evictions[0].name == "low");
  CHECK(evictions[0].uid == "uid-low");
  auto nominations = Of<NominatePod>(out);
  REQUIRE(nominations.size() == 1);
  CHECK(nominations[0].node == "n1");
  CHECK(EventsOf(out) ==
        std::vector<std::string>{"late DevshareNoFit", "low Preempted", "urgent Preempting"});
  CHECK(Of<PodEvent>(out)[2].message == "evicting default/low (priority 0) on n1");
  CHECK(f.engine.dra_held().at("uid-urgent").kind == DraHoldKind::kPreempting);
  const Preemption& p = f.engine.preemptions().at("uid-urgent");
  CHECK(p.node == "n1");
  CHECK(p.victims == std::vector<std::string>{"default/low"});
  CHECK(p.claims == std::vector<std::string>{"default/a"});
  CHECK(f.engine.counters().preemptions == 1);

  CHECK(f.engine.dra_held().at("uid-late").kind == DraHoldKind::kNoFit);

  CHECK(f.Result(evictions[0].id, true).empty());
  CHECK(f.engine.counters().preemption_victims == 1);
  // Terminating for its grace period: the preemptor waits, and does not
  // preempt again.
  Pod low = Gated("low", {"a"});
  low.scheduling_gates.clear();
  low.node_name = "n1";
  low.terminating = true;
  f.engine.PodObserved(low);
  out = f.Tick();
  CHECK(Of<EvictPod>(out).empty());
  CHECK(Of<WriteClaimStatus>(out).empty());
  CHECK(f.engine.dra_held().at("uid-urgent").reason ==
        "preempting on n1: waiting for default/low to go");
  CHECK(f.engine.counters().preemptions == 1);

  // Gone; its claim is still reserved for it until the resourceclaim
  // controller sees the deletion.
  f.engine.PodDeleted("uid-low");
  CHECK(Of<WriteClaimStatus>(f.Tick()).empty());
  CHECK(f.engine.dra_held().at("uid-urgent").reason ==
        "preempting on n1: its victims are gone; waiting for their claims default/a to be "
        "released");
  // The controller takes it out of reservedFor and deallocates the claim.
  // What low freed is kept for urgent: late, judged first, does not get it.
  f.engine.ResourceClaimObserved(Share("a", 60));
  auto writes = Of<WriteClaimStatus>(f.Tick());
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].name == "u");
  REQUIRE(writes[0].allocation);
  CHECK(NodeOf(*writes[0].allocation) == "n1");
  CHECK(writes[0].reserved_for ==
        std::vector<dra::ClaimConsumer>{{"", "pods", "urgent", "uid-urgent"}});
  CHECK(f.engine.preemptions().empty());
  CHECK(f.engine.counters().preemptions_placed == 1);
  auto gates = Of<RemoveSchedulingGate>(f.Written(writes[0]));
  REQUIRE(gates.size() == 1);
  CHECK(gates[0].name == "urgent");
  CHECK(f.engine.dra_held().at("uid-late").kind == DraHoldKind::kNoFit);
}

TEST_CASE(
    "engine dra: a victim's claim left allocated for no one is released by devshare; one from "
    "a template goes with its pod") {
  for (const bool from_template : {false, true}) {
    CAPTURE(from_template);
    DraEngine f;
    f.engine.DraSynced();
    REQUIRE(RunningPod(f, "low", "a", 60, 0) == "n1");
    REQUIRE(RunningPod(f, "other", "b", 60, 0) == "n2");
    GatedAt(f, "urgent", "u", 60, 100);
    auto evictions = Of<EvictPod>(f.Tick());
    REQUIRE(evictions.size() == 1);
    REQUIRE(evictions[0].name == "low");  // equal ranks: the first node by name
    f.Result(evictions[0].id, true);
    f.engine.PodDeleted("uid-low");
    if (from_template) {
      f.engine.ResourceClaimDeleted("default", "a");
    } else {
      // Out of reservedFor, still allocated (a claim without the
      // controller's finalizer).
      dra::ResourceClaim left = *f.engine.snapshot().FindResourceClaim("default", "a");
      left.reserved_for.clear();
      f.engine.ResourceClaimObserved(left);
      auto releases = Of<WriteClaimStatus>(f.Tick());
      REQUIRE(releases.size() == 1);
      CHECK(releases[0].name == "a");
      CHECK_FALSE(releases[0].allocation);
      CHECK(releases[0].reserved_for.empty());
      CHECK(f.Result(releases[0].id, true).empty());
      CHECK(f.engine.counters().dra_claims_released == 1);
    }
    auto writes = Of<WriteClaimStatus>(f.Tick());
    REQUIRE(writes.size() == 1);
    CHECK(writes[0].name == "u");
    CHECK(NodeOf(*writes[0].allocation) == "n1");
  }
}

TEST_CASE(
    "engine dra: equal priority is never evicted, a PodDisruptionBudget is honoured, "
    "preemptionPolicy Never waits") {
  DraEngine f;
  f.engine.DraSynced();
  REQUIRE(RunningPod(f, "peer", "a", 60, 100) == "n1");
  REQUIRE(RunningPod(f, "guarded", "b", 60, 0, StringMap{{"app", "train"}}) == "n2");
  PodDisruptionBudget budget{"default", "train", LabelSelector{{{"app", "train"}}, {}}, 0, {}};
  f.engine.PodDisruptionBudgetObserved(budget);
  const Pod urgent = GatedAt(f, "urgent", "u", 60, 100);
  auto out = f.Tick();
  CHECK(Of<EvictPod>(out).empty());
  const std::string no_fit =
      "no node fits its claims: 2 of 2 nodes short of devices, 0 short of CPU or memory, 0 "
      "excluded by its node selector, affinity or tolerations; no preemption: ";
  auto events = Of<PodEvent>(out);
  REQUIRE(events.size() == 1);
  CHECK(events[0].reason == "DevshareNoFit");
  CHECK(events[0].message == no_fit + "a PodDisruptionBudget protects every node's victims");
  CHECK(f.engine.counters().preemptions_refused == 1);
  f.engine.PodObserved(urgent);  // judged again: counted once
  CHECK(Of<EvictPod>(f.Tick()).empty());
  CHECK(f.engine.counters().preemptions_refused == 1);

  Pod patient = GatedAt(f, "patient", "v", 60, 100);
  patient.preemption_policy = "Never";
  f.engine.PodObserved(patient);
  out = f.Tick();
  CHECK(Of<EvictPod>(out).empty());
  CHECK(f.engine.dra_held().at("uid-patient").reason == no_fit + "its preemptionPolicy is Never");

  // The budget allows one disruption: guarded goes, peer never.
  budget.disruptions_allowed = 1;
  f.engine.PodDisruptionBudgetObserved(budget);
  f.engine.PodObserved(urgent);
  auto evictions = Of<EvictPod>(f.Tick());
  REQUIRE(evictions.size() == 1);
  CHECK(evictions[0].name == "guarded");
  CHECK(f.engine.preemptions().at("uid-urgent").node == "n2");
}

TEST_CASE(
    "engine dra: a preemption whose eviction fails is given up, what it kept released, and "
    "tried again after the hold") {
  DraEngine f;
  f.engine.DraSynced();
  REQUIRE(RunningPod(f, "low", "a", 60, 0) == "n1");
  REQUIRE(RunningPod(f, "other", "b", 60, 0) == "n2");
  GatedAt(f, "urgent", "u", 60, 100);
  auto evictions = Of<EvictPod>(f.Tick());
  REQUIRE(evictions.size() == 1);
  CHECK(f.Claimed("u").allocation);                 // kept, unwritten
  CHECK(f.Result(evictions[0].id, false).empty());  // a 429: a budget
  CHECK(f.engine.counters().evictions_failed == 1);
  CHECK(f.engine.counters().preemptions_abandoned == 1);
  CHECK(f.engine.preemptions().empty());
  CHECK_FALSE(f.Claimed("u").allocation);
  auto out = f.Tick();
  CHECK(Of<EvictPod>(out).empty());
  const DraHold& hold = f.engine.dra_held().at("uid-urgent");
  CHECK(hold.kind == DraHoldKind::kNoFit);
  CHECK(hold.reason.ends_with("; no preemption: its last one was given up"));
  const std::int64_t again = kNowMs + EngineOptions{}.preemption_hold_ms;
  CHECK(f.engine.NextWakeMs() == again);
  evictions = Of<EvictPod>(f.Tick(again));
  REQUIRE(evictions.size() == 1);
  CHECK(f.engine.counters().preemptions == 2);
}
