#include "disruption.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace devshare::sim::internal {

std::optional<IntOrPercent> ParseIntOrPercent(std::string_view text) {
  IntOrPercent out;
  if (!text.empty() && text.back() == '%') {
    out.percent = true;
    text.remove_suffix(1);
  }
  if (text.empty()) return std::nullopt;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, out.value);
  if (ec != std::errc() || ptr != end || out.value < 0) return std::nullopt;
  if (out.percent && out.value > 100) return std::nullopt;
  return out;
}

Status CheckBudget(const DisruptionBudget& budget) {
  if (budget.name.empty()) return Status::InvalidArgument("a budget has no name");
  const std::string name = fmt::format("budget {}/{}", budget.budget_namespace, budget.name);
  if (budget.min_available.empty() == budget.max_unavailable.empty()) {
    return Status::InvalidArgument(
        fmt::format("{}: set exactly one of min_available and max_unavailable", name));
  }
  const std::string& value =
      budget.min_available.empty() ? budget.max_unavailable : budget.min_available;
  if (!ParseIntOrPercent(value)) {
    return Status::InvalidArgument(
        fmt::format("{}: '{}' is neither a whole number nor a percentage (0%..100%)", name, value));
  }
  return Status();
}

bool Covers(const DisruptionBudget& budget, const Pod& pod) {
  return pod.pod_namespace == budget.budget_namespace && budget.selector != LabelSelector{} &&
         LabelSelectorMatches(budget.selector, pod.labels);
}

namespace {

// GetScaledValueFromIntOrPercent, rounding up.
std::int64_t Scaled(const IntOrPercent& v, std::int64_t total) {
  return v.percent ? (v.value * total + 99) / 100 : v.value;
}

}  // namespace

std::int64_t DisruptionsAllowed(const DisruptionBudget& budget, std::int64_t expected,
                                std::int64_t healthy) {
  std::int64_t desired = 0;
  if (!budget.min_available.empty()) {
    desired = Scaled(*ParseIntOrPercent(budget.min_available), expected);
  } else {
    desired = std::max<std::int64_t>(
        0, expected - Scaled(*ParseIntOrPercent(budget.max_unavailable), expected));
  }
  return std::max<std::int64_t>(0, healthy - desired);
}

PodDisruptionBudget BudgetObject(const DisruptionBudget& budget, std::int64_t allowed) {
  PodDisruptionBudget object;
  object.budget_namespace = budget.budget_namespace;
  object.name = budget.name;
  object.selector = budget.selector;
  object.disruptions_allowed = allowed;
  return object;
}

}  // namespace devshare::sim::internal
