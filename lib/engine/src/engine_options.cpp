// EngineOptions from named values (devshare/engine/engine_options.hpp).
#include "devshare/engine/engine_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <optional>

#include "devshare/dra_place.hpp"
#include "devshare/hami_exact.hpp"

namespace devshare::engine {

namespace {

// Why a value is refused; nullopt: it was taken.
using Why = std::optional<std::string>;

// The one place an option's value is looked up among names (the enums'
// tables: kRegistrationNames, ...).
template <typename E, std::size_t N>
Why ChooseName(std::string_view value, const EnumNames<E, N>& names, E& out) {
  if (std::optional<E> found = names.Find(value)) {
    out = *found;
    return std::nullopt;
  }
  return fmt::format("'{}' is not one of {}", value, names.Names());
}

// A whole number within [min, max].
Why ReadWhole(std::string_view value, std::int64_t min, std::int64_t max, std::int64_t& out) {
  std::int64_t n = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (error != std::errc() || end != value.data() + value.size())
    return fmt::format("expected a whole number, got '{}'", value);
  if (n < min) return fmt::format("must be {}, got {}", min == 0 ? "0 or more" : "above 0", n);
  if (n > max) return fmt::format("must be at most {}, got {}", max, n);
  out = n;
  return std::nullopt;
}

Why ReadBoolText(std::string_view value, bool& out) {
  if (value != "true" && value != "false")
    return fmt::format("expected true or false, got '{}'", value);
  out = value == "true";
  return std::nullopt;
}

// A duration (`whole_ms`: a whole number of milliseconds only), at least `min` ms.
Why ReadDuration(std::string_view value, bool whole_ms, std::int64_t min, std::int64_t& out) {
  std::int64_t ms = 0;
  if (whole_ms) {
    if (Why why = ReadWhole(value, std::numeric_limits<std::int64_t>::min(),
                            std::numeric_limits<std::int64_t>::max(), ms))
      return why;
  } else {
    Result<std::int64_t> parsed = ParseDurationMs(value);
    if (!parsed.ok()) return std::string(parsed.status().message());
    ms = *parsed;
  }
  if (ms < min) return fmt::format("must be {}, got {}", min == 0 ? "0 or more" : "above 0", value);
  out = ms;
  return std::nullopt;
}

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Sets one option from its value, writing its field only when it takes
// the value; the caller names it in the error.
using Setter = Why (*)(EngineOptions& o, std::string_view value, bool whole_ms);

struct OptionSpec {
  std::string_view name;
  Setter set;
  bool duration = false;  // also given as <name>_ms
};

// clang-format off
constexpr OptionSpec kOptions[] = {
    {"registration", [](EngineOptions& o, std::string_view v, bool) {
       return ChooseName(v, kRegistrationNames, o.registration); }},
    {"leadership", [](EngineOptions& o, std::string_view v, bool) {
       return ChooseName(v, kLeadershipNames, o.leadership); }},
    {"hostname", [](EngineOptions& o, std::string_view v, bool) -> Why {
       o.hostname = std::string(v);
       return std::nullopt; }},
    {"bind", [](EngineOptions& o, std::string_view v, bool) {
       return ChooseName(v, kBindModeNames, o.bind_mode); }},
    {"bind_mode", [](EngineOptions& o, std::string_view v, bool) {
       return ChooseName(v, kBindModeNames, o.bind_mode); }},
    {"lock_retry", [](EngineOptions& o, std::string_view v, bool) {
       return ChooseName(v, kLockRetryNames, o.lock_retry); }},
    {"pod_writes", [](EngineOptions& o, std::string_view v, bool) {
       return ChooseName(v, kPodWritesNames, o.pod_writes); }},
    {"avoid_locked_nodes", [](EngineOptions& o, std::string_view v, bool) {
       return ReadBoolText(v, o.avoid_locked_nodes); }},
    {"preemption", [](EngineOptions& o, std::string_view v, bool) {
       return ReadBoolText(v, o.preemption); }},
    {"node_policy", [](EngineOptions& o, std::string_view v, bool) -> Why {
       o.filter.node_policy = std::string(v);
       return std::nullopt; }},
    {"gpu_policy", [](EngineOptions& o, std::string_view v, bool) -> Why {
       o.filter.gpu_policy = std::string(v);
       return std::nullopt; }},
    {"hami_exact", [](EngineOptions& o, std::string_view v, bool) -> Why {
       Result<HamiExact> parsed = ParseHamiExact(v);
       if (!parsed.ok()) return std::string(parsed.status().message());
       o.filter.hami_exact = *parsed;
       return std::nullopt; }},
    {"dra_policy", [](EngineOptions& o, std::string_view v, bool) -> Why {
       const std::optional<dra::Policy> policy = dra::kPolicyNames.Find(v);
       if (!policy || *policy == dra::Policy::kUpstream)
         return fmt::format("'{}' is not one of binpack, spread, fgd (upstream is "
                            "kube-scheduler's own)", v);
       o.dra_policy = *policy;
       return std::nullopt; }},
    {"dra_device_class", [](EngineOptions& o, std::string_view v, bool) -> Why {
       if (v.empty()) return std::string("expected a DeviceClass name");
       o.dra_device_classes.emplace(v);
       return std::nullopt; }},
    {"api_qps", [](EngineOptions& o, std::string_view v, bool) -> Why {
       double qps = 0;
       const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), qps);
       if (error != std::errc() || end != v.data() + v.size() || !(qps >= 0) ||
           qps == std::numeric_limits<double>::infinity())
         return fmt::format("expected a number, 0 or more, got '{}'", v);
       o.api_qps = qps;
       return std::nullopt; }},
    {"seed", [](EngineOptions& o, std::string_view v, bool) -> Why {
       // The whole range of the seed: digits only.
       std::uint64_t seed = 0;
       const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), seed);
       if (error != std::errc() || end != v.data() + v.size())
         return fmt::format("expected a whole number, 0 or more, got '{}'", v);
       o.seed = seed;
       return std::nullopt; }},
    {"zone_offset_seconds", [](EngineOptions& o, std::string_view v, bool) -> Why {
       std::int64_t offset = 0;
       if (Why why = ReadWhole(v, -86400, 86400, offset)) return why;
       o.zone_offset_seconds = static_cast<std::int32_t>(offset);
       return std::nullopt; }},
    {"lock_timeout_seconds", [](EngineOptions& o, std::string_view v, bool) {
       return ReadWhole(v, 0, kMax, o.lock.timeout_seconds); }},
    {"lock_grace_seconds", [](EngineOptions& o, std::string_view v, bool) {
       return ReadWhole(v, 0, kMax, o.lock.grace_seconds); }},
    {"lock_retry_timeout", [](EngineOptions& o, std::string_view v, bool ms) {
       return ReadDuration(v, ms, 0, o.lock_retry_timeout_ms); }, true},
    {"filter_hold", [](EngineOptions& o, std::string_view v, bool ms) {
       return ReadDuration(v, ms, 0, o.filter_hold_ms); }, true},
    {"audit_grace", [](EngineOptions& o, std::string_view v, bool ms) {
       return ReadDuration(v, ms, 0, o.audit_grace_ms); }, true},
    {"register_period", [](EngineOptions& o, std::string_view v, bool ms) {
       return ReadDuration(v, ms, 1, o.register_period_ms); }, true},
    {"bind_budget", [](EngineOptions& o, std::string_view v, bool ms) {
       return ReadDuration(v, ms, 1, o.bind_budget_ms); }, true},
    {"preemption_hold", [](EngineOptions& o, std::string_view v, bool ms) {
       return ReadDuration(v, ms, 1, o.preemption_hold_ms); }, true},
    {"preemption_timeout", [](EngineOptions& o, std::string_view v, bool ms) {
       return ReadDuration(v, ms, 1, o.preemption_timeout_ms); }, true},
    {"retry_window", [](EngineOptions& o, std::string_view v, bool ms) {
       return ReadDuration(v, ms, 0, o.retry_window_ms); }, true},
};
// clang-format on

// The name as the table spells it: without a leading "--", '_' for '-'.
std::string Canonical(std::string_view name) {
  if (name.starts_with("--")) name.remove_prefix(2);
  std::string canonical(name);
  for (char& c : canonical) {
    if (c == '-') c = '_';
  }
  return canonical;
}

}  // namespace

Status SetEngineOption(EngineOptions& options, std::string_view name, std::string_view value) {
  const std::string canonical = Canonical(name);
  for (const OptionSpec& spec : kOptions) {
    const bool whole_ms = spec.duration && canonical.size() == spec.name.size() + 3 &&
                          canonical.starts_with(spec.name) && canonical.ends_with("_ms");
    if (canonical != spec.name && !whole_ms) continue;
    // A setter writes its field only when it takes the value.
    if (Why why = spec.set(options, value, whole_ms))
      return Status::InvalidConfig(fmt::format("{}: {}", name, *why), std::string(name));
    return Status();
  }
  return Status::InvalidConfig(fmt::format("{}: no such engine option", name), std::string(name));
}

Result<EngineOptions> BuildEngineOptions(std::span<const EngineOption> options,
                                         EngineOptions base) {
  for (const EngineOption& option : options) {
    if (Status s = SetEngineOption(base, option.name, option.value); !s.ok()) return s;
  }
  return base;
}

Result<std::int64_t> ParseDurationMs(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view unit = text.substr(digits);
  std::int64_t scale = 0;
  if (unit.empty() || unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60000;
  } else if (unit == "h") {
    scale = 3600000;
  }
  std::int64_t n = 0;
  if (digits == 0 || digits > 12 || scale == 0 ||
      std::from_chars(text.begin(), text.begin() + digits, n).ec != std::errc()) {
    return Status::InvalidArgument(
        fmt::format("expected a duration such as 500ms, 30s, 10m or 1h, got '{}'", text));
  }
  return n * scale;
}

}  // namespace devshare::engine
