// The sans-I/O engine: registration, leadership gating, Filter and Bind flows.
#include "devshare/engine/engine.hpp"

#include <doctest/doctest.h>

#include "devshare/annotations.hpp"
#include "engine_commands.hpp"
#include "testutil.hpp"

using namespace devshare;
using namespace devshare::engine;
using devshare::engine::testing::kNowMs;
using devshare::engine::testing::Of;
using devshare::engine::testing::OneNodeEngine;
using devshare::testing::MakeNode;
using devshare::testing::MakePod;

namespace {

using Fixture = OneNodeEngine;

}  // namespace

TEST_CASE("engine: Filter is refused at once until a registration pass, never left hanging") {
  Engine engine(EngineOptions{});
  std::vector<Command> out;
  engine.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);  // a new node triggers a pass
  CHECK(engine.Ready(kNowMs));
  Engine cold(EngineOptions{});
  out.clear();
  cold.Filter(1, MakePod("p").Container(1), {}, kNowMs, out);
  auto replies = Of<FilterReply>(out);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].error.find("not ready") != std::string::npos);
  CHECK(cold.counters().filters_refused == 1);
}

TEST_CASE("engine: Filter reserves and replies at once; the placement goes with the bind") {
  Fixture f;
  std::vector<Command> out;
  Pod pod = MakePod("p").Container(1, 1000, 10);
  f.engine.Filter(7, pod, {}, kNowMs, out);
  CHECK(Of<PatchPod>(out).empty());  // kube-scheduler's cycle does not wait for the API server
  auto replies = Of<FilterReply>(out);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].request == 7);
  CHECK(replies[0].nodes == std::vector<std::string>{"n1"});
  CHECK(f.engine.counters().filters_placed == 1);
  CHECK(f.engine.snapshot().PodUsageOf("uid-p").ok());  // reserved
  f.engine.PodObserved(pod);  // the watch's copy, without the placement, keeps the reservation
  CHECK(f.engine.snapshot().PodUsageOf("uid-p").ok());
}

TEST_CASE("engine: PodWrites::kHami PATCHes the pod in Filter, then replies") {
  EngineOptions options;
  options.pod_writes = PodWrites::kHami;
  Fixture f(options);
  std::vector<Command> out;
  Pod pod = MakePod("p").Container(1, 1000, 10);
  f.engine.Filter(7, pod, {}, kNowMs, out);
  auto patches = Of<PatchPod>(out);
  REQUIRE(patches.size() == 1);
  CHECK(Of<FilterReply>(out).empty());  // the reply waits for the PATCH
  CHECK(*patches[0].annotations.Find("hami.io/vgpu-node") == "n1");
  CHECK(f.engine.snapshot().PodUsageOf("uid-p").ok());  // reserved
  out.clear();
  f.engine.ApiResult(patches[0].id, true, kNowMs, out);
  auto replies = Of<FilterReply>(out);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].request == 7);
  CHECK(replies[0].nodes == std::vector<std::string>{"n1"});
  SUBCASE("then Bind: lock, bind-phase PATCH, a bare Binding") {
    f.engine.PodObserved(pod);
    out.clear();
    f.engine.Bind(9, "default", "p", "uid-p", "n1", kNowMs, out);
    const std::uint64_t lock = Of<PatchNode>(out).at(0).id;
    out.clear();
    f.engine.ApiResult(lock, true, kNowMs, out);
    auto phase = Of<PatchPod>(out);
    REQUIRE(phase.size() == 1);
    CHECK(*phase[0].annotations.Find("hami.io/bind-phase") == "allocating");
    CHECK(phase[0].annotations.Find("hami.io/vgpu-node") == nullptr);
    out.clear();
    f.engine.ApiResult(phase[0].id, true, kNowMs, out);
    auto binding = Of<PostBinding>(out);
    REQUIRE(binding.size() == 1);
    CHECK(binding[0].annotations.entries().empty());
  }
  SUBCASE("a failed PATCH undoes the reservation") {
    out.clear();
    Pod q = MakePod("q").Container(1, 1000, 10);
    f.engine.Filter(8, q, {}, kNowMs, out);
    const std::uint64_t id = Of<PatchPod>(out).at(0).id;
    out.clear();
    f.engine.ApiResult(id, false, kNowMs, out);
    CHECK_FALSE(Of<FilterReply>(out).at(0).error.empty());
    CHECK_FALSE(f.engine.snapshot().PodUsageOf("uid-q").ok());
  }
}

TEST_CASE("engine: a pod without devices keeps every node, or fgd's choice") {
  auto reply = [](EngineOptions options) {
    Engine engine(std::move(options));
    std::vector<Command> out;
    engine.NodeObserved(MakeNode("a").Gpus(2).Cpu("8"), kNowMs, out);
    engine.NodeObserved(MakeNode("b").Gpus(2).Cpu("16"), kNowMs, out);
    engine.Tick(kNowMs, out);
    out.clear();
    engine.Filter(3, MakePod("cpu").Container(0).Requests(6000, 0), {"a", "b"}, kNowMs, out);
    REQUIRE(Of<PatchPod>(out).empty());  // nothing to reserve
    return Of<FilterReply>(out).at(0);
  };
  CHECK(reply(EngineOptions{}).nodes == std::vector<std::string>{"a", "b"});
  EngineOptions fgd;
  fgd.filter.node_policy = "fgd";
  fgd.filter.workload = {{1, 1, 0, 4000, 0}};
  CHECK(reply(fgd).nodes == std::vector<std::string>{"b"});  // on a, 2 cores would strand both GPUs
}

TEST_CASE("engine: Bind with the node lock, step by step") {
  Fixture f;
  std::vector<Command> out;
  Node n1 = MakeNode("n1").Gpus(2);
  n1.resource_version = "41";
  f.engine.NodeObserved(n1, kNowMs, out);
  Pod pod = MakePod("p").Container(1, 1000, 10);
  REQUIRE(f.Place(pod).nodes == std::vector<std::string>{"n1"});
  f.engine.PodObserved(pod);  // the watch delivers the pod
  out.clear();
  f.engine.Bind(9, "default", "p", "uid-p", "n1", kNowMs, out);
  auto lock = Of<PatchNode>(out);
  REQUIRE(lock.size() == 1);
  CHECK(lock[0].writes.at(0).key == "hami.io/mutex.lock");
  CHECK(lock[0].writes.at(0).value->ends_with(",default,p"));
  CHECK(lock[0].resource_version == "41");  // the version the lock was seen absent at
  out.clear();
  f.engine.ApiResult(lock[0].id, true, kNowMs, out);
  CHECK(Of<PatchPod>(out).empty());
  auto binding = Of<PostBinding>(out);
  REQUIRE(binding.size() == 1);
  CHECK(binding[0].node == "n1");
  // The Binding carries the placement and the bind phase.
  CHECK(*binding[0].annotations.Find("hami.io/bind-phase") == "allocating");
  CHECK(*binding[0].annotations.Find("hami.io/vgpu-node") == "n1");
  CHECK(binding[0].annotations.Find("hami.io/vgpu-devices-to-allocate") != nullptr);
  SUBCASE("success") {
    out.clear();
    f.engine.ApiResult(binding[0].id, true, kNowMs, out);
    CHECK(Of<BindReply>(out).at(0).error.empty());
    CHECK(f.engine.snapshot().PodUsageOf("uid-p").ok());
  }
  SUBCASE("W8: a failed Binding releases the lock and the reservation") {
    out.clear();
    f.engine.ApiResult(binding[0].id, false, kNowMs, out);
    CHECK_FALSE(Of<BindReply>(out).at(0).error.empty());
    auto release = Of<PatchNode>(out);
    REQUIRE(release.size() == 1);
    CHECK_FALSE(release[0].writes.at(0).value.has_value());
    CHECK(*Of<PatchPod>(out).at(0).annotations.Find("hami.io/bind-phase") == "failed");
    CHECK_FALSE(f.engine.snapshot().PodUsageOf("uid-p").ok());
    // The release is conditional: only while the node still carries our lock.
    const std::string ours = *lock[0].writes.at(0).value;
    REQUIRE(release[0].preconditions.size() == 1);
    CHECK(release[0].preconditions[0].value == ours);

    // A release that fails (an API error) is written again with backoff,
    // while the cache shows the lock ours; not once it is gone or another's.
    out.clear();
    f.engine.ApiResult(release[0].id, false, kNowMs, out);
    CHECK(out.empty());
    CHECK(f.engine.NextWakeMs() == std::optional<std::int64_t>(kNowMs + 1000));
    f.engine.Tick(kNowMs + 999, out);
    CHECK(Of<PatchNode>(out).empty());
    f.engine.Tick(kNowMs + 1000, out);
    auto again = Of<PatchNode>(out);
    REQUIRE(again.size() == 1);
    CHECK(again[0].preconditions == release[0].preconditions);
    SUBCASE("written at last") {
      out.clear();
      f.engine.ApiResult(again[0].id, true, kNowMs + 1000, out);
      f.engine.Tick(kNowMs + 60000, out);
      CHECK(Of<PatchNode>(out).empty());
    }
    SUBCASE("failing again: 2 s later; the lock another's by then: not written") {
      out.clear();
      f.engine.ApiResult(again[0].id, false, kNowMs + 1000, out);
      f.engine.Tick(kNowMs + 2999, out);
      CHECK(Of<PatchNode>(out).empty());
      Node taken = MakeNode("n1").Gpus(2);
      taken.annotations.Set("hami.io/mutex.lock", "2026-08-21T08:20:39Z,default,other");
      f.engine.NodeObserved(taken, kNowMs + 2000, out);
      out.clear();
      f.engine.Tick(kNowMs + 3000, out);
      CHECK(Of<PatchNode>(out).empty());
    }
  }
}

TEST_CASE("engine: LockRetry::kOnce (HAMi): lock contention fails the bind without waiting") {
  EngineOptions options;
  options.lock_retry = LockRetry::kOnce;
  Fixture f(options);
  Pod holder = MakePod("holder").Container(1);
  f.engine.PodObserved(holder);
  std::vector<Command> out;
  Node locked = MakeNode("n1").Gpus(2).Annotation(
      "hami.io/mutex.lock",
      EncodeNodeLock(NodeLock{kNowMs / 1000 - 10, 0, true, "default", "holder"}));
  f.engine.NodeObserved(locked, kNowMs, out);
  Pod pod = MakePod("p").Container(1, 1000, 10);
  REQUIRE(!f.Place(pod).nodes.empty());
  f.engine.PodObserved(pod);
  out.clear();
  f.engine.Bind(9, "default", "p", "uid-p", "n1", kNowMs, out);
  auto reply = Of<BindReply>(out);
  REQUIRE(reply.size() == 1);
  CHECK(reply[0].error.find("node lock contention") != std::string::npos);
  CHECK(f.engine.counters().lock_contention == 1);
  CHECK_FALSE(f.engine.snapshot().PodUsageOf("uid-p").ok());
}

TEST_CASE("engine: a bind waits for the lock's release, the waiters of a node in turn") {
  Fixture f;  // LockRetry::kRelease
  f.engine.PodObserved(MakePod("holder").Container(1));
  auto locked_by = [](const char* holder) {
    return MakeNode("n1").Gpus(2).Annotation(
        "hami.io/mutex.lock",
        EncodeNodeLock(NodeLock{kNowMs / 1000 - 1, 0, true, "default", holder}));
  };
  std::vector<Command> out;
  f.engine.NodeObserved(locked_by("holder"), kNowMs, out);
  for (const char* name : {"p", "q"}) {
    Pod pod = MakePod(name).Container(1, 1000, 10);
    REQUIRE(f.Place(pod).nodes == std::vector<std::string>{"n1"});
    f.engine.PodObserved(pod);
  }
  out.clear();
  f.engine.Bind(1, "default", "p", "uid-p", "n1", kNowMs, out);
  f.engine.Bind(2, "default", "q", "uid-q", "n1", kNowMs + 10, out);
  CHECK(out.empty());  // both wait, with no request and no timer but the deadline
  CHECK(f.engine.NextWakeMs() == kNowMs + 28000);
  SUBCASE("released: p writes the lock, q waits its turn") {
    f.engine.NodeObserved(MakeNode("n1").Gpus(2), kNowMs + 50, out);
    auto lock = Of<PatchNode>(out);
    REQUIRE(lock.size() == 1);
    CHECK(lock[0].writes.at(0).value->ends_with(",default,p"));
    out.clear();
    f.engine.NodeObserved(MakeNode("n1").Gpus(2), kNowMs + 60, out);  // p's write in flight
    CHECK(out.empty());
    f.engine.ApiResult(lock[0].id, true, kNowMs + 70, out);
    auto binding = Of<PostBinding>(out);
    REQUIRE(binding.size() == 1);
    f.engine.ApiResult(binding[0].id, true, kNowMs + 80, out);
    CHECK(Of<BindReply>(out).at(0).error.empty());
    out.clear();
    f.engine.NodeObserved(locked_by("p"), kNowMs + 90, out);  // held until p's Allocate
    CHECK(out.empty());
    f.engine.NodeObserved(MakeNode("n1").Gpus(2), kNowMs + 500, out);
    lock = Of<PatchNode>(out);
    REQUIRE(lock.size() == 1);
    CHECK(lock[0].writes.at(0).value->ends_with(",default,q"));
    CHECK(f.engine.counters().binds_failed == 0);
  }
  SUBCASE("never released: both fail at the deadline") {
    f.engine.Tick(kNowMs + 28000, out);
    f.engine.Tick(kNowMs + 28010, out);
    auto replies = Of<BindReply>(out);
    REQUIRE(replies.size() == 2);
    CHECK(replies[0].error.find("timed out after 28s waiting for node n1") != std::string::npos);
    CHECK(f.engine.counters().binds_failed == 2);
  }
}

TEST_CASE("engine: Filter holds pods while the binds in flight need the bind budget of writes") {
  EngineOptions options;
  options.api_qps = 0.2;  // 10 s of writes: 2, one bind's (lock + Binding)
  Fixture f(options);
  Pod p = MakePod("p").Container(1, 1000, 10);
  REQUIRE(f.Place(p).nodes == std::vector<std::string>{"n1"});  // no bind in flight yet
  f.engine.PodObserved(p);
  std::vector<Command> out;
  f.engine.Bind(9, "default", "p", "uid-p", "n1", kNowMs, out);
  auto lock = Of<PatchNode>(out);
  REQUIRE(lock.size() == 1);
  out.clear();
  Pod q = MakePod("q").Container(1, 1000, 10);
  f.engine.PodObserved(q);
  f.engine.Filter(8, q, {}, kNowMs + 5, out);
  CHECK(out.empty());  // held: kube-scheduler's cycle waits
  CHECK(f.engine.counters().filters_held == 1);
  CHECK(f.engine.NextWakeMs() == kNowMs + 5 + 10000);
  SUBCASE("placed once the bind ends") {
    f.engine.ApiResult(lock[0].id, true, kNowMs + 10, out);
    auto binding = Of<PostBinding>(out);
    REQUIRE(binding.size() == 1);
    out.clear();
    f.engine.Tick(kNowMs + 15, out);
    CHECK(out.empty());  // the bind is still in flight
    f.engine.ApiResult(binding[0].id, true, kNowMs + 20, out);
    CHECK(Of<BindReply>(out).at(0).error.empty());
    REQUIRE(f.engine.NextWakeMs().has_value());
    CHECK(*f.engine.NextWakeMs() <= kNowMs + 20);  // due at once
    out.clear();
    f.engine.Tick(kNowMs + 20, out);
    auto replies = Of<FilterReply>(out);
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].request == 8);
    CHECK(replies[0].nodes == std::vector<std::string>{"n1"});
    CHECK(f.engine.counters().filters_hold_expired == 0);
  }
  SUBCASE("refused at the end of the hold; kube-scheduler retries after its backoff") {
    f.engine.Tick(kNowMs + 5 + 10000, out);
    auto replies = Of<FilterReply>(out);
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].request == 8);
    CHECK(replies[0].error.starts_with("busy: 1 binds in flight"));
    CHECK(f.engine.counters().filters_hold_expired == 1);
    CHECK_FALSE(f.engine.snapshot().PodUsageOf("uid-q").ok());  // nothing reserved
  }
  SUBCASE("a pod deleted while held is not placed") {
    f.engine.PodDeleted("uid-q");
    f.engine.ApiResult(lock[0].id, true, kNowMs + 10, out);
    f.engine.ApiResult(Of<PostBinding>(out).at(0).id, true, kNowMs + 20, out);
    out.clear();
    f.engine.Tick(kNowMs + 20, out);
    CHECK(Of<FilterReply>(out).at(0).error == "the pod was deleted while held");
    CHECK_FALSE(f.engine.snapshot().PodUsageOf("uid-q").ok());
  }
}

TEST_CASE("engine: lock-free binding carries the devices on the Binding") {
  EngineOptions options;
  options.bind_mode = BindMode::kLockFree;
  Fixture f(options);
  Pod pod = MakePod("p").Container(1, 1000, 10);
  REQUIRE(!f.Place(pod).nodes.empty());
  f.engine.PodObserved(pod);
  std::vector<Command> out;
  f.engine.Bind(9, "default", "p", "uid-p", "n1", kNowMs, out);
  CHECK(Of<PatchNode>(out).empty());
  auto binding = Of<PostBinding>(out);
  REQUIRE(binding.size() == 1);
  CHECK(binding[0].annotations.Find("hami.io/vgpu-devices-allocated") != nullptr);
  CHECK(*binding[0].annotations.Find("hami.io/bind-phase") == "allocating");
}

TEST_CASE("engine: HAMi registration stamps the handshake; change-only writes nothing") {
  EngineOptions hami;
  hami.registration = RegistrationProtocol::kHami;
  Engine engine(hami);
  std::vector<Command> out;
  engine.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
  auto stamps = Of<PatchNode>(out);
  REQUIRE(stamps.size() == 1);
  CHECK(*stamps[0].writes.at(0).value == "Requesting_2026-08-21 08:20:39");
  Engine quiet(EngineOptions{});
  out.clear();
  quiet.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
  for (int i = 1; i <= 40; ++i) quiet.Tick(kNowMs + i * 15000, out);  // ten minutes
  CHECK(Of<PatchNode>(out).empty());
  CHECK(quiet.snapshot().node_count() == 1);
  // A node whose plugin is gone (allocatable 0) leaves the snapshot.
  Node dead = MakeNode("n1").Gpus(1);
  dead.allocatable.Set("nvidia.com/gpu", "0");
  quiet.NodeObserved(dead, kNowMs, out);
  quiet.Tick(kNowMs + 41 * 15000, out);
  CHECK(quiet.snapshot().node_count() == 0);
}

namespace {

// Options of an engine following a Lease as host sched-1.
EngineOptions Following() {
  EngineOptions options;
  options.leadership = Leadership::kFollowLease;
  options.hostname = "sched-1";
  return options;
}

// The Lease naming sched-1, 15 s, observed at kNowMs.
LeaseRecord HeldBySched1() {
  LeaseRecord lease;
  lease.holder = "sched-1_abc";
  lease.duration_seconds = 15;
  lease.resource_version = "1";
  return lease;
}

}  // namespace

TEST_CASE("engine: following a Lease gates Filter on leadership and a pass") {
  Engine engine(Following());
  std::vector<Command> out;
  engine.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
  engine.Tick(kNowMs, out);
  CHECK_FALSE(engine.Ready(kNowMs));                  // a follower
  engine.LeaseObserved(HeldBySched1(), kNowMs, out);  // leadership gained: a pass runs
  CHECK(engine.Ready(kNowMs));
  engine.Tick(kNowMs + 16000, out);  // not renewed: leadership lapses
  CHECK_FALSE(engine.Ready(kNowMs + 16000));
}

namespace {

// A leading engine (it follows sched1's Lease) with pod p placed on n1, the
// Filter's reply in `out`.
struct LeadingWithPlaced {
  LeadingWithPlaced() : engine(Following()) {
    engine.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
    engine.LeaseObserved(HeldBySched1(), kNowMs, out);
    Pod pod = MakePod("p").Container(1, 1000, 10);
    engine.PodObserved(pod);
    engine.Filter(1, pod, {}, kNowMs, out);
  }
  Engine engine;
  std::vector<Command> out;
};

}  // namespace

TEST_CASE("engine: a bind whose replica stops leading writes nothing more") {
  LeadingWithPlaced f;
  Engine& engine = f.engine;
  std::vector<Command>& out = f.out;
  REQUIRE(Of<FilterReply>(out).at(0).nodes == std::vector<std::string>{"n1"});
  out.clear();
  engine.Bind(2, "default", "p", "uid-p", "n1", kNowMs, out);
  const std::uint64_t lock = Of<PatchNode>(out).at(0).id;
  out.clear();
  // The lock write answers after the Lease has lapsed (renewals never seen):
  // no Binding, the bind fails, the reservation goes.
  engine.ApiResult(lock, true, kNowMs + 16000, out);
  CHECK(Of<PostBinding>(out).empty());
  CHECK(Of<PatchPod>(out).empty());
  auto replies = Of<BindReply>(out);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].error.starts_with("not ready: leadership lost"));
  CHECK_FALSE(engine.snapshot().PodUsageOf("uid-p").ok());
  out.clear();
  engine.Bind(3, "default", "p", "uid-p", "n1", kNowMs + 16000, out);  // and no new bind starts
  CHECK(Of<PatchNode>(out).empty());
  CHECK(Of<BindReply>(out).at(0).error.starts_with("not ready"));
}

TEST_CASE("engine: a Binding that fails after the replica stopped leading releases nothing") {
  LeadingWithPlaced f;
  Engine& engine = f.engine;
  std::vector<Command>& out = f.out;
  out.clear();
  engine.Bind(2, "default", "p", "uid-p", "n1", kNowMs, out);
  engine.ApiResult(Of<PatchNode>(out).at(0).id, true, kNowMs, out);
  std::uint64_t binding = 0;
  for (const auto& c : Of<PatchPod>(out)) engine.ApiResult(c.id, true, kNowMs, out);
  for (const auto& c : Of<PostBinding>(out)) binding = c.id;
  REQUIRE(binding != 0);
  out.clear();
  // Its outcome, read back for 30 s, is a failure learnt once the Lease has
  // lapsed: neither the lock's release nor the pod's bind-phase is written.
  engine.ApiResult(binding, false, kNowMs + 31000, out);
  CHECK(Of<PatchNode>(out).empty());
  CHECK(Of<PatchPod>(out).empty());
  REQUIRE(Of<BindReply>(out).size() == 1);
  CHECK(Of<BindReply>(out).at(0).error.starts_with("not ready: leadership lost"));
  CHECK_FALSE(engine.snapshot().PodUsageOf("uid-p").ok());
}

namespace {

// An engine whose node n1 is locked by a pending pod "holder", with pod p
// placed on n1 and bound by request 9.
struct Contended {
  explicit Contended(EngineOptions options) : f(std::move(options)) {
    f.engine.PodObserved(MakePod("holder").Container(1));
    std::vector<Command> ignored;
    f.engine.NodeObserved(Locked(), kNowMs, ignored);
    Pod pod = MakePod("p").Container(1, 1000, 10);
    REQUIRE(!f.Place(pod).nodes.empty());
    f.engine.PodObserved(pod);
    f.engine.Bind(9, "default", "p", "uid-p", "n1", kNowMs, out);
  }
  static Node Locked() {
    return MakeNode("n1").Gpus(2).Annotation(
        "hami.io/mutex.lock",
        EncodeNodeLock(NodeLock{kNowMs / 1000 - 10, 0, true, "default", "holder"}));
  }
  Fixture f;
  std::vector<Command> out;
};

}  // namespace

TEST_CASE("engine: a held lock is retried every 100 ms until it is free") {
  EngineOptions options;
  options.lock_retry = LockRetry::kFixed;
  Contended c(options);
  CHECK(c.out.empty());  // no reply yet: waiting
  REQUIRE(c.f.engine.NextWakeMs() == kNowMs + 100);
  c.f.engine.Tick(kNowMs + 100, c.out);  // still held
  CHECK(c.out.empty());
  CHECK(c.f.engine.NextWakeMs() == kNowMs + 200);
  c.f.engine.NodeObserved(MakeNode("n1").Gpus(2), kNowMs + 150, c.out);  // the plugin released it
  c.f.engine.Tick(kNowMs + 200, c.out);
  auto lock = Of<PatchNode>(c.out);
  REQUIRE(lock.size() == 1);
  CHECK(lock[0].writes.at(0).value->ends_with(",default,p"));
  // The write expects the lock to be absent, as the engine last saw it.
  REQUIRE(lock[0].preconditions.size() == 1);
  CHECK(lock[0].preconditions[0] == AnnotationWrite{"hami.io/mutex.lock", std::nullopt});
  CHECK(c.f.engine.counters().lock_contention == 2);
  CHECK(c.f.engine.counters().lock_retries == 2);
  CHECK_FALSE(c.f.engine.NextWakeMs().has_value());
  SUBCASE("a write that loses the race (409) waits again") {
    c.out.clear();
    c.f.engine.ApiResult(lock[0].id, false, kNowMs + 220, c.out);
    CHECK(c.out.empty());
    CHECK(c.f.engine.NextWakeMs() == kNowMs + 320);
  }
}

TEST_CASE("engine: lock retries stop at the timeout and release the reservation") {
  EngineOptions options;
  options.lock_retry = LockRetry::kFixed;
  options.lock_retry_timeout_ms = 1000;
  Contended c(options);
  for (std::int64_t t = kNowMs + 100; t <= kNowMs + 1100 && c.out.empty(); t += 100)
    c.f.engine.Tick(t, c.out);
  auto reply = Of<BindReply>(c.out);
  REQUIRE(reply.size() == 1);
  CHECK(reply[0].request == 9);
  CHECK(reply[0].error.starts_with("timed out after 1s waiting for node n1 to be unlocked"));
  CHECK_FALSE(c.f.engine.snapshot().PodUsageOf("uid-p").ok());
}

TEST_CASE("engine: backoff retries wait 100 ms x 2^k x (1 + 0.5u), deterministically") {
  EngineOptions options;
  options.lock_retry = LockRetry::kBackoff;
  options.seed = 11;
  Contended a(options), b(options);
  std::vector<std::int64_t> waits;
  std::int64_t now = kNowMs;
  for (int k = 0; k < 5; ++k) {
    const std::int64_t next = *a.f.engine.NextWakeMs();
    CHECK(next == *b.f.engine.NextWakeMs());
    waits.push_back(next - now);
    now = next;
    a.f.engine.Tick(now, a.out);
    b.f.engine.Tick(now, b.out);
  }
  const std::int64_t low[] = {100, 200, 400, 800, 800};
  for (std::size_t k = 0; k < waits.size(); ++k) {
    CHECK(waits[k] >= low[k]);
    CHECK(waits[k] < low[k] * 3 / 2);
  }
}

TEST_CASE("engine: change-only registration follows node events without a periodic pass") {
  Engine engine(EngineOptions{});
  std::vector<Command> out;
  engine.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
  engine.NodeObserved(MakeNode("n2").Gpus(1), kNowMs, out);
  CHECK(engine.counters().registration_passes == 1);  // the first pass; n2 registered by its event
  CHECK(engine.snapshot().node_count() == 2);
  CHECK_FALSE(engine.NextWakeMs().has_value());                  // nothing to do until an event
  engine.NodeObserved(MakeNode("n1").Gpus(3), kNowMs + 5, out);  // devices changed: applied at once
  CHECK(engine.snapshot().NodeDevices("n1")->size() == 3);
  EngineOptions hami;
  hami.registration = RegistrationProtocol::kHami;
  Engine periodic(hami);
  periodic.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
  CHECK(periodic.NextWakeMs() == kNowMs + 15000);
  auto writes = Of<PatchNode>(out);
  REQUIRE(!writes.empty());
  CHECK(writes.back().registration);
  CHECK(periodic.counters().registration_writes == 1);
}

TEST_CASE("engine: Prioritize is refused until ready, then ranks with the normalized score") {
  Engine cold(EngineOptions{});
  Result<std::vector<NodeScore>> refused = cold.Prioritize(MakePod("p").Container(1), {}, kNowMs);
  CHECK(refused.status().code() == StatusCode::kUnavailable);

  for (const char* policy : {"binpack", "spread"}) {
    CAPTURE(policy);
    EngineOptions options;
    options.filter.node_policy = policy;
    Fixture f(options);
    std::vector<Command> out;
    f.engine.NodeObserved(MakeNode("n2").Gpus(2), kNowMs, out);
    REQUIRE(f.Place(MakePod("load").Container(1, 4000, 50)).nodes.size() == 1);  // n1: first name
    Result<std::vector<NodeScore>> ranked =
        f.engine.Prioritize(MakePod("p").Container(1, 1000, 10), {}, kNowMs);
    REQUIRE(ranked.ok());
    REQUIRE(ranked->size() == 2);
    // binpack prefers the loaded n1, spread the empty n2; the preferred gets 100.
    const bool binpack = std::string_view(policy) == "binpack";
    CHECK((*ranked)[0].node == "n1");
    CHECK((*ranked)[0].normalized == (binpack ? 100 : 0));
    CHECK((*ranked)[1].normalized == (binpack ? 0 : 100));
    CHECK(f.engine.counters().filters_placed == 1);  // Prioritize reserves nothing
  }
}

TEST_CASE("engine: a node whose register annotation does not decode is recorded, then cleared") {
  Fixture f;
  std::vector<Command> out;
  Node broken = MakeNode("n2").Gpus(2);
  broken.annotations.Set("hami.io/node-nvidia-register", "[{\"id\":\"GPU-x\",\"count\":");
  f.engine.NodeObserved(broken, kNowMs, out);
  REQUIRE(f.engine.node_errors().size() == 1);
  CHECK(f.engine.node_errors().at("n2").find("hami.io/node-nvidia-register") != std::string::npos);
  CHECK(f.engine.node_errors().count("n1") == 0);
  f.engine.NodeObserved(MakeNode("n2").Gpus(2), kNowMs, out);  // fixed by the device plugin
  CHECK(f.engine.node_errors().empty());
  f.engine.NodeObserved(broken, kNowMs, out);
  f.engine.NodeDeleted("n2");
  CHECK(f.engine.node_errors().empty());
}

TEST_CASE("engine: Filter places around nodes a bind holds or is about to lock") {
  auto engine_with = [](bool avoid) {
    EngineOptions options;
    options.avoid_locked_nodes = avoid;
    auto engine = std::make_unique<Engine>(options);
    std::vector<Command> out;
    for (const char* name : {"n1", "n2", "n3"})
      engine->NodeObserved(MakeNode(name).Gpus(2), kNowMs, out);
    engine->Tick(kNowMs, out);
    return engine;
  };
  auto place = [](Engine& engine, const Pod& pod, const std::vector<std::string>& nodes = {}) {
    std::vector<Command> out;
    engine.Filter(7, pod, nodes, kNowMs, out);
    REQUIRE(Of<PatchPod>(out).empty());
    engine.PodObserved(pod);
    return Of<FilterReply>(out).at(0).nodes.at(0);
  };
  auto quarter = [](const char* name) { return MakePod(name).Container(1, 1000, 10); };
  auto lock_of = [](const char* node, const char* holder) {
    return MakeNode(node).Gpus(2).Annotation(
        "hami.io/mutex.lock",
        EncodeNodeLock(NodeLock{kNowMs / 1000 - 1, 0, true, "default", holder}));
  };

  SUBCASE("binpack's next choice is the node the last pod is binding to: skipped") {
    auto engine = engine_with(true);
    CHECK(place(*engine, quarter("a")) == "n1");
    CHECK(place(*engine, quarter("b")) == "n2");  // n1: a placed, not yet bound
    CHECK(engine->counters().filters_around_locks == 1);
    // a bound, its lock still held until the plugin's Allocate; b not yet bound.
    std::vector<Command> out;
    engine->NodeObserved(lock_of("n1", "a"), kNowMs, out);
    Pod a = quarter("a");
    a.node_name = "n1";
    engine->PodObserved(a);
    CHECK(place(*engine, quarter("c")) == "n3");
    // The plugin released n1's lock: binpack's choice again.
    engine->NodeObserved(MakeNode("n1").Gpus(2), kNowMs, out);
    CHECK(place(*engine, quarter("d")) == "n1");
  }
  SUBCASE("when every fitting node is locked, the pod goes where the policy says") {
    auto engine = engine_with(true);
    std::vector<Command> out;
    engine->NodeObserved(lock_of("n1", "x"), kNowMs, out);
    CHECK(place(*engine, quarter("a"), {"n1"}) == "n1");
    CHECK(engine->counters().filters_around_locks == 0);
  }
  SUBCASE("an expired lock does not keep a pod away; a pod without devices keeps every node") {
    auto engine = engine_with(true);
    std::vector<Command> out;
    engine->NodeObserved(MakeNode("n1").Gpus(2).Annotation(
                             "hami.io/mutex.lock", EncodeNodeLock(NodeLock{kNowMs / 1000 - 301, 0,
                                                                           true, "default", "x"})),
                         kNowMs, out);
    engine->NodeObserved(lock_of("n2", "y"), kNowMs, out);
    CHECK(place(*engine, quarter("a")) == "n1");
    out.clear();
    engine->Filter(8, MakePod("plain").Container(0), {"n1", "n2", "n3"}, kNowMs, out);
    REQUIRE(Of<FilterReply>(out).size() == 1);
    CHECK(Of<FilterReply>(out)[0].nodes == std::vector<std::string>{"n1", "n2", "n3"});
  }
  SUBCASE("when every node is busy, the pod waits where the fewest binds do") {
    auto engine = engine_with(true);
    std::vector<Command> out;
    engine->NodeObserved(lock_of("n1", "x"), kNowMs, out);
    engine->NodeObserved(lock_of("n2", "y"), kNowMs, out);
    engine->NodeObserved(lock_of("n3", "z"), kNowMs, out);
    CHECK(place(*engine, quarter("a")) == "n1");  // all equally busy: binpack's choice
    CHECK(place(*engine, quarter("b")) == "n2");  // n1 now has a lock and a's bind
    CHECK(place(*engine, quarter("c")) == "n3");
    CHECK(place(*engine, quarter("d")) == "n1");  // all at two again
    CHECK(engine->counters().filters_around_locks == 2);
  }
  SUBCASE("a lock this pod holds does not keep it away") {
    auto engine = engine_with(true);
    std::vector<Command> out;
    engine->NodeObserved(lock_of("n2", "a"), kNowMs, out);
    engine->NodeObserved(lock_of("n1", "x"), kNowMs, out);
    CHECK(place(*engine, quarter("a")) == "n2");
  }
  SUBCASE("false: HAMi's choice, the locks ignored") {
    auto engine = engine_with(false);
    CHECK(place(*engine, quarter("a")) == "n1");
    CHECK(place(*engine, quarter("b")) == "n1");
    CHECK(engine->counters().filters_around_locks == 0);
  }
}

TEST_CASE("engine: ResourceQuota events bind Filter; a limit that does not parse is recorded") {
  OneNodeEngine e;
  auto quota = [](std::string name, std::string limit) {
    return ResourceQuota{"ml", std::move(name), "", "1",
                         StringMap{{"limits.nvidia.com/gpumem", std::move(limit)}}};
  };
  e.engine.ResourceQuotaObserved(quota("team", "4000"));
  CHECK(e.Place(MakePod("a", "ml").Container(1, 3000)).nodes == std::vector<std::string>{"n1"});
  e.engine.PodObserved(
      MakePod("a", "ml").Container(1, 3000).Holding("n1", "n1-gpu0,NVIDIA,3000,0:;"));
  FilterReply over = e.Place(MakePod("b", "ml").Container(1, 2000));  // 3000 + 2000 > 4000
  CHECK(over.nodes.empty());
  // No pod of lower priority: no eviction helps.
  CHECK(over.failed.empty());
  REQUIRE(over.unresolvable.size() == 1);
  CHECK(over.unresolvable[0].reason.find("ResourceQuotaNotFit") != std::string::npos);
  // Another quota that does not parse: recorded, and the first still binds.
  e.engine.ResourceQuotaObserved(quota("typo", "2.5"));
  REQUIRE(e.engine.quota_errors().size() == 1);
  CHECK(e.engine.quota_errors().begin()->first == "ml/typo");
  CHECK(e.Place(MakePod("b", "ml").Container(1, 2000)).nodes.empty());
  // Raised, then deleted: the pod fits.
  e.engine.ResourceQuotaObserved(quota("typo", "8000"));
  CHECK(e.engine.quota_errors().empty());
  CHECK(e.Place(MakePod("b", "ml").Container(1, 2000)).nodes.empty());  // "team" is tighter
  e.engine.ResourceQuotaDeleted("ml", "team");
  CHECK(e.Place(MakePod("b", "ml").Container(1, 2000)).nodes == std::vector<std::string>{"n1"});
  e.engine.ResourceQuotaDeleted("ml", "typo");
  CHECK(e.engine.quota_count() == 0);
}

TEST_CASE("engine: a deletion that frees devices asks the pods just refused to be tried again") {
  OneNodeEngine e;  // n1: two GPUs
  e.engine.PodObserved(MakePod("a").Container(1, 8000).Holding("n1", "n1-gpu0,NVIDIA,8000,0:;"));
  e.engine.PodObserved(MakePod("b").Container(1, 8000).Holding("n1", "n1-gpu1,NVIDIA,8000,0:;"));
  std::vector<Command> out;
  e.engine.Filter(1, MakePod("early").Container(1, 8000), {}, kNowMs - 5000, out);
  e.engine.Filter(2, MakePod("late").Container(1, 8000), {}, kNowMs - 100, out);
  REQUIRE(Of<FilterReply>(out).size() == 2);
  CHECK(Of<FilterReply>(out)[1].nodes.empty());
  out.clear();
  e.engine.Tick(kNowMs, out);
  CHECK(Of<PatchPod>(out).empty());  // nothing freed yet
  e.engine.PodDeleted("uid-a");
  REQUIRE(e.engine.NextWakeMs().has_value());
  CHECK(*e.engine.NextWakeMs() <= kNowMs);
  e.engine.Tick(kNowMs, out);
  // Only the pod refused within the window (2 s) before: the other was
  // refused before any retry of kube-scheduler's could race the deletion.
  auto patches = Of<PatchPod>(out);
  REQUIRE(patches.size() == 1);
  CHECK(patches[0].name == "late");
  CHECK(*patches[0].annotations.Find(kRetryAnnotation) == std::to_string(kNowMs));
  CHECK(e.engine.counters().retries_requested == 1);
  e.engine.ApiResult(patches[0].id, true, kNowMs, out);  // nothing follows
  out.clear();
  e.engine.PodDeleted("uid-b");
  e.engine.Tick(kNowMs + 10, out);
  CHECK(Of<PatchPod>(out).empty());  // asked once; refused again, it would be asked again
}
