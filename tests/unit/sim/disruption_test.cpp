// PodDisruptionBudgets as the disruption controller counts them (disruption.cpp).
#include "src/disruption.hpp"

#include <doctest/doctest.h>

using namespace devshare;
using namespace devshare::sim;
using namespace devshare::sim::internal;

namespace {

DisruptionBudget Budget(std::string min_available, std::string max_unavailable) {
  DisruptionBudget b;
  b.name = "b";
  b.selector.match_labels.Set("app", "train");
  b.min_available = std::move(min_available);
  b.max_unavailable = std::move(max_unavailable);
  return b;
}

}  // namespace

TEST_CASE("sim disruption: whole numbers and percentages") {
  CHECK(ParseIntOrPercent("3")->value == 3);
  CHECK_FALSE(ParseIntOrPercent("3")->percent);
  CHECK(ParseIntOrPercent("50%")->percent);
  CHECK(ParseIntOrPercent("50%")->value == 50);
  CHECK(ParseIntOrPercent("100%"));
  for (std::string_view bad : {"", "%", "-1", "1.5", "101%", "x", "3 "})
    CHECK_FALSE(ParseIntOrPercent(bad));
}

TEST_CASE("sim disruption: allowed disruptions as the disruption controller counts them") {
  // minAvailable: healthy less the minimum (a percentage of the expected, rounded up).
  CHECK(DisruptionsAllowed(Budget("2", ""), 4, 4) == 2);
  CHECK(DisruptionsAllowed(Budget("2", ""), 4, 1) == 0);    // never below 0
  CHECK(DisruptionsAllowed(Budget("50%", ""), 5, 5) == 2);  // 3 desired
  // maxUnavailable: the expected less it (rounded up) are desired.
  CHECK(DisruptionsAllowed(Budget("", "1"), 4, 4) == 1);
  CHECK(DisruptionsAllowed(Budget("", "1"), 4, 3) == 0);    // one is down already
  CHECK(DisruptionsAllowed(Budget("", "25%"), 5, 5) == 2);  // 2 unavailable allowed
  CHECK(DisruptionsAllowed(Budget("", "100%"), 3, 3) == 3);
}

TEST_CASE("sim disruption: a budget covers the matching pods of its namespace") {
  Pod pod;
  pod.pod_namespace = "sim";
  pod.labels.Set("app", "train");
  CHECK(Covers(Budget("1", ""), pod));
  pod.pod_namespace = "other";
  CHECK_FALSE(Covers(Budget("1", ""), pod));
  pod.pod_namespace = "sim";
  DisruptionBudget empty = Budget("1", "");
  empty.selector = LabelSelector{};
  CHECK_FALSE(Covers(empty, pod));  // an empty selector selects no pod here
}

TEST_CASE("sim disruption: a budget needs a name and exactly one valid bound") {
  CHECK(CheckBudget(Budget("1", "")).ok());
  CHECK(CheckBudget(Budget("", "1")).ok());
  CHECK(CheckBudget(Budget("", "")).message() ==
        "budget sim/b: set exactly one of min_available and max_unavailable");
  CHECK(CheckBudget(Budget("1", "1")).message() ==
        "budget sim/b: set exactly one of min_available and max_unavailable");
  CHECK(CheckBudget(Budget("x", "")).message() ==
        "budget sim/b: 'x' is neither a whole number nor a percentage (0%..100%)");
  DisruptionBudget unnamed = Budget("1", "");
  unnamed.name.clear();
  CHECK(CheckBudget(unnamed).message() == "a budget has no name");
}
