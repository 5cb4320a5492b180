// Leases: following (HAMi mode, W9 fixed) and client-go election
// (spec/hami-behaviour.md §8; kubernetes-wire.md §3).
#include "devshare/lease.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "devshare/objects_json.hpp"

using namespace devshare;

namespace {
LeaseRecord Lease(std::optional<std::string> holder, std::optional<std::int32_t> duration = 15,
                  std::string rv = "1") {
  LeaseRecord l;
  l.name = "hami-scheduler";
  l.lease_namespace = "kube-system";
  l.resource_version = std::move(rv);
  l.holder = std::move(holder);
  l.duration_seconds = duration;
  return l;
}
constexpr std::int64_t kT0 = 1'000'000;  // ms
}  // namespace

TEST_CASE("Lease JSON and MicroTime (exactly 6 fractional digits)") {
  constexpr std::string_view kJson = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
    "metadata":{"name":"s","namespace":"kube-system","resourceVersion":"48151623"},
    "spec":{"holderIdentity":"host-1_5f0c","leaseDurationSeconds":15,
            "acquireTime":"2025-03-01T10:00:00.000000Z","renewTime":"2025-03-01T12:04:12.345678+02:00","leaseTransitions":3}})";
  Result<LeaseRecord> l = DecodeLease(kJson);
  REQUIRE(l.ok());
  CHECK(l->holder == "host-1_5f0c");
  CHECK(l->duration_seconds == 15);
  CHECK(l->transitions == 3);
  CHECK(l->resource_version == "48151623");
  CHECK(*l->renew_time_us - *l->acquire_time_us == 252345678);  // 4 min 12.345678 s
  CHECK(EncodeMicroTime(*l->renew_time_us) == "2025-03-01T10:04:12.345678Z");
  Result<LeaseRecord> back = DecodeLease(EncodeLease(*l));
  REQUIRE(back.ok());
  CHECK(*back == *l);
  // The same from the parsed object (objects_json.hpp), as a watch event holds it.
  Result<LeaseRecord> from_object = DecodeLease(boost::json::parse(kJson).get_object());
  REQUIRE(from_object.ok());
  CHECK(*from_object == *l);
  // nil fields stay nil.
  Result<LeaseRecord> empty =
      DecodeLease(R"({"metadata":{"name":"s"},"spec":{"holderIdentity":null}})");
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->holder.has_value());
  CHECK_FALSE(empty->duration_seconds.has_value());
  for (std::string_view bad : {"2025-03-01T10:00:00Z", "2025-03-01T10:00:00.123Z",
                               "2025-03-01T10:00:00.123456789Z", "2025-03-01 10:00:00.000000Z"}) {
    CAPTURE(bad);
    CHECK_FALSE(DecodeMicroTime(bad).ok());
  }
  CHECK(DecodeLease(R"({"spec":{"leaseDurationSeconds":"15"}})").status().field() ==
        "spec.leaseDurationSeconds");
  CHECK(DecodeLease(R"({"spec":{"renewTime":"yesterday"}})").status().field() == "spec.renewTime");
}

TEST_CASE("W9: the holder must be exactly this host") {
  CHECK(HolderIsHost("hami-scheduler-1_5f0c8a52", "hami-scheduler-1"));
  CHECK(HolderIsHost("hami-scheduler-1", "hami-scheduler-1"));
  CHECK_FALSE(HolderIsHost("hami-scheduler-10_5f0c8a52", "hami-scheduler-1"));  // HAMi: true
  CHECK_FALSE(HolderIsHost("hami-scheduler-1x", "hami-scheduler-1"));
  CHECK_FALSE(HolderIsHost("", "hami-scheduler-1"));
  CHECK_FALSE(HolderIsHost("anything", ""));
}

TEST_CASE("following a Lease: transition table") {
  struct Row {
    const char* what;
    std::optional<LeaseRecord> lease;  // observed at this step (nullopt: deleted)
    std::int64_t at;                   // ms after kT0
    bool tick;                         // a tick instead of an event
    LeaderEvent event;
    bool leader;
  };
  const Row rows[] = {
      {"add: another host holds it", Lease("host-2_a", 15, "1"), 0, false, LeaderEvent::kNone,
       false},
      {"update: we acquire", Lease("host-1_b", 15, "2"), 1000, false, LeaderEvent::kStartedLeading,
       true},
      {"renew keeps the holder: no event", Lease("host-1_b", 15, "3"), 3000, false,
       LeaderEvent::kNone, true},
      {"the same record again does not refresh the time", Lease("host-1_b", 15, "3"), 10000, false,
       LeaderEvent::kNone, true},
      {"no renewal for 15 s after the last change: lapsed", std::nullopt, 18001, true,
       LeaderEvent::kStoppedLeading, false},
      {"renewed again: leading", Lease("host-1_b", 15, "4"), 19000, false,
       LeaderEvent::kStartedLeading, true},
      {"challenged: another holder", Lease("host-3_c", 15, "5"), 20000, false,
       LeaderEvent::kStoppedLeading, false},
      {"ours again", Lease("host-1_b", 15, "6"), 21000, false, LeaderEvent::kStartedLeading, true},
      {"deleted", std::nullopt, 22000, false, LeaderEvent::kStoppedLeading, false},
      {"nil holder", Lease(std::nullopt, 15, "7"), 23000, false, LeaderEvent::kNone, false},
      {"nil duration", Lease("host-1_b", std::nullopt, "8"), 24000, false, LeaderEvent::kNone,
       false},
      {"a prefix-only match is not ours", Lease("host-10_d", 15, "9"), 25000, false,
       LeaderEvent::kNone, false},
      {"ours with a valid duration", Lease("host-1_b", 15, "10"), 26000, false,
       LeaderEvent::kStartedLeading, true},
      {"the clock reads earlier (a step back): still the same state", std::nullopt, 25000, true,
       LeaderEvent::kNone, true},
  };
  LeaseFollower f;
  f.hostname = "host-1";
  for (const Row& row : rows) {
    CAPTURE(row.what);
    LeaderEvent e =
        row.tick ? FollowerTick(f, kT0 + row.at) : ObserveLease(f, row.lease, kT0 + row.at);
    CHECK(e == row.event);
    CHECK(IsLeader(f, kT0 + row.at) == row.leader);
  }
}

TEST_CASE("Filter waits for one registration pass after leadership is gained") {
  LeaseFollower f;
  f.hostname = "host-1";
  CHECK_FALSE(FilterAllowed(f, kT0));
  RegistrationPassDone(f, kT0);  // not leading: does not count
  REQUIRE(ObserveLease(f, Lease("host-1_b"), kT0) == LeaderEvent::kStartedLeading);
  CHECK_FALSE(FilterAllowed(f, kT0));  // leading, not registered: not ready
  RegistrationPassDone(f, kT0 + 100);
  CHECK(FilterAllowed(f, kT0 + 100));
  // Losing and regaining leadership needs a new pass.
  REQUIRE(ObserveLease(f, Lease("host-2_x", 15, "2"), kT0 + 200) == LeaderEvent::kStoppedLeading);
  CHECK_FALSE(FilterAllowed(f, kT0 + 200));
  REQUIRE(ObserveLease(f, Lease("host-1_b", 15, "3"), kT0 + 300) == LeaderEvent::kStartedLeading);
  CHECK_FALSE(FilterAllowed(f, kT0 + 300));
}

TEST_CASE("election: a leader that cannot read the Lease steps down at its renew deadline") {
  ElectionConfig cfg;
  cfg.identity = "host-1_u1";
  Elector e;
  ElectionDecision d = TryAcquireOrRenew(e, std::nullopt, cfg, "s", "kube-system", kT0);
  REQUIRE(ElectionWriteResult(e, d, true, kT0) == LeaderEvent::kStartedLeading);
  // The API server answers 429 and 500: reads fail; until the deadline the
  // leader keeps trying, then it stops leading.
  CHECK(ElectionReadFailed(e, cfg, kT0 + 5000) == LeaderEvent::kNone);
  CHECK(e.leading);
  CHECK(ElectionReadFailed(e, cfg, kT0 + cfg.renew_deadline_ms) == LeaderEvent::kNone);
  CHECK(ElectionReadFailed(e, cfg, kT0 + cfg.renew_deadline_ms + 1) ==
        LeaderEvent::kStoppedLeading);
  CHECK_FALSE(e.leading);
  CHECK(ElectionReadFailed(e, cfg, kT0 + 60000) == LeaderEvent::kNone);  // a follower: nothing
}

TEST_CASE("election: client-go's tryAcquireOrRenew") {
  ElectionConfig cfg;
  cfg.identity = "host-1_u1";
  REQUIRE(ValidateElectionConfig(cfg).ok());
  Elector e;
  SUBCASE("no Lease: create it and lead") {
    ElectionDecision d = TryAcquireOrRenew(e, std::nullopt, cfg, "s", "kube-system", kT0);
    CHECK(d.action == ElectionAction::kCreate);
    CHECK(d.lease.holder == "host-1_u1");
    CHECK(d.lease.duration_seconds == 15);
    CHECK(d.lease.transitions == 0);
    CHECK(ElectionWriteResult(e, d, true, kT0) == LeaderEvent::kStartedLeading);
  }
  SUBCASE("held by another, valid: wait; expired: acquire with transitions + 1") {
    LeaseRecord other = Lease("host-2_u2", 15, "7");
    other.transitions = 4;
    other.acquire_time_us = 5;
    CHECK(TryAcquireOrRenew(e, other, cfg, "s", "ns", kT0).action == ElectionAction::kNone);
    CHECK(TryAcquireOrRenew(e, other, cfg, "s", "ns", kT0 + 14999).action == ElectionAction::kNone);
    ElectionDecision d = TryAcquireOrRenew(e, other, cfg, "s", "ns", kT0 + 15000);
    CHECK(d.action == ElectionAction::kAcquire);
    CHECK(d.lease.transitions == 5);
    CHECK(d.lease.acquire_time_us == (kT0 + 15000) * 1000);
    CHECK(d.lease.resource_version == "7");  // optimistic concurrency on the PUT
    CHECK_FALSE(e.leading);
    CHECK(ElectionWriteResult(e, d, false, kT0 + 15000) ==
          LeaderEvent::kNone);  // 409: lost the race
    CHECK(ElectionWriteResult(e, d, true, kT0 + 15000) == LeaderEvent::kStartedLeading);
  }
  SUBCASE("renewing our own lease keeps acquireTime and transitions") {
    LeaseRecord ours = Lease("host-1_u1", 15, "9");
    ours.transitions = 2;
    ours.acquire_time_us = 77;
    e.leading = true;
    e.renewed_at_ms = kT0;
    ElectionDecision d = TryAcquireOrRenew(e, ours, cfg, "s", "ns", kT0 + 2000);
    CHECK(d.action == ElectionAction::kRenew);
    CHECK(d.lease.transitions == 2);
    CHECK(d.lease.acquire_time_us == 77);
    CHECK(d.lease.renew_time_us == (kT0 + 2000) * 1000);
  }
  SUBCASE("renewals failing past the deadline: step down") {
    LeaseRecord ours = Lease("host-1_u1", 15, "9");
    e.leading = true;
    e.renewed_at_ms = kT0;
    CHECK(TryAcquireOrRenew(e, ours, cfg, "s", "ns", kT0 + 10001).action ==
          ElectionAction::kStepDown);
    CHECK_FALSE(e.leading);
  }
  SUBCASE("another holder took it while we led: step down") {
    e.leading = true;
    e.renewed_at_ms = kT0;
    CHECK(TryAcquireOrRenew(e, Lease("host-2_u2", 15, "10"), cfg, "s", "ns", kT0 + 1000).action ==
          ElectionAction::kStepDown);
  }
  SUBCASE("release keeps transitions, clears the holder") {
    LeaseRecord ours = Lease("host-1_u1", 15, "9");
    ours.transitions = 3;
    LeaseRecord released = ReleaseLease(ours, 42);
    CHECK(released.holder == "");
    CHECK(released.duration_seconds == 1);
    CHECK(released.transitions == 3);
    CHECK(released.renew_time_us == 42);
  }
  ElectionConfig bad = cfg;
  bad.renew_deadline_ms = 2000;  // not > 1.2 x 2000
  CHECK(ValidateElectionConfig(bad).code() == StatusCode::kInvalidConfig);
}
