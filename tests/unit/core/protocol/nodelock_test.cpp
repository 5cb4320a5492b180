// Node lock, backoff and bind phase (spec/hami-behaviour.md §6).
#include "devshare/nodelock.hpp"

#include <doctest/doctest.h>

#include <map>
#include <random>

#include "devshare/annotations.hpp"
#include "testutil.hpp"

using namespace devshare;

namespace {
constexpr std::int64_t kNow = 1785564000;  // 2026-08-01T06:00:00Z
const PodRef kPod{"ns", "pod-a"};
std::string LockValue(std::int64_t at, std::string ns, std::string name) {
  return EncodeNodeLock(NodeLock{at, 0, true, std::move(ns), std::move(name)});
}
LockHolder Present(BindPhase phase, std::optional<std::int64_t> bind_time) {
  return LockHolder{LockHolder::State::kPresent, phase, bind_time};
}
}  // namespace

TEST_CASE("node lock acquire decisions (spec §6.2 with fixes)") {
  struct Row {
    const char* what;
    std::optional<std::string> current;
    LockHolder holder;
    LockAction action;
  };
  const LockHolder unknown{};
  const LockHolder gone{LockHolder::State::kGone, BindPhase::kNone, std::nullopt};
  const Row rows[] = {
      {"free", std::nullopt, unknown, LockAction::kSet},
      {"ours: re-entrant", LockValue(kNow - 10, "ns", "pod-a"), unknown, LockAction::kReentrant},
      {"ours, expired: renewed (as HAMi)", LockValue(kNow - 301, "ns", "pod-a"), unknown,
       LockAction::kTakeOver},
      {"another pod, holder not looked up", LockValue(kNow - 10, "ns", "pod-b"), unknown,
       LockAction::kCheckHolder},
      {"another pod, present", LockValue(kNow - 10, "ns", "pod-b"),
       Present(BindPhase::kSuccess, kNow - 10), LockAction::kHeld},
      {"another pod, gone: dangling", LockValue(kNow - 10, "ns", "pod-b"), gone,
       LockAction::kTakeOver},
      {"#1433: same name, other namespace", LockValue(kNow - 10, "other", "pod-a"),
       Present(BindPhase::kNone, std::nullopt), LockAction::kHeld},
      {"expired, holder done", LockValue(kNow - 301, "ns", "pod-b"),
       Present(BindPhase::kSuccess, kNow - 400), LockAction::kTakeOver},
      {"#3096: expired but holder still allocating", LockValue(kNow - 301, "ns", "pod-b"),
       Present(BindPhase::kAllocating, kNow - 301), LockAction::kHeld},
      {"#3096: allocating past the grace period", LockValue(kNow - 700, "ns", "pod-b"),
       Present(BindPhase::kAllocating, kNow - 601), LockAction::kTakeOver},
      {"legacy bare time within the timeout", EncodeNodeLock(NodeLock{kNow - 10, 0, false, "", ""}),
       unknown, LockAction::kHeld},
      {"legacy bare time expired", EncodeNodeLock(NodeLock{kNow - 301, 0, false, "", ""}), unknown,
       LockAction::kTakeOver},
      {"a lock written in another zone is the same instant", "2026-08-01T13:59:00+08:00,ns,pod-b",
       Present(BindPhase::kSuccess, std::nullopt), LockAction::kHeld},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    LockSighting sighting;
    LockDecision d = DecideLock(row.current, kPod, row.holder, sighting, kNow);
    CHECK(d.action == row.action);
    const bool writes = row.action == LockAction::kSet || row.action == LockAction::kTakeOver;
    CHECK(d.write.has_value() == writes);
    if (writes) CHECK(*d.write->value == "2026-08-01T06:00:00Z,ns,pod-a");
  }
}

TEST_CASE("W6: an unreadable lock expires like any other") {
  LockSighting sighting;
  const std::optional<std::string> garbage = "lock";
  CHECK(DecideLock(garbage, kPod, {}, sighting, kNow).action == LockAction::kHeld);
  CHECK(DecideLock(garbage, kPod, {}, sighting, kNow + 300).action == LockAction::kHeld);
  CHECK(DecideLock(garbage, kPod, {}, sighting, kNow + 301).action == LockAction::kTakeOver);
  // A different value restarts the clock.
  CHECK(DecideLock(std::string("lock2"), kPod, {}, sighting, kNow + 302).action ==
        LockAction::kHeld);
}

TEST_CASE("node lock release") {
  const std::string ours = LockValue(kNow, "ns", "pod-a");
  const AnnotationWrite del{std::string(keys::kNodeLock), std::nullopt};
  CHECK(DecideRelease(std::nullopt, kPod, false) == std::nullopt);
  CHECK(DecideRelease(ours, kPod, false) == del);
  CHECK(DecideRelease(LockValue(kNow, "ns", "pod-b"), kPod, false) == std::nullopt);
  CHECK(DecideRelease(LockValue(kNow, "xns", "pod-a"), kPod, false) == std::nullopt);  // #1433
  CHECK(DecideRelease(LockValue(kNow, "ns", "pod-b"), kPod, true) == del);
  CHECK(DecideRelease(EncodeNodeLock(NodeLock{kNow, 0, false, "", ""}), kPod, false) == del);
}

TEST_CASE("W7: init-container-only pods lock too") {
  Pod pod = testing::MakePod("p").Init(1, 100).Container(0);
  CHECK(PodNeedsLock(PodRequests(pod, DefaultDeviceConfig()), "NVIDIA"));
  CHECK_FALSE(PodNeedsLock(PodRequests(testing::MakePod("q").Container(0), DefaultDeviceConfig()),
                           "NVIDIA"));
}

TEST_CASE("backoff: 100 ms x 2^k x (1 + 0.5 u), five attempts") {
  CHECK(*BackoffDelayMs(0, 0.0) == doctest::Approx(100));
  CHECK(*BackoffDelayMs(0, 0.999) == doctest::Approx(149.95));
  CHECK(*BackoffDelayMs(3, 0.0) == doctest::Approx(800));
  CHECK(*BackoffDelayMs(3, 0.999) == doctest::Approx(1199.6));
  CHECK_FALSE(BackoffDelayMs(4, 0.5).has_value());
  CHECK_FALSE(BackoffDelayMs(-1, 0.5).has_value());
}

TEST_CASE("the retry-storm bound: 50 contenders x 3 steps, at most 20 per 10 ms bucket") {
  // The seed's failure: with a fixed 100 ms retry all 50 contenders collide.
  auto worst_bucket = [](auto delay) {
    std::map<std::int64_t, int> buckets;
    std::mt19937_64 rng(1655);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    int worst = 0;
    for (int contender = 0; contender < 50; ++contender) {
      double t = 0;
      for (int step = 0; step < 3; ++step) {
        t += delay(step, uniform(rng));
        worst = std::max(worst, ++buckets[static_cast<std::int64_t>(t / 10.0)]);
      }
    }
    return worst;
  };
  const int fixed = worst_bucket([](int, double) { return 100.0; });
  const int jittered = worst_bucket([](int step, double u) { return *BackoffDelayMs(step, u); });
  CHECK(fixed == 50);
  CHECK(jittered <= 20);
}

TEST_CASE("bind phase (W8: a failed bind releases its reservation)") {
  CHECK(*DecodeBindPhase("allocating") == BindPhase::kAllocating);
  CHECK(DecodeBindPhase("done").status().code() == StatusCode::kMalformed);
  StringMap start = BindStartPatch(kNow);
  CHECK(*start.Find("hami.io/bind-phase") == "allocating");
  CHECK(*start.Find("hami.io/bind-time") == "1785564000");
  BindOutcome failed = BindFailed();
  CHECK(*failed.pod_patch.Find("hami.io/bind-phase") == "failed");
  CHECK(failed.release_reservation);
  CHECK(failed.release_lock);
  BindOutcome ok = AllocateFinished(true);
  CHECK(*ok.pod_patch.Find("hami.io/bind-phase") == "success");
  CHECK_FALSE(ok.release_reservation);
  CHECK(ok.release_lock);
  CHECK(AllocateFinished(false).release_reservation);
}
