// Registration protocols (spec/hami-behaviour.md §7; peers §A2, §A5, §A6).
#include "devshare/handshake.hpp"

#include <doctest/doctest.h>

#include "devshare/annotations.hpp"

using namespace devshare;

namespace {
constexpr std::string_view kKey = "hami.io/node-handshake";
constexpr std::int64_t kNow = 1787300439;  // 2026-08-21 08:20:39 UTC
const std::string kRegistered = R"([{"id":"GPU-a","count":10}])";

std::string Requesting(std::int64_t at) {
  return EncodeHandshake(Handshake{HandshakeState::kRequesting, HandshakeDialect::kHami, at});
}
}  // namespace

TEST_CASE("HAMi CheckHealth table (spec §7)") {
  struct Row {
    const char* what;
    std::optional<std::string> handshake;
    std::int64_t allocatable;
    bool usable;
    bool stamps;  // writes Requesting_<now>
  };
  // Memory as a scheduler that already knows the node (allocatable 10).
  const Row rows[] = {
      {"Requesting without _", "Requesting", 10, true, false},
      {"unparseable time", "Requesting_yesterday", 10, true, false},
      {"fresh Requesting", Requesting(kNow - 30), 10, true, false},
      {"expired, allocatable present", Requesting(kNow - 61), 10, true, false},
      {"absent: stamp", std::nullopt, 10, true, true},
      {"Reported: stamp", "Reported 2026-08-21 08:00:00 +0000 UTC", 10, true, true},
      {"Unknown: stamp", "Unknown", 10, true, true},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    HamiNodeMemory memory{10, kRegistered, true, false};
    RegistrationStep step =
        HamiSchedulerPass({row.handshake, kRegistered, row.allocatable}, memory, kKey, kNow);
    CHECK(step.usable == row.usable);
    CHECK(step.write.has_value() == row.stamps);
    if (row.stamps)
      CHECK(*step.write == AnnotationWrite{std::string(kKey), "Requesting_2026-08-21 08:20:39"});
  }
}

TEST_CASE("HAMi: expired with allocatable 0 cleans the node up (handshake deleted)") {
  HamiNodeMemory memory{10, kRegistered, true, false};
  RegistrationStep step =
      HamiSchedulerPass({Requesting(kNow - 61), kRegistered, 0}, memory, kKey, kNow);
  CHECK_FALSE(step.usable);
  CHECK(step.write == AnnotationWrite{std::string(kKey), std::nullopt});
  CHECK_FALSE(memory.cached);
}

TEST_CASE("HAMi NVIDIA wrapper: allocatable and annotation changes refresh the cache") {
  HamiNodeMemory memory{4, kRegistered, true, false};
  // Allocatable changed: refresh.
  RegistrationStep step =
      HamiSchedulerPass({Requesting(kNow - 10), kRegistered, 8}, memory, kKey, kNow);
  CHECK(step.usable);
  CHECK(step.refresh);
  CHECK(memory.reported == 8);
  // Same again: nothing to do.
  step = HamiSchedulerPass({Requesting(kNow - 10), kRegistered, 8}, memory, kKey, kNow);
  CHECK_FALSE(step.refresh);
  // The register annotation changed: refresh.
  step = HamiSchedulerPass({Requesting(kNow - 10), kRegistered + " ", 8}, memory, kKey, kNow);
  CHECK(step.refresh);
  // Allocatable dropped to 0 with a fresh stamp: unusable at once.
  step = HamiSchedulerPass({Requesting(kNow - 10), kRegistered, 0}, memory, kKey, kNow);
  CHECK_FALSE(step.usable);
}

TEST_CASE("W4: a node with a stale register annotation does not flap") {
  // The device plugin died: its annotation stays, allocatable is 0. HAMi
  // cleans the node up, re-stamps it on the next tick, re-adds it and drops
  // it again 60 s later, forever. devshare keeps it out and writes nothing.
  HamiNodeMemory memory{10, kRegistered, true, false};
  std::optional<std::string> handshake = Requesting(kNow - 61);
  int usable_passes = 0, writes = 0;
  for (std::int64_t t = kNow; t < kNow + 600; t += 15) {
    RegistrationStep step = HamiSchedulerPass({handshake, kRegistered, 0}, memory, kKey, t);
    usable_passes += step.usable ? 1 : 0;
    if (step.write) {
      ++writes;
      handshake = step.write->value;
    }
  }
  CHECK(usable_passes == 0);
  CHECK(writes == 1);  // the one cleanup
  // The plugin comes back: the node is stamped and registered again.
  RegistrationStep back = HamiSchedulerPass({handshake, kRegistered, 10}, memory, kKey, kNow + 700);
  CHECK(back.usable);
  CHECK(back.refresh);
  REQUIRE(back.write.has_value());
  CHECK(back.write->value->starts_with("Requesting_"));
}

TEST_CASE("HAMi-exact W4: the cleaned-up node is stamped again and comes back, as in HAMi") {
  // HAMi's loop (checked against HAMi's own code by tests/oracle): after the
  // cleanup deleted the handshake, the next pass stamps it, and with the
  // register annotation still there the node is usable until the stamp
  // expires 60 s later; then it is cleaned up again.
  HamiNodeMemory memory{10, kRegistered, true, false};
  HamiExact exact;
  exact.cleanup_restamps = true;
  std::optional<std::string> handshake = Requesting(kNow - 61);
  int usable_passes = 0, writes = 0;
  for (std::int64_t t = kNow; t < kNow + 600; t += 15) {
    RegistrationStep step =
        HamiSchedulerPass({handshake, kRegistered, 0}, memory, kKey, t, 0, exact);
    usable_passes += step.usable ? 1 : 0;
    if (step.write) {
      ++writes;
      handshake = step.write->value;
    }
  }
  // Every 75 s: the cleanup (a write), the stamp (a write, usable), then
  // usable while the stamp is 15, 30 and 45 s old: 8 cycles in 600 s.
  CHECK(usable_passes == 8 * 4);
  CHECK(writes == 8 * 2);
}

TEST_CASE("HAMi: the stamp written for an unusable node that was never cached stays written") {
  // No handshake and allocatable 0 after it was 10: CheckHealth stamps the
  // node before the NVIDIA wrapper finds it unusable; without a cached node
  // there is nothing to clean up, and the stamp is HAMi's write.
  HamiNodeMemory memory{10, kRegistered, false, false};
  RegistrationStep step = HamiSchedulerPass({std::nullopt, kRegistered, 0}, memory, kKey, kNow);
  CHECK_FALSE(step.usable);
  CHECK(step.write == AnnotationWrite{std::string(kKey), "Requesting_2026-08-21 08:20:39"});
}

TEST_CASE("W16: stamps are written and read in the same explicit zone") {
  // A scheduler in UTC+8 stamps at kNow; another replica in UTC+8 judges it
  // fresh 30 s later, exactly like one in UTC judging its own stamp.
  HamiNodeMemory memory{10, kRegistered, true, false};
  RegistrationStep stamp =
      HamiSchedulerPass({std::nullopt, kRegistered, 10}, memory, kKey, kNow, 8 * 3600);
  REQUIRE(stamp.write.has_value());
  CHECK(*stamp.write->value == "Requesting_2026-08-21 16:20:39");
  // Judged in the same zone: fresh after 30 s, expired after 61 s (with no
  // allocatable to prove life) — not 8 hours early or late.
  auto judge = [&](std::int64_t at) {
    HamiNodeMemory m{0, kRegistered, true, false};
    return HamiSchedulerPass({stamp.write->value, kRegistered, 0}, m, kKey, at, 8 * 3600).usable;
  };
  CHECK(judge(kNow + 30));
  CHECK_FALSE(judge(kNow + 61));
}

constexpr const char* kVolcanoRegister = "GPU-0,10,16384,NVIDIA-Tesla T4,true,hami-core:";

TEST_CASE("Volcano handshake (peers §A2)") {
  constexpr std::string_view kVolcano = "volcano.sh/node-vgpu-handshake";
  auto stamp = [](HandshakeState s, std::int64_t at) {
    return EncodeHandshake(Handshake{s, HandshakeDialect::kVolcano, at});
  };
  struct Row {
    const char* what;
    std::optional<std::string> handshake;
    bool usable;
    std::optional<std::string> writes;
  };
  const Row rows[] = {
      {"no handshake: no vGPUs yet", std::nullopt, false, std::nullopt},
      {"Reported: answer with Requesting", "Reported 2026-08-21 08:20:00.1 +0000 UTC m=+5.0", true,
       "Requesting_2026.08.21 08:20:39"},
      {"fresh Requesting", stamp(HandshakeState::kRequesting, kNow - 59), true, std::nullopt},
      {"expired Requesting: Deleted", stamp(HandshakeState::kRequesting, kNow - 61), false,
       "Deleted_2026.08.21 08:20:39"},
      {"unparseable Requesting counts as expired", "Requesting_soon", false,
       "Deleted_2026.08.21 08:20:39"},
      {"Deleted stays dropped", stamp(HandshakeState::kDeleted, kNow - 600), false, std::nullopt},
      {"Requesting without '_' (Volcano panics) counts as unparseable", "Requesting", false,
       "Deleted_2026.08.21 08:20:39"},
      {"only the text up to the second '_' is read", "Requesting_2026.08.21 08:20:00_x", true,
       std::nullopt},
      {"Go's time.Parse reads a one-digit hour", "Requesting_2026.08.21 8:20:00", true,
       std::nullopt},
      {"Requesting at exactly 60 s is still usable", stamp(HandshakeState::kRequesting, kNow - 60),
       true, std::nullopt},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    RegistrationStep step =
        VolcanoSchedulerPass({row.handshake, kVolcanoRegister, 8}, kVolcano, kNow);
    CHECK(step.usable == row.usable);
    if (row.writes) {
      REQUIRE(step.write.has_value());
      CHECK(*step.write->value == *row.writes);
    } else {
      CHECK_FALSE(step.write.has_value());
    }
  }
}

TEST_CASE("Volcano handshake: no register annotation, or none Volcano reads, writes nothing") {
  constexpr std::string_view kVolcano = "volcano.sh/node-vgpu-handshake";
  const std::string reported = "Reported 2026-08-21 08:20:00.1 +0000 UTC";
  CHECK(VolcanoSchedulerPass({reported, std::nullopt, 8}, kVolcano, kNow) == RegistrationStep{});
  CHECK(VolcanoSchedulerPass({reported, "GPU-0,10:", 8}, kVolcano, kNow) == RegistrationStep{});
  CHECK(VolcanoSchedulerPass({reported, "", 8}, kVolcano, kNow) == RegistrationStep{});
  CHECK(VolcanoSchedulerPass({reported, kVolcanoRegister, 0}, kVolcano, kNow).usable);
}

TEST_CASE("Volcano handshake: W16, stamps read in the zone they are written in") {
  constexpr std::string_view kVolcano = "volcano.sh/node-vgpu-handshake";
  constexpr std::int32_t kEast = 8 * 3600;
  const std::string written =
      *VolcanoSchedulerPass({"Reported", kVolcanoRegister, 8}, kVolcano, kNow, kEast).write->value;
  CHECK(written == "Requesting_2026.08.21 16:20:39");
  const NodeObservation later{written, kVolcanoRegister, 8};
  CHECK(VolcanoSchedulerPass(later, kVolcano, kNow + 30, kEast).usable);
  CHECK_FALSE(VolcanoSchedulerPass(later, kVolcano, kNow + 61, kEast).usable);
  // Volcano-exact: read as UTC, the stamp lies 8 hours ahead and never expires.
  CHECK(VolcanoSchedulerPass(later, kVolcano, kNow + 3600, kEast, {.read_utc = true}).usable);
}

TEST_CASE("change-only protocol: the scheduler writes nothing") {
  CHECK(ChangeOnlySchedulerPass({std::nullopt, kRegistered, 8}, std::nullopt) ==
        RegistrationStep{true, true, std::nullopt});
  CHECK(ChangeOnlySchedulerPass({std::nullopt, kRegistered, 8}, kRegistered) ==
        RegistrationStep{true, false, std::nullopt});
  CHECK_FALSE(ChangeOnlySchedulerPass({std::nullopt, kRegistered, 0}, kRegistered).usable);
  CHECK_FALSE(ChangeOnlySchedulerPass({std::nullopt, std::nullopt, 8}, std::nullopt).usable);
  // The plugin writes only when the device list changed.
  CHECK_FALSE(
      ChangeOnlyPluginPass(kRegistered, kRegistered, "hami.io/node-nvidia-register").has_value());
  CHECK(ChangeOnlyPluginPass(std::nullopt, kRegistered, "hami.io/node-nvidia-register") ==
        AnnotationWrite{"hami.io/node-nvidia-register", kRegistered});
  // The legacy plugin writes both, every time.
  LegacyPluginWrites legacy =
      LegacyPluginPass(kRegistered, "hami.io/node-nvidia-register", kKey, kNow);
  CHECK(legacy.register_write.value == kRegistered);
  CHECK(*legacy.handshake_write.value == "Reported 2026-08-21 08:20:39 +0000 UTC");
}
