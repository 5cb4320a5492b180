// BuildEngineOptions and SetEngineOption: EngineOptions from named values,
// every refusal naming the option as it was given.
#include "devshare/engine/engine_options.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace devshare;
using namespace devshare::engine;

namespace {

// The error of setting `name` to `value` on default options.
std::string ErrorOf(std::string_view name, std::string_view value) {
  EngineOptions options;
  Status s = SetEngineOption(options, name, value);
  CHECK(s.code() == StatusCode::kInvalidConfig);
  CHECK(s.field() == name);
  return std::string(s.message());
}

}  // namespace

TEST_CASE("BuildEngineOptions sets every option from its text") {
  const std::vector<EngineOption> named{{"registration", "hami"},
                                        {"leadership", "follow"},
                                        {"hostname", "sched-1"},
                                        {"bind", "lock-free"},
                                        {"lock_retry", "backoff"},
                                        {"pod_writes", "hami"},
                                        {"avoid_locked_nodes", "false"},
                                        {"node_policy", "spread"},
                                        {"gpu_policy", "binpack"},
                                        {"hami_exact", "W1,W2"},
                                        {"dra_policy", "spread"},
                                        {"dra_device_class", "gpu.example.com"},
                                        {"dra_device_class", "b.example"},
                                        {"api_qps", "2.5"},
                                        {"seed", "18446744073709551615"},
                                        {"zone_offset_seconds", "-3600"},
                                        {"lock_timeout_seconds", "60"},
                                        {"lock_grace_seconds", "0"},
                                        {"lock_retry_timeout", "30s"},
                                        {"filter_hold", "500ms"},
                                        {"audit_grace", "1m"},
                                        {"register_period", "1h"},
                                        {"bind_budget", "2000"}};
  Result<EngineOptions> built = BuildEngineOptions(named);
  REQUIRE(built.ok());
  const EngineOptions& o = *built;
  CHECK(o.registration == RegistrationProtocol::kHami);
  CHECK(o.leadership == Leadership::kFollowLease);
  CHECK(o.hostname == "sched-1");
  CHECK(o.bind_mode == BindMode::kLockFree);
  CHECK(o.lock_retry == LockRetry::kBackoff);
  CHECK(o.pod_writes == PodWrites::kHami);
  CHECK_FALSE(o.avoid_locked_nodes);
  CHECK(o.filter.node_policy == "spread");
  CHECK(o.filter.gpu_policy == "binpack");
  CHECK(o.filter.hami_exact == *ParseHamiExact("W1,W2"));
  CHECK(o.dra_policy == dra::Policy::kSpread);
  CHECK(o.dra_device_classes == dra::ServedClasses{"b.example", "gpu.example.com"});
  CHECK(o.api_qps == 2.5);
  CHECK(o.seed == 18446744073709551615ULL);
  CHECK(o.zone_offset_seconds == -3600);
  CHECK(o.lock.timeout_seconds == 60);
  CHECK(o.lock.grace_seconds == 0);
  CHECK(o.lock_retry_timeout_ms == 30000);
  CHECK(o.filter_hold_ms == 500);
  CHECK(o.audit_grace_ms == 60000);
  CHECK(o.register_period_ms == 3600000);
  CHECK(o.bind_budget_ms == 2000);  // a bare number: milliseconds
}

TEST_CASE("BuildEngineOptions: each front end's spelling; later values win; base kept") {
  EngineOptions base;
  base.filter.workload = {WorkloadClass{1, 1, 500, 0, 0}};
  base.hostname = "kept";
  const std::vector<EngineOption> named{{"--lock-retry", "once"},    // the command line's
                                        {"bind_mode", "lock-free"},  // Python's
                                        {"register_period_ms", "250"},
                                        {"lock_retry", "fixed"}};
  Result<EngineOptions> built = BuildEngineOptions(named, base);
  REQUIRE(built.ok());
  CHECK(built->lock_retry == LockRetry::kFixed);
  CHECK(built->bind_mode == BindMode::kLockFree);
  CHECK(built->register_period_ms == 250);
  CHECK(built->hostname == "kept");
  CHECK(built->filter.workload == base.filter.workload);
  CHECK(BuildEngineOptions({}).ok());  // nothing named: the defaults
}

TEST_CASE("SetEngineOption refuses, naming the option as given and why") {
  CHECK(ErrorOf("--lock-retry", "sometimes") ==
        "--lock-retry: 'sometimes' is not one of release, once, fixed, backoff");
  CHECK(ErrorOf("registration", "legacy") ==
        "registration: 'legacy' is not one of hami, volcano, change-only");
  CHECK(ErrorOf("bind_mode", "none") == "bind_mode: 'none' is not one of node-lock, lock-free");
  CHECK(ErrorOf("leadership", "elect") == "leadership: 'elect' is not one of always, follow");
  CHECK(ErrorOf("pod_writes", "annotations") ==
        "pod_writes: 'annotations' is not one of binding, hami");
  CHECK(ErrorOf("avoid_locked_nodes", "yes") ==
        "avoid_locked_nodes: expected true or false, got 'yes'");
  CHECK(ErrorOf("dra_policy", "upstream") ==
        "dra_policy: 'upstream' is not one of binpack, spread, fgd (upstream is "
        "kube-scheduler's own)");
  CHECK(ErrorOf("dra_device_class", "") == "dra_device_class: expected a DeviceClass name");
  CHECK(ErrorOf("hami_exact", "W9").starts_with("hami_exact: hami-exact: unknown row \"W9\""));
  CHECK(ErrorOf("api_qps", "-1") == "api_qps: expected a number, 0 or more, got '-1'");
  CHECK(ErrorOf("api_qps", "nan") == "api_qps: expected a number, 0 or more, got 'nan'");
  CHECK(ErrorOf("seed", "-1") == "seed: expected a whole number, 0 or more, got '-1'");
  CHECK(ErrorOf("lock_timeout_seconds", "-5") == "lock_timeout_seconds: must be 0 or more, got -5");
  CHECK(ErrorOf("lock_grace_seconds", "5s") ==
        "lock_grace_seconds: expected a whole number, got '5s'");
  CHECK(ErrorOf("zone_offset_seconds", "90000") ==
        "zone_offset_seconds: must be at most 86400, got 90000");
  CHECK(ErrorOf("lock_retry_timeout", "soon") ==
        "lock_retry_timeout: expected a duration such as 500ms, 30s, 10m or 1h, got 'soon'");
  CHECK(ErrorOf("lock_retry_timeout_ms", "-1") ==
        "lock_retry_timeout_ms: must be 0 or more, got -1");
  CHECK(ErrorOf("lock_retry_timeout_ms", "30s") ==
        "lock_retry_timeout_ms: expected a whole number, got '30s'");
  CHECK(ErrorOf("register_period_ms", "0") == "register_period_ms: must be above 0, got 0");
  CHECK(ErrorOf("bind_budget", "0s") == "bind_budget: must be above 0, got 0s");
  CHECK(ErrorOf("policy", "binpack") == "policy: no such engine option");
  CHECK(ErrorOf("seed_ms", "1") == "seed_ms: no such engine option");  // not a duration
}

TEST_CASE("SetEngineOption leaves the options as they were when it refuses") {
  EngineOptions options;
  options.lock_retry = LockRetry::kOnce;
  options.register_period_ms = 123;
  CHECK_FALSE(SetEngineOption(options, "lock_retry", "never").ok());
  CHECK_FALSE(SetEngineOption(options, "register_period", "0").ok());
  CHECK_FALSE(SetEngineOption(options, "dra_device_class", "").ok());
  CHECK(options.lock_retry == LockRetry::kOnce);
  CHECK(options.register_period_ms == 123);
  CHECK(options.dra_device_classes.empty());
  // BuildEngineOptions stops at the first refusal.
  const std::vector<EngineOption> named{{"bind", "lock-free"}, {"bind", "x"}, {"seed", "y"}};
  Result<EngineOptions> built = BuildEngineOptions(named);
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().message() == "bind: 'x' is not one of node-lock, lock-free");
}

TEST_CASE("ParseDurationMs: units, bare milliseconds, and what it refuses") {
  CHECK(*ParseDurationMs("0") == 0);
  CHECK(*ParseDurationMs("750") == 750);
  CHECK(*ParseDurationMs("500ms") == 500);
  CHECK(*ParseDurationMs("30s") == 30000);
  CHECK(*ParseDurationMs("10m") == 600000);
  CHECK(*ParseDurationMs("2h") == 7200000);
  CHECK(*ParseDurationMs("999999999999h") == 999999999999LL * 3600000);
  for (std::string_view bad : {"", "s", "-1s", "1.5s", "10 s", "1d", "1000000000000", "1sm"}) {
    CAPTURE(bad);
    Result<std::int64_t> parsed = ParseDurationMs(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
  }
}
