// Scenario files: reading and checking them into an Experiment, and the
// scenarios shipped with devshare (devshare/sim/experiment.hpp).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <limits>

#include "builtin_scenarios.hpp"
#include "devshare/engine/engine_options.hpp"
#include "devshare/sim/experiment.hpp"
#include "experiment_priority.hpp"
#include "yaml_fields.hpp"

namespace devshare::sim {

namespace {

using namespace devshare::internal::yaml;  // NOLINT: the field readers are this file's vocabulary

// "500ms", "30s", "10m", "1h", or a number of milliseconds.
Status ReadDuration(const YAML::Node& node, const std::string& path, std::int64_t& out) {
  if (node.IsNull()) return Status();
  Result<std::int64_t> ms = engine::ParseDurationMs(node.IsScalar() ? node.Scalar() : "");
  if (!ms.ok()) return FieldError(path, node, ms.status().message());
  out = *ms;
  return Status();
}

FieldReader Duration(std::int64_t& out) {
  return [&out](const YAML::Node& n, const std::string& p) { return ReadDuration(n, p, out); };
}

// A non-negative number.
FieldReader Number(double& out) {
  return [&out](const YAML::Node& n, const std::string& p) {
    std::optional<double> value;
    Status s = ReadOptionalDouble(n, p, value);
    if (s.ok() && value) out = *value;
    return s;
  };
}

// An integer of type T, at least `min`.
template <typename T>
FieldReader AtLeast(std::int64_t min, T& out) {
  return [min, &out](const YAML::Node& n, const std::string& p) {
    std::int64_t value = out;
    Status s = ReadInteger(n, p, min, std::numeric_limits<T>::max(), value);
    if (s.ok()) out = static_cast<T>(value);
    return s;
  };
}
template <typename T>
FieldReader Positive(T& out) {
  return AtLeast(1, out);
}
template <typename T>
FieldReader NonNegative(T& out) {
  return AtLeast(0, out);
}

// One of the names of `choices`.
template <typename T>
FieldReader OneOf(T& out, std::vector<std::pair<std::string_view, T>> choices) {
  return [&out, choices = std::move(choices)](const YAML::Node& n, const std::string& p) {
    if (n.IsNull()) return Status();
    std::string name;
    Status s = ReadString(n, p, name);
    if (!s.ok()) return s;
    std::string names;
    for (const auto& [choice, value] : choices) {
      if (choice == name) {
        out = value;
        return Status();
      }
      names += names.empty() ? std::string(choice) : ", " + std::string(choice);
    }
    return FieldError(p, n, fmt::format("'{}' is not one of {}", name, names));
  };
}

// One of the names of an enum's table (devshare/enum_names.hpp).
template <typename T, std::size_t N>
FieldReader OneOfNames(T& out, const EnumNames<T, N>& names) {
  std::vector<std::pair<std::string_view, T>> choices;
  for (const EnumName<T>& n : names) choices.emplace_back(n.name, n.value);
  return OneOf(out, std::move(choices));
}

// A policy name: how devshare names HAMi's default and the policies.
struct Policy {
  std::string_view name, node, gpu;
};
constexpr Policy kPolicies[] = {
    {"hami-default", "binpack", "spread"},
    {"binpack", "binpack", "binpack"},
    {"spread", "spread", "spread"},
    {"fgd", "fgd", "fgd"},
};

FieldReader PolicyField(FilterOptions& filter) {
  return [&filter](const YAML::Node& n, const std::string& p) {
    std::vector<std::pair<std::string_view, const Policy*>> choices;
    for (const Policy& policy : kPolicies) choices.emplace_back(policy.name, &policy);
    const Policy* chosen = nullptr;
    Status s = OneOf(chosen, choices)(n, p);
    if (s.ok() && chosen != nullptr) {
      filter.node_policy = std::string(chosen->node);
      filter.gpu_policy = std::string(chosen->gpu);
    }
    return s;
  };
}

// The engine option `option` (devshare/engine/engine_options.hpp), its
// errors at the key's line.
FieldReader EngineField(engine::EngineOptions& e, std::string_view option) {
  return [&e, option](const YAML::Node& n, const std::string& p) {
    if (n.IsNull()) return Status();
    if (!n.IsScalar()) return FieldError(p, n, "expected a single value");
    Status s = engine::SetEngineOption(e, option, n.Scalar());
    if (s.ok()) return s;
    return FieldError(p, n, s.message().substr(option.size() + 2));  // "<option>: <why>"
  };
}

Status ReadEngine(const YAML::Node& node, const std::string& path, engine::EngineOptions& e) {
  std::map<std::string, FieldReader, std::less<>> fields{{"policy", PolicyField(e.filter)}};
  for (std::string_view option :
       {"registration", "hami_exact", "bind", "lock_retry", "lock_retry_timeout",
        "avoid_locked_nodes", "pod_writes", "register_period", "preemption", "preemption_hold",
        "preemption_timeout", "retry_window"})
    fields.emplace(option, EngineField(e, option));
  return ReadMap(node, path, fields);
}

Status ReadApi(const YAML::Node& node, const std::string& path, ApiModel& a) {
  Status s = ReadMap(node, path,
                     {{"qps", Number(a.qps)},
                      {"burst", Positive(a.burst)},
                      {"latency", Duration(a.latency_ms)},
                      {"jitter", Duration(a.jitter_ms)},
                      {"max_inflight", Positive(a.max_inflight)},
                      {"retry_after", Duration(a.retry_after_ms)},
                      {"allocate", Duration(a.allocate_ms)}});
  if (s.ok() && a.qps <= 0) return FieldError(path + ".qps", node["qps"], "must be above 0");
  return s;
}

Status ReadPlugins(const YAML::Node& node, const std::string& path, PluginModel& m) {
  Status s = ReadMap(node, path,
                     {{"mode", OneOf(m.mode, {{"change-only", PluginModel::Mode::kChangeOnly},
                                              {"legacy", PluginModel::Mode::kLegacy}})},
                      {"heartbeat", Duration(m.heartbeat_ms)}});
  if (s.ok() && m.heartbeat_ms <= 0)
    return FieldError(path + ".heartbeat", node["heartbeat"], "must be above 0");
  return s;
}

Status ReadScheduler(const YAML::Node& node, const std::string& path, SchedulerModel& m) {
  return ReadMap(node, path,
                 {{"replicas", Positive(m.replicas)},
                  {"retry_unschedulable", Bool(m.retry_unschedulable)},
                  {"extender_timeout", Duration(m.extender_timeout_ms)},
                  {"initial_backoff", Duration(m.initial_backoff_ms)},
                  {"max_backoff", Duration(m.max_backoff_ms)}});
}

// A list (null: left as it is) whose items `read_item(item, path, index, T&)`
// fills, each starting from `initial`; it replaces `out`.
template <typename T, typename ItemReader>
Status ReadList(const YAML::Node& node, const std::string& path, const T& initial,
                ItemReader read_item, std::vector<T>& out) {
  if (node.IsNull()) return Status();
  if (!node.IsSequence()) return FieldError(path, node, "expected a list");
  out.clear();
  for (std::size_t i = 0; i < node.size(); ++i) {
    T item = initial;
    Status s = read_item(node[i], fmt::format("{}[{}]", path, i), i, item);
    if (!s.ok()) return s;
    out.push_back(std::move(item));
  }
  return Status();
}

Status ReadFault(const YAML::Node& node, const std::string& path, std::size_t, Fault& f) {
  Status s = ReadMap(node, path,
                     {{"kind", OneOfNames(f.kind, kFaultKindNames)},
                      {"node", String(f.node)},
                      {"at", Duration(f.at_ms)},
                      {"for", Duration(f.duration_ms)}});
  if (!s.ok()) return s;
  if (!node["kind"]) return FieldError(path + ".kind", node, "required");
  const bool cluster_wide = f.kind == Fault::Kind::kLeaderCrash ||
                            f.kind == Fault::Kind::kMissedEvents ||
                            f.kind == Fault::Kind::kPodDeletedInBind;
  if (!cluster_wide && f.node.empty()) {
    return FieldError(path + ".node", node, "required for this kind");
  }
  return Status();
}

Status ReadNodeGroup(const YAML::Node& node, const std::string& path, std::size_t, NodeGroup& g) {
  return ReadMap(node, path,
                 {{"count", Positive(g.count)},
                  {"prefix", String(g.prefix)},
                  {"gpus", NonNegative(g.shape.gpus)},
                  {"model", String(g.shape.model)},
                  {"gpu_memory", Positive(g.shape.gpu_memory_mib)},
                  {"cpu", NonNegative(g.shape.cpu_milli)},
                  {"memory", NonNegative(g.shape.memory_mib)}});
}

Status ReadPodClass(const YAML::Node& node, const std::string& path, std::size_t index,
                    PodClass& c) {
  Status s = ReadMap(node, path,
                     {{"name", String(c.shape.name)},
                      {"namespace", String(c.shape.pod_namespace)},
                      {"count", NonNegative(c.count)},
                      {"every", Duration(c.every_ms)},
                      {"start", Duration(c.start_ms)},
                      {"arrival", OneOf(c.arrival, {{"steady", PodClass::Arrival::kSteady},
                                                    {"poisson", PodClass::Arrival::kPoisson}})},
                      {"gpus", NonNegative(c.shape.gpus)},
                      {"gpu_milli", Positive(c.shape.gpu_milli)},
                      {"gpu_spec", String(c.shape.gpu_spec)},
                      {"cpu", NonNegative(c.shape.cpu_milli)},
                      {"memory", NonNegative(c.shape.memory_mib)},
                      {"duration", Duration(c.shape.duration_ms)},
                      {"priority_class", String(c.shape.priority_class)},
                      {"termination_grace_seconds", NonNegative(c.shape.termination_grace_seconds)},
                      {"labels", [&c](const YAML::Node& n, const std::string& p) {
                         return internal::ReadLabels(n, p, c.shape.labels);
                       }}});
  if (!s.ok()) return s;
  if (c.shape.name.empty()) c.shape.name = fmt::format("class{}", index);
  if (c.shape.pod_namespace.empty())
    return FieldError(path + ".namespace", node["namespace"], "must not be empty");
  if (c.shape.gpus > 8) return FieldError(path + ".gpus", node["gpus"], "at most 8 devices");
  if (c.shape.gpu_milli > 1000)
    return FieldError(path + ".gpu_milli", node["gpu_milli"], "at most 1000");
  if (c.every_ms <= 0) return FieldError(path + ".every", node["every"], "must be above 0");
  return Status();
}

// A ResourceQuota: its namespace (required), name (Default: quota<index>)
// and `hard` limits, each a string or a number (what a device limit means
// is the snapshot's to judge, as for a quota read from the API server).
Status ReadQuota(const YAML::Node& node, const std::string& path, std::size_t index,
                 ResourceQuota& q) {
  Status s = ReadMap(node, path,
                     {{"namespace", String(q.quota_namespace)},
                      {"name", String(q.name)},
                      {"hard", [&q](const YAML::Node& n, const std::string& p) {
                         if (n.IsNull()) return Status();
                         if (!n.IsMap())
                           return FieldError(p, n, "expected a mapping of resource to quantity");
                         for (const auto& entry : n) {
                           if (!entry.first.IsScalar())
                             return FieldError(p, entry.first, "expected a string key");
                           const std::string key = entry.first.Scalar();
                           if (!entry.second.IsScalar() || entry.second.Scalar().empty()) {
                             return FieldError(fmt::format("{}.{}", p, key), entry.second,
                                               "expected a string or a number");
                           }
                           q.hard.Set(key, entry.second.Scalar());
                         }
                         return Status();
                       }}});
  if (!s.ok()) return s;
  if (q.quota_namespace.empty()) return FieldError(path + ".namespace", node, "required");
  if (q.name.empty()) q.name = fmt::format("quota{}", index);
  return Status();
}

// The defaults of a list item the file leaves out.
NodeGroup DefaultNodeGroup() {
  NodeGroup g;
  g.shape.gpus = 8;
  return g;
}

PodClass DefaultPodClass() {
  PodClass c;
  c.shape.gpus = 1;
  c.shape.gpu_milli = 1000;
  return c;
}

std::string Joined(const std::string& dir, const std::string& path) {
  if (dir.empty() || (!path.empty() && path.front() == '/')) return path;
  return dir.back() == '/' ? dir + path : dir + "/" + path;
}

Status ReadOpenb(const YAML::Node& node, const std::string& path, const LoadOptions& options,
                 std::optional<OpenbWorkload>& out) {
  if (node.IsNull()) return Status();
  OpenbWorkload w;
  std::string dir, pods = "openb_pod_list_default.csv", nodes = "openb_node_list_gpu_node.csv";
  Status s =
      ReadMap(node, path,
              {{"dir", String(dir)},
               {"nodes", String(nodes)},
               {"pods", String(pods)},
               {"mode", OneOf(w.mode, {{"inflate", OpenbWorkload::Mode::kInflate},
                                       {"churn", OpenbWorkload::Mode::kChurn},
                                       {"replay", OpenbWorkload::Mode::kReplay}})},
               {"order", OneOf(w.order, {{"arrival", OpenbWorkload::Order::kArrival},
                                         {"largest-first", OpenbWorkload::Order::kLargestFirst}})},
               {"demand", Number(w.demand)},
               {"turnover", Number(w.turnover)}});
  if (!s.ok()) return s;
  if (w.mode != OpenbWorkload::Mode::kChurn && node["turnover"]) {
    return FieldError(path + ".turnover", node["turnover"], "only the churn mode has a turnover");
  }
  if (!(w.demand > 0)) return FieldError(path + ".demand", node["demand"], "must be positive");
  if (!(w.turnover > 0))
    return FieldError(path + ".turnover", node["turnover"], "must be positive");
  if (w.mode == OpenbWorkload::Mode::kChurn && w.order != OpenbWorkload::Order::kArrival) {
    return FieldError(path + ".order", node["order"], "churn keeps the order the pods arrive in");
  }
  if (w.mode == OpenbWorkload::Mode::kReplay && w.order != OpenbWorkload::Order::kArrival) {
    return FieldError(path + ".order", node["order"], "replay keeps the trace's order");
  }
  if (!options.openb_dir.empty()) {
    dir = options.openb_dir;
  } else if (dir.empty() && !options.openb_default_dir.empty()) {
    dir = options.openb_default_dir;
  } else {
    dir = Joined(options.base_dir, dir);
  }
  if (!options.read) return FieldError(path, node, "no way to read the trace files was given");
  Result<std::string> nodes_csv = options.read(Joined(dir, nodes));
  if (!nodes_csv.ok()) return nodes_csv.status();
  Result<std::string> pods_csv = options.read(Joined(dir, pods));
  if (!pods_csv.ok()) return pods_csv.status();
  w.nodes_csv = std::move(*nodes_csv);
  w.pods_csv = std::move(*pods_csv);
  out = std::move(w);
  return Status();
}

// A kSummaryFigures key.
Status ReadFigure(const YAML::Node& n, const std::string& p, std::string& out) {
  Status s = ReadString(n, p, out);
  if (!s.ok()) return s;
  for (std::string_view key : kSummaryFigures) {
    if (key == out) return Status();
  }
  return FieldError(p, n,
                    fmt::format("'{}' is not one of {}", out, fmt::join(kSummaryFigures, ", ")));
}

Status ReadSummary(const YAML::Node& node, const std::string& path, Summary& summary) {
  return ReadMap(node, path,
                 {{"columns",
                   [&summary](const YAML::Node& n, const std::string& p) {
                     if (n.IsNull()) return Status();
                     if (!n.IsSequence() || n.size() == 0)
                       return FieldError(p, n, "expected a non-empty list of figures");
                     summary.columns.clear();
                     for (std::size_t i = 0; i < n.size(); ++i) {
                       std::string key;
                       Status s = ReadFigure(n[i], fmt::format("{}[{}]", p, i), key);
                       if (!s.ok()) return s;
                       summary.columns.push_back(std::move(key));
                     }
                     return Status();
                   }},
                  {"notes", [&summary](const YAML::Node& n, const std::string& p) {
                     if (n.IsNull()) return Status();
                     if (!n.IsMap())
                       return FieldError(p, n, "expected a mapping of figure to text");
                     for (const auto& entry : n) {
                       std::string key, text;
                       Status s = ReadFigure(entry.first, p, key);
                       if (s.ok()) s = ReadString(entry.second, fmt::format("{}.{}", p, key), text);
                       if (!s.ok()) return s;
                       summary.notes[key] = std::move(text);
                     }
                     return Status();
                   }}});
}

// The settings and workload of one variant (the merged document).
Status ReadTemplate(const YAML::Node& root, const LoadOptions& options, std::string& name,
                    std::string& description, std::vector<std::uint64_t>& seeds, Summary& summary,
                    ScenarioTemplate& t) {
  Scenario& s = t.settings;
  internal::PriorityClasses classes;
  Status read = ReadMap(
      root, "",
      {{"name", String(name)},
       {"description", String(description)},
       {"seeds",
        [&seeds](const YAML::Node& n, const std::string& p) {
          if (n.IsNull()) return Status();
          if (!n.IsSequence() || n.size() == 0)
            return FieldError(p, n, "expected a non-empty list of seeds");
          seeds.clear();
          for (std::size_t i = 0; i < n.size(); ++i) {
            std::int64_t seed = 0;
            Status st = ReadInteger(n[i], fmt::format("{}[{}]", p, i), 0,
                                    std::numeric_limits<std::int64_t>::max(), seed);
            if (!st.ok()) return st;
            seeds.push_back(static_cast<std::uint64_t>(seed));
          }
          return Status();
        }},
       {"end", Duration(s.end_ms)},
       {"nodes",
        [&t](const YAML::Node& n, const std::string& p) {
          return ReadList(n, p, DefaultNodeGroup(), ReadNodeGroup, t.node_groups);
        }},
       {"pods",
        [&t](const YAML::Node& n, const std::string& p) {
          return ReadList(n, p, DefaultPodClass(), ReadPodClass, t.pod_classes);
        }},
       {"openb", [&](const YAML::Node& n,
                     const std::string& p) { return ReadOpenb(n, p, options, t.openb); }},
       {"engine",
        [&s](const YAML::Node& n, const std::string& p) { return ReadEngine(n, p, s.engine); }},
       {"api", [&s](const YAML::Node& n, const std::string& p) { return ReadApi(n, p, s.api); }},
       {"plugins",
        [&s](const YAML::Node& n, const std::string& p) { return ReadPlugins(n, p, s.plugins); }},
       {"scheduler", [&s](const YAML::Node& n,
                          const std::string& p) { return ReadScheduler(n, p, s.scheduler); }},
       {"faults",
        [&s](const YAML::Node& n, const std::string& p) {
          return ReadList(n, p, Fault{}, ReadFault, s.faults);
        }},
       {"quotas",
        [&s](const YAML::Node& n, const std::string& p) {
          Status st = ReadList(n, p, ResourceQuota{}, ReadQuota, s.quotas);
          for (std::size_t i = 0; st.ok() && i < s.quotas.size(); ++i) {
            for (std::size_t j = 0; j < i; ++j) {
              if (s.quotas[i].quota_namespace == s.quotas[j].quota_namespace &&
                  s.quotas[i].name == s.quotas[j].name) {
                return FieldError(fmt::format("{}[{}].name", p, i), n[i],
                                  fmt::format("quota {}/{} is named twice",
                                              s.quotas[i].quota_namespace, s.quotas[i].name));
              }
            }
          }
          return st;
        }},
       {"audit",
        [&s](const YAML::Node& n, const std::string& p) {
          return ReadMap(n, p,
                         {{"period", Duration(s.audit_period_ms)},
                          {"grace", EngineField(s.engine, "audit_grace")}});
        }},
       {"dra",
        [&s](const YAML::Node& n, const std::string& p) {
          s.dra.enabled = true;
          return ReadMap(n, p, {{"policy", OneOfNames(s.dra.policy, dra::kPolicyNames)}});
        }},
       {"summary", [&summary](const YAML::Node& n,
                              const std::string& p) { return ReadSummary(n, p, summary); }},
       {"priority_classes",
        [&classes](const YAML::Node& n, const std::string& p) {
          return internal::ReadPriorityClasses(n, p, classes);
        }},
       {"budgets",
        [&s](const YAML::Node& n, const std::string& p) {
          return ReadList(n, p, DisruptionBudget{}, internal::ReadBudget, s.budgets);
        }},
       {"variants", [](const YAML::Node&, const std::string&) { return Status(); }}});
  if (!read.ok()) return read;
  return internal::ApplyPriorities(root, classes, t);
}

// `base` with the keys of `over`: mappings merge key by key, anything else
// replaces.
YAML::Node Merged(const YAML::Node& base, const YAML::Node& over) {
  if (!base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& entry : over) {
    const std::string key = entry.first.Scalar();
    out[key] = out[key] ? Merged(out[key], entry.second) : YAML::Clone(entry.second);
  }
  return out;
}

Status InFile(const LoadOptions& options, const Status& s) {
  std::string message = fmt::format("{}: {}", options.what, s.message());
  if (s.code() == StatusCode::kNotFound) return Status::NotFound(std::move(message));
  return Status::InvalidConfig(std::move(message), std::string(s.field()));
}

}  // namespace

Result<Experiment> ParseExperiment(std::string_view yaml, const LoadOptions& options) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Status::InvalidConfig(fmt::format("{}: invalid YAML: {}", options.what, e.what()));
  }
  if (!root.IsMap())
    return Status::InvalidConfig(fmt::format("{}: expected a mapping", options.what));
  Experiment experiment;
  try {
    const YAML::Node variants = root["variants"];
    std::vector<std::pair<std::string, YAML::Node>> documents;
    if (!variants || variants.IsNull()) {
      documents.emplace_back("default", root);
    } else if (!variants.IsSequence() || variants.size() == 0) {
      return InFile(options, FieldError("variants", variants, "expected a non-empty list"));
    } else {
      for (std::size_t i = 0; i < variants.size(); ++i) {
        const YAML::Node v = variants[i];
        const std::string path = fmt::format("variants[{}]", i);
        if (!v.IsMap()) return InFile(options, FieldError(path, v, "expected a mapping"));
        if (!v["name"] || !v["name"].IsScalar())
          return InFile(options, FieldError(path + ".name", v, "required"));
        for (const auto& entry : v) {
          const std::string key = entry.first.Scalar();
          if (key == "variants" || key == "seeds" || key == "description" || key == "summary") {
            return InFile(options, FieldError(fmt::format("{}.{}", path, key), entry.first,
                                              "cannot be set by a variant"));
          }
        }
        documents.emplace_back(v["name"].Scalar(), Merged(root, v));
      }
    }
    for (auto& [variant_name, document] : documents) {
      Variant variant;
      variant.name = variant_name;
      std::string ignored_name;
      Status s = ReadTemplate(document, options, ignored_name, experiment.description,
                              experiment.seeds, experiment.summary, variant.scenario);
      if (!s.ok()) return InFile(options, s);
      if (variant.scenario.node_groups.empty() && !variant.scenario.openb) {
        return InFile(options, FieldError("nodes", document, "no nodes: give nodes or openb"));
      }
      experiment.variants.push_back(std::move(variant));
    }
    if (root["name"] && root["name"].IsScalar()) experiment.name = root["name"].Scalar();
  } catch (const YAML::Exception& e) {
    return Status::InvalidConfig(fmt::format("{}: {}", options.what, e.what()));
  }
  for (std::size_t i = 0; i < experiment.variants.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (experiment.variants[i].name == experiment.variants[j].name) {
        return Status::InvalidConfig(fmt::format("{}: two variants are named '{}'", options.what,
                                                 experiment.variants[i].name),
                                     "variants");
      }
    }
  }
  return experiment;
}

std::vector<std::string_view> BuiltinScenarioNames() {
  std::vector<std::string_view> names;
  for (const BuiltinScenarioText& s : kBuiltinScenarios) names.push_back(s.name);
  return names;
}

Result<std::string_view> BuiltinScenario(std::string_view name) {
  std::string names;
  for (const BuiltinScenarioText& s : kBuiltinScenarios) {
    if (s.name == name) return s.yaml;
    names += names.empty() ? std::string(s.name) : ", " + std::string(s.name);
  }
  return Status::NotFound(fmt::format("no scenario named '{}' (shipped: {})", name, names));
}

}  // namespace devshare::sim
