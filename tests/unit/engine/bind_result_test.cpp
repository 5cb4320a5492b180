// The results ApiResult routes to a bind (BindResult) and to plain writes
// (ReleaseResult), and the event contract of engine.hpp: appending to
// `out`, ids unknown or reported twice.
#include <doctest/doctest.h>

#include "devshare/annotations.hpp"
#include "devshare/engine/engine.hpp"
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

// An engine with node n1 (two GPUs) and pod p placed there and observed:
// ready for Bind.
struct Placed : OneNodeEngine {
  explicit Placed(EngineOptions options = {}) : OneNodeEngine(std::move(options)) {
    const Pod pod = MakePod("p").Container(1, 1000, 10);
    REQUIRE(Place(pod).nodes == std::vector<std::string>{"n1"});
    engine.PodObserved(pod);
  }
  // Bind p; the node lock's PatchNode.
  PatchNode BindAndLock() {
    std::vector<Command> out;
    engine.Bind(9, "default", "p", "uid-p", "n1", kNowMs, out);
    auto lock = Of<PatchNode>(out);
    REQUIRE(lock.size() == 1);
    return lock[0];
  }
};

}  // namespace

TEST_CASE("BindResult: a lock write that fails is contention, per LockRetry") {
  SUBCASE("kOnce: the bind fails, naming the conflict, and frees its reservation") {
    EngineOptions options;
    options.lock_retry = LockRetry::kOnce;
    Placed f(options);
    const PatchNode lock = f.BindAndLock();
    std::vector<Command> out;
    f.engine.ApiResult(lock.id, false, kNowMs, out);
    auto reply = Of<BindReply>(out);
    REQUIRE(reply.size() == 1);
    CHECK(reply[0].request == 9);
    CHECK(reply[0].error.find("409") != std::string::npos);
    CHECK(Of<PatchNode>(out).empty());  // no lock of ours to release
    CHECK(f.engine.counters().lock_contention == 1);
    CHECK(f.engine.counters().binds_failed == 1);
    CHECK_FALSE(f.engine.snapshot().PodUsageOf("uid-p").ok());
  }
  SUBCASE("kFixed: the bind waits 100 ms and writes the lock again") {
    EngineOptions options;
    options.lock_retry = LockRetry::kFixed;
    Placed f(options);
    const PatchNode lock = f.BindAndLock();
    std::vector<Command> out;
    f.engine.ApiResult(lock.id, false, kNowMs, out);
    CHECK(out.empty());
    CHECK(f.engine.counters().lock_retries == 1);
    CHECK(f.engine.NextWakeMs() == std::optional<std::int64_t>(kNowMs + 100));
    f.engine.Tick(kNowMs + 100, out);
    auto again = Of<PatchNode>(out);
    REQUIRE(again.size() == 1);
    CHECK(again[0].writes == lock.writes);
    CHECK(again[0].id != lock.id);
  }
}

TEST_CASE("BindResult: the bind-phase PATCH (PodWrites::kHami) leads to a bare Binding") {
  EngineOptions options;
  options.pod_writes = PodWrites::kHami;
  Placed f(options);
  std::vector<Command> out;
  const PatchNode lock = f.BindAndLock();
  f.engine.ApiResult(lock.id, true, kNowMs, out);
  auto phase = Of<PatchPod>(out);
  REQUIRE(phase.size() == 1);
  SUBCASE("succeeded: the Binding, then the reply") {
    out.clear();
    f.engine.ApiResult(phase[0].id, true, kNowMs, out);
    auto binding = Of<PostBinding>(out);
    REQUIRE(binding.size() == 1);
    CHECK(binding[0].node == "n1");
    out.clear();
    f.engine.ApiResult(binding[0].id, true, kNowMs, out);
    REQUIRE(Of<BindReply>(out).size() == 1);
    CHECK(Of<BindReply>(out)[0].error.empty());
    CHECK(f.engine.counters().bindings == 1);
  }
  SUBCASE("failed: the lock released, bind-phase failed, the bind failed") {
    out.clear();
    f.engine.ApiResult(phase[0].id, false, kNowMs, out);
    REQUIRE(out.size() == 3);  // in this order: release, phase, reply
    REQUIRE(std::holds_alternative<PatchNode>(out[0]));
    CHECK(std::get<PatchNode>(out[0]).preconditions == lock.writes);
    REQUIRE(std::holds_alternative<PatchPod>(out[1]));
    CHECK(*std::get<PatchPod>(out[1]).annotations.Find("hami.io/bind-phase") == "failed");
    REQUIRE(std::holds_alternative<BindReply>(out[2]));
    CHECK(std::get<BindReply>(out[2]).error == "binding failed");
  }
}

TEST_CASE("ApiResult appends to out, and ignores ids unknown or reported twice") {
  Placed f;
  const PatchNode lock = f.BindAndLock();
  std::vector<Command> out{BindReply{1, "before"}};
  f.engine.ApiResult(lock.id, true, kNowMs, out);
  REQUIRE(out.size() == 2);  // what was there stays first
  CHECK(std::get<BindReply>(out[0]).error == "before");
  const PostBinding binding = std::get<PostBinding>(out[1]);
  const Counters before = f.engine.counters();
  out.clear();
  f.engine.ApiResult(lock.id, false, kNowMs, out);  // reported a second time
  f.engine.ApiResult(999999, false, kNowMs, out);   // never issued
  CHECK(out.empty());
  CHECK(f.engine.counters().binds_failed == before.binds_failed);
  CHECK(f.engine.counters().lock_contention == before.lock_contention);
  f.engine.ApiResult(binding.id, true, kNowMs, out);
  CHECK(Of<BindReply>(out).at(0).error.empty());
}

TEST_CASE("ReleaseResult: a failed registration write is not written again") {
  EngineOptions options;
  options.registration = RegistrationProtocol::kHami;
  Engine engine(options);
  std::vector<Command> out;
  engine.NodeObserved(MakeNode("n1").Gpus(1), kNowMs, out);
  auto writes = Of<PatchNode>(out);
  REQUIRE(writes.size() == 1);
  CHECK(writes[0].registration);
  out.clear();
  engine.ApiResult(writes[0].id, false, kNowMs, out);
  CHECK(out.empty());
  // Only the periodic pass is due: no retry of the write.
  CHECK(engine.NextWakeMs() == std::optional<std::int64_t>(kNowMs + 15000));
}
