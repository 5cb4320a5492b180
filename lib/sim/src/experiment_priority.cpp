#include "experiment_priority.hpp"

#include <fmt/format.h>

#include <utility>

#include "disruption.hpp"
#include "yaml_fields.hpp"

namespace devshare::sim::internal {

using namespace devshare::internal::yaml;  // NOLINT: the field readers are this file's vocabulary

namespace {

constexpr std::int64_t kHighestUserPriority = 1000000000;  // HighestUserDefinablePriority

Status ReadPriorityClass(const YAML::Node& node, const std::string& path, PriorityClassSpec& c) {
  std::string policy;
  Status s = ReadMap(node, path,
                     {{"value",
                       [&c](const YAML::Node& n, const std::string& p) {
                         return ReadInteger(n, p, std::numeric_limits<std::int32_t>::min(),
                                            kHighestUserPriority, c.value);
                       }},
                      {"preemption_policy", String(policy)},
                      {"global_default", Bool(c.global_default)}});
  if (!s.ok()) return s;
  if (!node["value"] || node["value"].IsNull())
    return FieldError(path + ".value", node, "required");
  if (policy == "Never") {
    c.preemption_policy = "Never";
  } else if (!policy.empty() && policy != "PreemptLowerPriority") {
    return FieldError(path + ".preemption_policy", node["preemption_policy"],
                      fmt::format("'{}' is not one of PreemptLowerPriority, Never", policy));
  }
  return Status();
}

}  // namespace

Status ReadPriorityClasses(const YAML::Node& node, const std::string& path, PriorityClasses& out) {
  if (node.IsNull()) return Status();
  if (!node.IsMap()) return FieldError(path, node, "expected a mapping of class name to class");
  out.clear();
  std::string default_name;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar() || entry.first.Scalar().empty())
      return FieldError(path, entry.first, "expected a class name");
    const std::string name = entry.first.Scalar();
    const std::string item = fmt::format("{}.{}", path, name);
    PriorityClassSpec c;
    if (Status s = ReadPriorityClass(entry.second, item, c); !s.ok()) return s;
    if (c.global_default && !default_name.empty()) {
      return FieldError(item + ".global_default", entry.second["global_default"],
                        fmt::format("{} is the global default already", default_name));
    }
    if (c.global_default) default_name = name;
    out[name] = std::move(c);
  }
  return Status();
}

Status ReadLabels(const YAML::Node& node, const std::string& path, StringMap& out) {
  if (node.IsNull()) return Status();
  if (!node.IsMap()) return FieldError(path, node, "expected a mapping of label to value");
  out = StringMap{};
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) return FieldError(path, entry.first, "expected a label");
    const std::string key = entry.first.Scalar();
    if (!entry.second.IsScalar())
      return FieldError(fmt::format("{}.{}", path, key), entry.second, "expected a value");
    out.Set(key, entry.second.Scalar());
  }
  return Status();
}

Status ReadBudget(const YAML::Node& node, const std::string& path, std::size_t index,
                  DisruptionBudget& b) {
  std::string pod_class;
  Status s = ReadMap(node, path,
                     {{"namespace", String(b.budget_namespace)},
                      {"name", String(b.name)},
                      {"selector",
                       [&b](const YAML::Node& n, const std::string& p) {
                         return ReadLabels(n, p, b.selector.match_labels);
                       }},
                      {"pod_class", String(pod_class)},
                      {"min_available", String(b.min_available)},
                      {"max_unavailable", String(b.max_unavailable)}});
  if (!s.ok()) return s;
  if (b.name.empty()) b.name = fmt::format("budget{}", index);
  if (b.budget_namespace.empty())
    return FieldError(path + ".namespace", node["namespace"], "must not be empty");
  if (pod_class.empty() == b.selector.match_labels.empty())
    return FieldError(path, node, "give exactly one of selector and pod_class");
  if (!pod_class.empty()) b.selector.match_labels.Set(std::string(kPodClassLabel), pod_class);
  if (b.min_available.empty() == b.max_unavailable.empty())
    return FieldError(path, node, "give exactly one of min_available and max_unavailable");
  const char* key = b.min_available.empty() ? "max_unavailable" : "min_available";
  const std::string& value = b.min_available.empty() ? b.max_unavailable : b.min_available;
  if (!ParseIntOrPercent(value)) {
    return FieldError(
        fmt::format("{}.{}", path, key), node[key],
        fmt::format("'{}' is neither a whole number nor a percentage (0%..100%)", value));
  }
  return Status();
}

Status ApplyPriorities(const YAML::Node& root, const PriorityClasses& classes,
                       ScenarioTemplate& t) {
  const PriorityClassSpec* global_default = nullptr;
  for (const auto& [name, c] : classes) {
    if (c.global_default) global_default = &c;
  }
  const YAML::Node pods = root["pods"];
  for (std::size_t i = 0; i < t.pod_classes.size(); ++i) {
    PodSpec& shape = t.pod_classes[i].shape;
    shape.labels.Set(std::string(kPodClassLabel), shape.name);
    const PriorityClassSpec* c = global_default;
    if (!shape.priority_class.empty()) {
      auto it = classes.find(shape.priority_class);
      if (it == classes.end()) {
        const YAML::Node item = pods[i]["priority_class"];
        return FieldError(fmt::format("pods[{}].priority_class", i), item,
                          fmt::format("no PriorityClass named '{}' (the Priority admission "
                                      "refuses the pod)",
                                      shape.priority_class));
      }
      c = &it->second;
    }
    shape.priority = c == nullptr ? 0 : c->value;
    shape.preemption_policy = c == nullptr ? "" : c->preemption_policy;
  }
  const YAML::Node budgets = root["budgets"];
  std::vector<DisruptionBudget>& list = t.settings.budgets;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("budgets[{}]", i);
    for (std::size_t j = 0; j < i; ++j) {
      if (list[i].budget_namespace == list[j].budget_namespace && list[i].name == list[j].name) {
        return FieldError(
            path + ".name", budgets[i],
            fmt::format("budget {}/{} is named twice", list[i].budget_namespace, list[i].name));
      }
    }
    const std::string* selected =
        budgets[i]["pod_class"] ? list[i].selector.match_labels.Find(std::string(kPodClassLabel))
                                : nullptr;
    if (selected == nullptr) continue;
    bool found = false;
    for (const PodClass& c : t.pod_classes) found = found || c.shape.name == *selected;
    if (!found) {
      return FieldError(path + ".pod_class", budgets[i]["pod_class"],
                        fmt::format("no pod class named '{}'", *selected));
    }
  }
  return Status();
}

}  // namespace devshare::sim::internal
