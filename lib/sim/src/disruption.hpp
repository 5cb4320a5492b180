// Private: PodDisruptionBudgets as the disruption controller and the
// Eviction API read them — which pods a budget covers, and how many of
// them may be disrupted (devshare/sim/simulator.hpp, DisruptionBudget).
//
// Thread-safety: pure functions.
#ifndef DEVSHARE_SIM_SRC_DISRUPTION_HPP_
#define DEVSHARE_SIM_SRC_DISRUPTION_HPP_

#include <cstdint>
#include <optional>
#include <string_view>

#include "devshare/objects.hpp"
#include "devshare/sim/simulator.hpp"
#include "devshare/status.hpp"

namespace devshare::sim::internal {

// An IntOrString of a budget: a whole number, or a percentage ("50%").
struct IntOrPercent {
  std::int64_t value = 0;
  bool percent = false;
};
// "3" or "50%" (0..100); nullopt for anything else.
std::optional<IntOrPercent> ParseIntOrPercent(std::string_view text);

// Errors (kInvalidArgument, naming the budget): no name, not exactly one
// of min_available and max_unavailable, or one that ParseIntOrPercent
// refuses.
Status CheckBudget(const DisruptionBudget& budget);

// Whether `budget` covers `pod`: the same namespace and a non-empty
// selector matching its labels.
bool Covers(const DisruptionBudget& budget, const Pod& pod);

// status.disruptionsAllowed for `expected` pods of which `healthy` are
// healthy: max(0, healthy - desired), desired as DisruptionBudget says.
// REQUIRES: CheckBudget(budget).ok().
std::int64_t DisruptionsAllowed(const DisruptionBudget& budget, std::int64_t expected,
                                std::int64_t healthy);

// The budget as an engine reads it: its namespace, name, selector and
// `allowed` disruptions.
PodDisruptionBudget BudgetObject(const DisruptionBudget& budget, std::int64_t allowed);

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_DISRUPTION_HPP_
