// Scenario files' schema (experiment_schema.cpp): the engine section read
// through the engine's option builder, each error at its key and line.
#include <doctest/doctest.h>

#include <string>

#include "devshare/sim/experiment.hpp"

using namespace devshare;
using namespace devshare::sim;

namespace {

Result<Experiment> Parse(std::string_view yaml) { return ParseExperiment(yaml, LoadOptions{}); }

std::string ErrorOf(std::string_view yaml) {
  Result<Experiment> e = Parse(yaml);
  CHECK_FALSE(e.ok());
  CHECK(e.status().code() == StatusCode::kInvalidConfig);
  return std::string(e.status().message());
}

}  // namespace

TEST_CASE("experiment schema: the engine keys set the engine's options") {
  Result<Experiment> e = Parse(R"(
nodes: [{count: 1}]
engine: {registration: volcano, policy: spread, bind: lock-free, lock_retry: backoff,
         lock_retry_timeout: 2s, avoid_locked_nodes: false, pod_writes: hami,
         register_period: 45000, hami_exact: all}
audit: {period: 1m, grace: 5s}
)");
  REQUIRE(e.ok());
  const engine::EngineOptions& o = e->variants.at(0).scenario.settings.engine;
  CHECK(o.registration == engine::RegistrationProtocol::kVolcano);
  CHECK(o.filter.node_policy == "spread");
  CHECK(o.filter.gpu_policy == "spread");
  CHECK(o.bind_mode == engine::BindMode::kLockFree);
  CHECK(o.lock_retry == engine::LockRetry::kBackoff);
  CHECK(o.lock_retry_timeout_ms == 2000);
  CHECK_FALSE(o.avoid_locked_nodes);
  CHECK(o.pod_writes == engine::PodWrites::kHami);
  CHECK(o.register_period_ms == 45000);  // a bare number: milliseconds
  CHECK(o.filter.hami_exact == *ParseHamiExact("all"));
  CHECK(o.audit_grace_ms == 5000);
  CHECK(e->variants[0].scenario.settings.audit_period_ms == 60000);
}

TEST_CASE("experiment schema: an engine key left empty keeps the default") {
  Result<Experiment> e = Parse("nodes: [{count: 1}]\nengine: {lock_retry: , bind: }\n");
  REQUIRE(e.ok());
  const engine::EngineOptions& o = e->variants.at(0).scenario.settings.engine;
  CHECK(o.lock_retry == engine::EngineOptions{}.lock_retry);
  CHECK(o.bind_mode == engine::EngineOptions{}.bind_mode);
}

TEST_CASE("experiment schema: engine errors name the key, why, and the line") {
  CHECK(ErrorOf("nodes: [{count: 1}]\nengine: {lock_retry: sometimes}\n") ==
        "scenario: engine.lock_retry: 'sometimes' is not one of release, once, fixed, backoff "
        "(line 2, column 22)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nengine:\n  bind: none\n") ==
        "scenario: engine.bind: 'none' is not one of node-lock, lock-free (line 3, column 9)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nengine: {avoid_locked_nodes: maybe}\n") ==
        "scenario: engine.avoid_locked_nodes: expected true or false, got 'maybe' (line 2, "
        "column 30)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nengine: {register_period: 0s}\n") ==
        "scenario: engine.register_period: must be above 0, got 0s (line 2, column 27)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nengine: {lock_retry_timeout: [1s]}\n") ==
        "scenario: engine.lock_retry_timeout: expected a single value (line 2, column 30)");
  CHECK(ErrorOf("nodes: [{count: 1}]\naudit: {grace: soon}\n") ==
        "scenario: audit.grace: expected a duration such as 500ms, 30s, 10m or 1h, got 'soon' "
        "(line 2, column 16)");
  // The scenario file takes the engine keys it documents, not every option.
  CHECK(ErrorOf("nodes: [{count: 1}]\nengine: {seed: 3}\n") ==
        "scenario: engine.seed: unknown key (line 2, column 10)");
}

TEST_CASE("experiment schema: durations of the other sections share the engine's parser") {
  Result<Experiment> e = Parse("end: 2h\nnodes: [{count: 1}]\napi: {latency: 250, jitter: 1s}\n");
  REQUIRE(e.ok());
  const Scenario& s = e->variants.at(0).scenario.settings;
  CHECK(s.end_ms == 7200000);
  CHECK(s.api.latency_ms == 250);
  CHECK(s.api.jitter_ms == 1000);
  CHECK(ErrorOf("nodes: [{count: 1}]\napi: {latency: 1.5s}\n") ==
        "scenario: api.latency: expected a duration such as 500ms, 30s, 10m or 1h, got '1.5s' "
        "(line 2, column 16)");
}

TEST_CASE("experiment schema: quotas and the pods' namespaces") {
  Result<Experiment> e = Parse(R"(
nodes: [{count: 1}]
pods:
  - {name: a, namespace: team-a, count: 2}
  - {name: b, count: 1}
quotas:
  - {namespace: team-a, name: gpu, hard: {limits.nvidia.com/gpumem: "8000", limits.nvidia.com/gpucores: 150}}
  - {namespace: team-b}
)");
  REQUIRE(e.ok());
  const ScenarioTemplate& t = e->variants.at(0).scenario;
  CHECK(t.pod_classes.at(0).shape.pod_namespace == "team-a");
  CHECK(t.pod_classes.at(1).shape.pod_namespace == "sim");  // the default
  const std::vector<ResourceQuota>& q = t.settings.quotas;
  REQUIRE(q.size() == 2);
  CHECK(q[0].quota_namespace == "team-a");
  CHECK(q[0].name == "gpu");
  CHECK(*q[0].hard.Find("limits.nvidia.com/gpumem") == "8000");
  CHECK(*q[0].hard.Find("limits.nvidia.com/gpucores") == "150");  // a number, as its text
  CHECK(q[1].name == "quota1");
  CHECK(q[1].hard.entries().empty());
  // A limit that is not a whole number parses: the run reports and ignores it.
  CHECK(Parse("nodes: [{count: 1}]\nquotas: [{namespace: a, hard: {limits.nvidia.com/gpumem: "
              "1.5}}]\n")
            .ok());
}

TEST_CASE("experiment schema: quota errors name the key and the line") {
  CHECK(ErrorOf("nodes: [{count: 1}]\nquotas:\n  - {name: gpu, hard: {}}\n") ==
        "scenario: quotas[0].namespace: required (line 3, column 5)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nquotas:\n  - {namespace: a, hard: {limits.nvidia.com/gpumem: "
                "[1, 2]}}\n") ==
        "scenario: quotas[0].hard.limits.nvidia.com/gpumem: expected a string or a number (line "
        "3, column 53)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nquotas:\n  - {namespace: a, hard: {limits.nvidia.com/gpumem: "
                "{mib: 1}}}\n") ==
        "scenario: quotas[0].hard.limits.nvidia.com/gpumem: expected a string or a number (line "
        "3, column 53)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nquotas:\n  - {namespace: a, hard: {limits.nvidia.com/gpumem: "
                "}}\n") ==
        "scenario: quotas[0].hard.limits.nvidia.com/gpumem: expected a string or a number (line "
        "3, column 53)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nquotas: [{namespace: a, hard: [1]}]\n") ==
        "scenario: quotas[0].hard: expected a mapping of resource to quantity (line 2, column 31)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nquotas: [{namespace: a, limits: {}}]\n") ==
        "scenario: quotas[0].limits: unknown key (line 2, column 25)");
  CHECK(ErrorOf(
            "nodes: [{count: 1}]\nquotas: [{namespace: a, name: q}, {namespace: a, name: q}]\n") ==
        "scenario: quotas[1].name: quota a/q is named twice (line 2, column 35)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nquotas: {namespace: a}\n") ==
        "scenario: quotas: expected a list (line 2, column 9)");
  CHECK(ErrorOf("nodes: [{count: 1}]\npods: [{namespace: ''}]\n") ==
        "scenario: pods[0].namespace: must not be empty (line 2, column 20)");
}

TEST_CASE("experiment schema: PriorityClasses set the pods' priorities, the global default too") {
  Result<Experiment> e = Parse(R"(
nodes: [{count: 1}]
priority_classes:
  low: {value: 10, global_default: true}
  high: {value: 1000, preemption_policy: Never}
  mid: {value: 500, preemption_policy: PreemptLowerPriority}
pods:
  - {name: a, priority_class: high, termination_grace_seconds: 5, labels: {team: x}}
  - {name: b}
  - {name: c, priority_class: mid}
)");
  REQUIRE(e.ok());
  const std::vector<PodClass>& c = e->variants.at(0).scenario.pod_classes;
  CHECK(c.at(0).shape.priority == 1000);
  CHECK(c.at(0).shape.preemption_policy == "Never");
  CHECK(c.at(0).shape.priority_class == "high");
  CHECK(c.at(0).shape.termination_grace_seconds == 5);
  CHECK(*c.at(0).shape.labels.Find("team") == "x");
  CHECK(*c.at(0).shape.labels.Find(kPodClassLabel) == "a");
  CHECK(c.at(1).shape.priority == 10);  // the global default
  CHECK(c.at(1).shape.termination_grace_seconds == 30);
  CHECK(c.at(2).shape.priority == 500);
  CHECK(c.at(2).shape.preemption_policy.empty());
  // Without a global default, a pod naming no class has priority 0.
  Result<Experiment> none = Parse("nodes: [{count: 1}]\npods: [{name: a}]\n");
  REQUIRE(none.ok());
  CHECK(none->variants.at(0).scenario.pod_classes.at(0).shape.priority == 0);
}

TEST_CASE("experiment schema: priority errors name the key and the line") {
  CHECK(ErrorOf("nodes: [{count: 1}]\npods:\n  - {name: a, priority_class: gold}\n") ==
        "scenario: pods[0].priority_class: no PriorityClass named 'gold' (the Priority admission "
        "refuses the pod) (line 3, column 31)");
  CHECK(ErrorOf("nodes: [{count: 1}]\npriority_classes:\n  a: {value: 1, global_default: true}\n"
                "  b: {value: 2, global_default: true}\n") ==
        "scenario: priority_classes.b.global_default: a is the global default already (line 4, "
        "column 33)");
  CHECK(ErrorOf("nodes: [{count: 1}]\npriority_classes:\n  a: {preemption_policy: Never}\n") ==
        "scenario: priority_classes.a.value: required (line 3, column 6)");
  CHECK(ErrorOf("nodes: [{count: 1}]\npriority_classes:\n  a: {value: 2000000000}\n") ==
        "scenario: priority_classes.a.value: expected an integer in [-2147483648, 1000000000], "
        "got \"2000000000\" (line 3, column 14)");
  CHECK(ErrorOf("nodes: [{count: 1}]\npriority_classes:\n  a: {value: 1, preemption_policy: "
                "Sometimes}\n") ==
        "scenario: priority_classes.a.preemption_policy: 'Sometimes' is not one of "
        "PreemptLowerPriority, Never (line 3, column 36)");
  CHECK(ErrorOf("nodes: [{count: 1}]\npods: [{termination_grace_seconds: -1}]\n") ==
        "scenario: pods[0].termination_grace_seconds: expected an integer in [0, "
        "9223372036854775807], got \"-1\" (line 2, column 36)");
}

TEST_CASE("experiment schema: budgets select labels or a pod class") {
  Result<Experiment> e = Parse(R"(
nodes: [{count: 1}]
pods: [{name: train}]
budgets:
  - {name: t, pod_class: train, min_available: 2}
  - {namespace: team, selector: {app: x}, max_unavailable: "25%"}
)");
  REQUIRE(e.ok());
  const std::vector<DisruptionBudget>& b = e->variants.at(0).scenario.settings.budgets;
  REQUIRE(b.size() == 2);
  CHECK(b[0].budget_namespace == "sim");
  CHECK(*b[0].selector.match_labels.Find(kPodClassLabel) == "train");
  CHECK(b[0].min_available == "2");
  CHECK(b[1].name == "budget1");
  CHECK(b[1].budget_namespace == "team");
  CHECK(*b[1].selector.match_labels.Find("app") == "x");
  CHECK(b[1].max_unavailable == "25%");
}

TEST_CASE("experiment schema: budget errors name the key and the line") {
  CHECK(ErrorOf("nodes: [{count: 1}]\nbudgets:\n  - {pod_class: train, min_available: 1}\n") ==
        "scenario: budgets[0].pod_class: no pod class named 'train' (line 3, column 17)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nbudgets:\n  - {selector: {a: b}}\n") ==
        "scenario: budgets[0]: give exactly one of min_available and max_unavailable (line 3, "
        "column 5)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nbudgets:\n  - {min_available: 1}\n") ==
        "scenario: budgets[0]: give exactly one of selector and pod_class (line 3, column 5)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nbudgets:\n  - {selector: {a: b}, max_unavailable: 150%}\n") ==
        "scenario: budgets[0].max_unavailable: '150%' is neither a whole number nor a percentage "
        "(0%..100%) (line 3, column 41)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nbudgets:\n  - {name: x, selector: {a: b}, min_available: 1}\n"
                "  - {name: x, selector: {a: c}, min_available: 1}\n") ==
        "scenario: budgets[1].name: budget sim/x is named twice (line 4, column 5)");
}
