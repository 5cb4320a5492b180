// Private: the parts of a scenario file about priority and disruption
// (devshare/sim/experiment.hpp): PriorityClasses, a pod class's
// priority_class and labels, and PodDisruptionBudgets. Errors name the key
// and the line, as the rest of the schema's do.
//
// Thread-safety: functions without shared state.
#ifndef DEVSHARE_SIM_SRC_EXPERIMENT_PRIORITY_HPP_
#define DEVSHARE_SIM_SRC_EXPERIMENT_PRIORITY_HPP_

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "devshare/objects.hpp"
#include "devshare/sim/experiment.hpp"
#include "devshare/status.hpp"

namespace devshare::sim::internal {

// A PriorityClass (scheduling.k8s.io/v1).
struct PriorityClassSpec {
  std::int64_t value = 0;
  std::string preemption_policy;  // "" (PreemptLowerPriority) or "Never"
  bool global_default = false;
};
using PriorityClasses = std::map<std::string, PriorityClassSpec, std::less<>>;

// `priority_classes:`, a mapping of name to {value (required, at most
// 1000000000 as for classes users create), preemption_policy:
// PreemptLowerPriority|Never, global_default}. Errors: a value missing or
// out of range, an unknown policy, two global defaults.
Status ReadPriorityClasses(const YAML::Node& node, const std::string& path, PriorityClasses& out);

// A mapping of label to value (null: left as it is).
Status ReadLabels(const YAML::Node& node, const std::string& path, StringMap& out);

// A `budgets:` item: {namespace (Default "sim"), name (Default
// budget<index>), selector: {label: value} or pod_class: <a pod class>
// (exactly one), min_available or max_unavailable (exactly one; a whole
// number or "N%")}. A pod class is selected by kPodClassLabel.
Status ReadBudget(const YAML::Node& node, const std::string& path, std::size_t index,
                  DisruptionBudget& b);

// What the API server's Priority admission does to the file's pods, and
// the checks that need the whole file: each pod class's priority and
// preemption policy from its priority_class, or from the global default
// class when it names none (else 0); each pod labelled with its class
// (kPodClassLabel). Errors: a priority_class that does not exist (at
// pods[i].priority_class), a budget's pod_class that names no pod class,
// a budget named twice. `root` is the variant's document.
Status ApplyPriorities(const YAML::Node& root, const PriorityClasses& classes, ScenarioTemplate& t);

}  // namespace devshare::sim::internal

#endif  // DEVSHARE_SIM_SRC_EXPERIMENT_PRIORITY_HPP_
