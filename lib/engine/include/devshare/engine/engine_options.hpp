// devshare/engine/engine_options.hpp — EngineOptions from named values: the
// one place the command line (`devshare serve`), scenario files and Python
// turn their settings into EngineOptions.
//
// An option is a name and its value as text. Names are the scenario file's
// (devshare/sim/experiment.hpp); a front end may spell them its own way: a
// leading "--" is dropped and '-' stands for '_' ("--lock-retry" is
// lock_retry). Options and the values they take:
//
//   registration        hami | volcano | change-only       (kRegistrationNames)
//   leadership          always | follow                    (kLeadershipNames)
//   hostname            any text
//   bind, bind_mode     node-lock | lock-free              (kBindModeNames)
//   lock_retry          release | once | fixed | backoff   (kLockRetryNames)
//   pod_writes          binding | hami                     (kPodWritesNames)
//   avoid_locked_nodes, preemption   true | false
//   node_policy, gpu_policy   a policy name, kept as given (Filter refuses an
//                       unknown one: FilterOptions)
//   hami_exact          all | none | rows such as W1,W2    (ParseHamiExact)
//   dra_policy          binpack | spread | fgd             (dra::kPolicyNames;
//                       upstream is refused: kube-scheduler's own)
//   dra_device_class    a DeviceClass name; each adds one (dra_device_classes)
//   api_qps             a number, 0 or more
//   seed                a whole number, 0 or more
//   zone_offset_seconds a whole number of seconds (may be negative)
//   lock_timeout_seconds, lock_grace_seconds   whole seconds, 0 or more (lock)
//   lock_retry_timeout, filter_hold, audit_grace, retry_window
//                                                  durations, 0 or more
//   register_period, bind_budget, preemption_hold, preemption_timeout
//                                                  durations, above 0
//
// A duration is "500ms", "30s", "10m", "1h" or a bare number of
// milliseconds (ParseDurationMs); each duration option X may also be given
// as X_ms, a whole number of milliseconds (register_period_ms).
//
// Errors are kInvalidConfig with field() the name as given and the message
// "<name as given>: <why>", e.g. "--lock-retry: 'sometimes' is not one of
// release, once, fixed, backoff".
//
// Thread-safety: functions without shared state.
#ifndef DEVSHARE_ENGINE_ENGINE_OPTIONS_HPP_
#define DEVSHARE_ENGINE_ENGINE_OPTIONS_HPP_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "devshare/engine/engine.hpp"
#include "devshare/status.hpp"

namespace devshare::engine {

struct EngineOption {
  std::string name;
  std::string value;
};

// Sets the option `name` of `options` from `value`; `options` is unchanged
// on an error. Errors (kInvalidConfig, see above): an unknown option, or a
// value the option does not take.
Status SetEngineOption(EngineOptions& options, std::string_view name, std::string_view value);

// `base` with `options` set in order (a later value of an option replaces
// an earlier one; dra_device_class adds). The parts that are not text
// (config, filter.workload) come with `base`. Errors: the first option's
// SetEngineOption error.
Result<EngineOptions> BuildEngineOptions(std::span<const EngineOption> options,
                                         EngineOptions base = {});

// A duration in milliseconds: digits (at most 12) followed by ms, s, m, h
// or nothing (milliseconds). Errors: kInvalidArgument "expected a duration
// such as 500ms, 30s, 10m or 1h, got '<text>'".
Result<std::int64_t> ParseDurationMs(std::string_view text);

}  // namespace devshare::engine

#endif  // DEVSHARE_ENGINE_ENGINE_OPTIONS_HPP_
