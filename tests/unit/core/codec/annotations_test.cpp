// Node lock, handshake, scoring weights and name lists
// (spec/hami-behaviour.md §1.1, §1.2, §6.2, §7; peers §A2).
#include "devshare/annotations.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "testutil.hpp"

using namespace devshare;

// 2026-08-01T06:00:00Z
constexpr std::int64_t kAug1At6 = 1785564000;

TEST_CASE("node lock: owner and legacy forms") {
  struct Row {
    std::string_view value;
    NodeLock lock;
    std::string_view reencoded;  // what EncodeNodeLock writes back
  };
  const Row rows[] = {
      {"2026-08-01T06:00:00Z,ns,pod-a",
       {kAug1At6, 0, true, "ns", "pod-a"},
       "2026-08-01T06:00:00Z,ns,pod-a"},
      // Written by a scheduler in UTC+8: the same instant, the zone is kept.
      {"2026-08-01T14:00:00+08:00,ns,pod-a",
       {kAug1At6, 8 * 3600, true, "ns", "pod-a"},
       "2026-08-01T14:00:00+08:00,ns,pod-a"},
      {"2026-08-01T01:30:00-04:30,ns,p",
       {kAug1At6, -(4 * 3600 + 1800), true, "ns", "p"},
       "2026-08-01T01:30:00-04:30,ns,p"},
      // Legacy: the bare time, no owner.
      {"2026-08-01T06:00:00Z", {kAug1At6, 0, false, "", ""}, "2026-08-01T06:00:00Z"},
      // Go accepts fractional seconds when parsing RFC 3339.
      {"2026-08-01T06:00:00.123456Z,ns,p",
       {kAug1At6, 0, true, "ns", "p"},
       "2026-08-01T06:00:00Z,ns,p"},
      // Three parts with empty owner fields are still the owner form.
      {"2026-08-01T06:00:00Z,,", {kAug1At6, 0, true, "", ""}, "2026-08-01T06:00:00Z,,"},
      {"2024-02-29T23:59:59Z", {1709251199, 0, false, "", ""}, "2024-02-29T23:59:59Z"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    Result<NodeLock> lock = DecodeNodeLock(row.value);
    REQUIRE(lock.ok());
    CHECK(*lock == row.lock);
    CHECK(EncodeNodeLock(*lock) == row.reencoded);
  }
}

TEST_CASE("node lock: malformed values are errors, never silent") {
  const std::string_view rows[] = {
      "lock",                             // W6: HAMi blocks the node forever on this
      "",                                 //
      "2026-08-01T06:00:00Z,ns",          // two parts
      "2026-08-01T06:00:00Z,ns,p,extra",  // four parts
      "2026-08-01 06:00:00Z,ns,p",        // not RFC 3339
      "2026-08-01T06:00:00,ns,p",         // no zone
      "2026-02-30T06:00:00Z,ns,p",        // no such day
      "2025-02-29T06:00:00Z",             // not a leap year
      "2026-13-01T06:00:00Z",             // month 13
      "2026-08-01T24:00:00Z",             // hour 24
      "2026-08-01T06:00:60Z",             // second 60
      "2026-08-01T06:00:00+24:00",        // offset out of range
      "2026-08-01T06:00:00Zjunk,ns,p",    // trailing bytes
  };
  for (std::string_view value : rows) {
    CAPTURE(value);
    Result<NodeLock> lock = DecodeNodeLock(value);
    REQUIRE_FALSE(lock.ok());
    CHECK(lock.status().code() == StatusCode::kMalformed);
  }
  CHECK(DecodeNodeLock("2026-08-01T06:00:00Z,ns").status().message().find("got 2") !=
        std::string_view::npos);
}

TEST_CASE("handshake: HAMi and Volcano values") {
  // 2026-08-21 08:20:39 UTC
  constexpr std::int64_t kT = 1787300439;
  struct Row {
    std::string_view value;
    HandshakeState state;
    HandshakeDialect dialect;
    std::optional<std::int64_t> time;
  };
  const Row rows[] = {
      {"Requesting_2026-08-21 08:20:39", HandshakeState::kRequesting, HandshakeDialect::kHami, kT},
      {"Requesting_2026.08.21 08:20:39", HandshakeState::kRequesting, HandshakeDialect::kVolcano,
       kT},
      {"Deleted_2026.08.21 08:20:39", HandshakeState::kDeleted, HandshakeDialect::kVolcano, kT},
      {"Deleted_2026-08-21 08:20:39", HandshakeState::kDeleted, HandshakeDialect::kHami, kT},
      // Go's time.Now().String() as the plugins wrote it, with its own zone.
      {"Reported 2026-08-21 16:20:39.123456789 +0800 CST m=+12.345678901",
       HandshakeState::kReported, HandshakeDialect::kHami, kT},
      {"Reported 2026-08-21 08:20:39 +0000 UTC", HandshakeState::kReported, HandshakeDialect::kHami,
       kT},
      // A bare "Requesting" (HAMi #1964) is a fresh request without a time.
      {"Requesting", HandshakeState::kRequesting, HandshakeDialect::kHami, std::nullopt},
      {"", HandshakeState::kOther, HandshakeDialect::kHami, std::nullopt},
      {"Unknown", HandshakeState::kOther, HandshakeDialect::kHami, std::nullopt},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    Result<Handshake> h = DecodeHandshake(row.value);
    REQUIRE(h.ok());
    CHECK(h->state == row.state);
    CHECK(h->dialect == row.dialect);
    CHECK(h->unix_seconds == row.time);
  }
}

TEST_CASE("handshake: zone-less times are read in the zone given (W16)") {
  // The same wall-clock text written by a scheduler in UTC+8 is 8 hours earlier.
  Result<Handshake> utc = DecodeHandshake("Requesting_2026-08-21 08:20:39");
  Result<Handshake> cst = DecodeHandshake("Requesting_2026-08-21 08:20:39", 8 * 3600);
  REQUIRE(utc.ok());
  REQUIRE(cst.ok());
  CHECK(*utc->unix_seconds - *cst->unix_seconds == 8 * 3600);
}

TEST_CASE("handshake: encoding") {
  Handshake h{HandshakeState::kRequesting, HandshakeDialect::kHami, 1787300439};
  CHECK(EncodeHandshake(h) == "Requesting_2026-08-21 08:20:39");
  CHECK(EncodeHandshake(h, 8 * 3600) == "Requesting_2026-08-21 16:20:39");
  h.dialect = HandshakeDialect::kVolcano;
  CHECK(EncodeHandshake(h) == "Requesting_2026.08.21 08:20:39");
  h.state = HandshakeState::kDeleted;
  CHECK(EncodeHandshake(h) == "Deleted_2026.08.21 08:20:39");
  h.state = HandshakeState::kReported;
  CHECK(EncodeHandshake(h) == "Reported 2026-08-21 08:20:39 +0000 UTC");
  CHECK(EncodeHandshake(h, -3600) == "Reported 2026-08-21 07:20:39 -0100 -0100");
  for (std::int32_t zone : {0, 3600, -7 * 3600, 5 * 3600 + 1800}) {
    for (auto state :
         {HandshakeState::kRequesting, HandshakeState::kDeleted, HandshakeState::kReported}) {
      Handshake in{state, HandshakeDialect::kVolcano, 1787300439};
      Result<Handshake> back = DecodeHandshake(EncodeHandshake(in, zone), zone);
      REQUIRE(back.ok());
      CHECK(back->state == state);
      CHECK(back->unix_seconds == in.unix_seconds);
    }
  }
}

TEST_CASE("handshake: malformed times are errors with their position") {
  struct Row {
    std::string_view value;
    std::size_t offset;
  };
  const Row rows[] = {
      {"Requesting_2026-08-21T08:20:39", 11},
      {"Requesting_garbage", 11},
      {"Requesting_2026-08-21 08:20", 11},
      {"Requesting_2026-02-30 08:20:39", 11},
      {"Requesting 2026-08-21 08:20:39", 10},
      {"Deleted", 7},
      {"Reported", 8},
      {"Reported 2026-08-21 08:20:39", 9},
      {"Reported 2026-08-21 08:20:39 +0800", 9},
      {"Reported 2026-08-21 08:20:39 +0800 CST m=", 9},
      {"Reported 2026-08-21 08:20:39 +08:00 CST", 9},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    Result<Handshake> h = DecodeHandshake(row.value);
    REQUIRE_FALSE(h.ok());
    CHECK(h.status().field() == "time");
    CHECK(h.status().offset() == row.offset);
  }
}

TEST_CASE("device scoring weights: spec §1.2 and §5.4") {
  struct Row {
    std::string_view value;
    ScoringWeights weights;
  };
  const Row rows[] = {
      {"slot=1,core=1,memory=1", {1, 1, 1}},
      {"slot=1,core=1,memory=3", {1, 1, 3}},
      {"memory=3, slot=1 ,  core = 0", {1, 0, 3}},
      {"slot=0,core=0,memory=+2", {0, 0, 2}},
      {"slot=9223372036854775807,core=0,memory=0", {9223372036854775807, 0, 0}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    Result<ScoringWeights> w = DecodeScoringWeights(row.value);
    REQUIRE(w.ok());
    CHECK(*w == row.weights);
    CHECK(*DecodeScoringWeights(EncodeScoringWeights(*w)) == *w);
  }
  CHECK(EncodeScoringWeights(ScoringWeights{}) == "slot=1,core=1,memory=1");
}

TEST_CASE("device scoring weights: the eight error classes") {
  struct Row {
    std::string_view value;
    std::string_view message;
  };
  const Row rows[] = {
      {"slot=1,core=1", "expected slot, core, and memory weights"},
      {"slot=1,core=1,memory=1,", "expected slot, core, and memory weights"},
      {"slot=1,core,memory=1", "expected key=value entries"},
      {"slot=1,slot=2,memory=1", "duplicate \"slot\" weight"},
      {"slot=1,core=x,memory=1", "\"core\" weight must be an integer"},
      {"slot=1,core=1.5,memory=1", "\"core\" weight must be an integer"},
      {"slot=1,core=-1,memory=1", "\"core\" weight must not be negative"},
      {"slot=1,gpu=1,memory=1", "unknown weight \"gpu\""},
      {"slot=0,core=0,memory=0", "at least one weight must be positive"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    Result<ScoringWeights> w = DecodeScoringWeights(row.value);
    REQUIRE_FALSE(w.ok());
    CHECK(w.status().message().find("invalid hami.io/device-scoring-weights annotation") == 0);
    CHECK(w.status().message().find(row.message) != std::string_view::npos);
  }
}

TEST_CASE("name lists: trimmed, empty members skipped") {
  using Names = std::vector<std::string>;
  CHECK(DecodeNameList("GPU-a, GPU-b ,,GPU-c,") == Names{"GPU-a", "GPU-b", "GPU-c"});
  CHECK(DecodeNameList("").empty());
  CHECK(DecodeNameList("  ,  ").empty());
  CHECK(EncodeNameList(Names{"A100", "H100"}) == "A100,H100");
}
