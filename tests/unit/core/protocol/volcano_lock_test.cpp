// Volcano 1.12's node lock (pkg/scheduler/plugins/util/nodelock at v1.12.4).
#include "devshare/volcano_lock.hpp"

#include <doctest/doctest.h>

using namespace devshare;

namespace {
constexpr std::int64_t kNow = 1785564000;  // 2026-08-01T06:00:00Z
}  // namespace

TEST_CASE("Volcano node lock: free, expired, held") {
  struct Row {
    const char* what;
    std::optional<std::string> current;
    bool acquired;
  };
  const Row rows[] = {
      {"no lock", std::nullopt, true},
      {"taken 10 s ago", "2026-08-01T05:59:50Z", false},
      {"taken exactly 5 min ago: held (Volcano: older than 5 min)", "2026-08-01T05:55:00Z", false},
      {"taken 5 min 1 s ago", "2026-08-01T05:54:59Z", true},
      {"another zone, 10 s ago", "2026-08-01T13:59:50+08:00", false},
      {"fractional seconds", "2026-08-01T05:59:50.123456789Z", false},
      {"in the future", "2026-08-01T07:00:00Z", false},
  };
  for (const Row& row : rows) {
    CAPTURE(row.what);
    LockSighting seen;
    const VolcanoLockDecision d = DecideVolcanoLock(row.current, seen, kNow);
    CHECK(d.acquired == row.acquired);
    if (row.acquired) {
      REQUIRE(d.write.has_value());
      CHECK(d.write->key == "hamivgpu");
      CHECK(*d.write->value == "2026-08-01T06:00:00Z");
    } else {
      CHECK_FALSE(d.write.has_value());
    }
  }
}

TEST_CASE("Volcano node lock: written in the zone asked, as time.RFC3339") {
  LockSighting seen;
  const VolcanoLockDecision d =
      DecideVolcanoLock(std::nullopt, seen, kNow, VolcanoLockOptions{300, 8 * 3600, true});
  CHECK(*d.write->value == "2026-08-01T14:00:00+08:00");
}

TEST_CASE("Volcano node lock: W6, an unreadable value expires after the timeout") {
  // HAMi's form is not an RFC 3339 time to Volcano.
  const std::string hami = "2026-08-01T05:59:50Z,default,pod-a";
  LockSighting seen;
  CHECK_FALSE(DecideVolcanoLock(hami, seen, kNow).acquired);
  CHECK(seen.first_seen == kNow);
  CHECK_FALSE(DecideVolcanoLock(hami, seen, kNow + 300).acquired);
  CHECK(DecideVolcanoLock(hami, seen, kNow + 301).acquired);
  // Volcano-exact: it blocks the node forever.
  CHECK_FALSE(
      DecideVolcanoLock(hami, seen, kNow + 100000, VolcanoLockOptions{300, 0, false}).acquired);
}
