// Scenario files: parsing (every error names the key and line), variants,
// expansion with a seed, and the shipped scenarios.
#include "devshare/sim/experiment.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace devshare;
using namespace devshare::sim;

namespace {

constexpr std::string_view kNodesCsv =
    "sn,cpu_milli,memory_mib,gpu,model\nn-0,64000,262144,8,V100M32\n";
constexpr std::string_view kPodsCsv =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
    "time,scheduled_time\n"
    "p-0,12000,16384,1,1000,,LS,Running,0,100,0\n";

// Serves the two openb files from memory and records what was asked for.
struct FakeFiles {
  std::vector<std::string> asked;
  LoadOptions Options() {
    LoadOptions o;
    o.read = [this](const std::string& path) -> Result<std::string> {
      asked.push_back(path);
      if (path.ends_with("openb_node_list_gpu_node.csv")) return std::string(kNodesCsv);
      if (path.ends_with(".csv")) return std::string(kPodsCsv);
      return Status::NotFound("cannot read " + path);
    };
    return o;
  }
};

std::string ErrorOf(std::string_view yaml) {
  FakeFiles files;
  Result<Experiment> e = ParseExperiment(yaml, files.Options());
  CHECK_FALSE(e.ok());
  return std::string(e.status().message());
}

}  // namespace

TEST_CASE("experiment: a file with variants, merged over the base") {
  constexpr std::string_view kYaml = R"(
name: mine
description: two policies
seeds: [4, 5]
end: 90s
nodes:
  - {count: 12, prefix: gpu-, gpus: 4, model: T4, gpu_memory: 16384, cpu: 32000, memory: 65536}
pods:
  - {name: job, every: 10s, count: 5, gpus: 1, gpu_milli: 250, duration: 1m}
engine: {registration: hami, policy: binpack}
api: {qps: 20, latency: 5ms}
variants:
  - {name: a}
  - {name: b, engine: {policy: spread, hami_exact: W2}, api: {burst: 3}}
)";
  FakeFiles files;
  Result<Experiment> e = ParseExperiment(kYaml, files.Options());
  REQUIRE(e.ok());
  CHECK(e->name == "mine");
  CHECK(e->seeds == std::vector<std::uint64_t>{4, 5});
  REQUIRE(e->variants.size() == 2);
  const Scenario& a = e->variants[0].scenario.settings;
  const Scenario& b = e->variants[1].scenario.settings;
  CHECK(a.end_ms == 90000);
  CHECK(a.engine.filter.gpu_policy == "binpack");
  CHECK(b.engine.filter.gpu_policy == "spread");
  CHECK(b.engine.registration == engine::RegistrationProtocol::kHami);  // kept from the base
  CHECK(a.engine.filter.hami_exact == HamiExact{});
  CHECK(b.engine.filter.hami_exact.device_score_type_match);
  CHECK_FALSE(b.engine.filter.hami_exact.container_padding_by_type);
  CHECK(b.api.qps == 20);
  CHECK(b.api.latency_ms == 5);
  CHECK(b.api.burst == 3);
  CHECK(a.api.burst == 10);
  CHECK(files.asked.empty());

  Result<Scenario> s = Expand(e->variants[1].scenario, 4);
  REQUIRE(s.ok());
  REQUIRE(s->nodes.size() == 12);
  CHECK(s->nodes[0].name == "gpu-00");  // zero-padded to the widest index
  CHECK(s->nodes[11].name == "gpu-11");
  REQUIRE(s->pods.size() == 5);
  CHECK(s->pods[4].name == "job-4");
  CHECK(s->pods[4].arrive_ms == 40000);
  CHECK(s->pods[4].duration_ms == 60000);
  CHECK(s->pods[4].gpu_milli == 250);

  Result<std::vector<VariantResult>> results = RunExperiment(*e);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 2);
  CHECK((*results)[1].seeds == std::vector<std::uint64_t>{4, 5});
  CHECK((*results)[1].reports[0].bound == 5);
  const std::string json = ResultsJson(*e, *results);
  CHECK(json.starts_with(
      R"({"name":"mine","description":"two policies","variants":[{"name":"a","runs":[{"seed":4,)"));
}

TEST_CASE("experiment: Poisson arrivals are drawn from the seed; pod classes stop at the end") {
  constexpr std::string_view kYaml = R"(
end: 10m
nodes: [{count: 1}]
pods: [{name: p, every: 30s, arrival: poisson}]
)";
  FakeFiles files;
  Result<Experiment> e = ParseExperiment(kYaml, files.Options());
  REQUIRE(e.ok());
  Result<Scenario> a = Expand(e->variants[0].scenario, 1);
  Result<Scenario> b = Expand(e->variants[0].scenario, 1);
  Result<Scenario> c = Expand(e->variants[0].scenario, 2);
  REQUIRE(a.ok());
  REQUIRE(c.ok());
  CHECK(a->pods.size() == b->pods.size());
  CHECK(a->pods.back().arrive_ms == b->pods.back().arrive_ms);
  CHECK(a->pods.back().arrive_ms != c->pods.back().arrive_ms);
  CHECK(a->pods.back().arrive_ms <= 600000);
  CHECK(a->pods.size() > 8);  // about 20 in ten minutes
  CHECK(a->pods.size() < 40);
}

TEST_CASE("experiment: a summary names the figures to show and a word on some") {
  FakeFiles files;
  Result<Experiment> e = ParseExperiment(
      "nodes: [{count: 1}]\nsummary: {columns: [bound, p99], notes: {binds_failed: why}}\n",
      files.Options());
  REQUIRE(e.ok());
  CHECK(e->summary.columns == std::vector<std::string>{"bound", "p99"});
  CHECK(e->summary.notes == std::map<std::string, std::string>{{"binds_failed", "why"}});
  CHECK(ErrorOf("nodes: [{count: 1}]\nsummary: {columns: [bound, speed]}\n")
            .starts_with("scenario: summary.columns[1]: 'speed' is not one of pods, bound, "));
  CHECK(ErrorOf("nodes: [{count: 1}]\nsummary: {notes: {speed: fast}}\n")
            .starts_with("scenario: summary.notes: 'speed' is not one of pods, "));
  CHECK(ErrorOf("nodes: [{count: 1}]\nvariants: [{name: a, summary: {columns: [bound]}}]\n")
            .starts_with("scenario: variants[0].summary: cannot be set by a variant"));
}

TEST_CASE("experiment: every error names the key and its line") {
  CHECK(ErrorOf("nodes: [{count: 1}]\nengine: {policy: best}\n") ==
        "scenario: engine.policy: 'best' is not one of hami-default, binpack, spread, fgd (line 2, "
        "column 18)");
  CHECK(ErrorOf("nodes: [{count: 1}]\nengine: {hami_exact: W9}\n") ==
        "scenario: engine.hami_exact: hami-exact: unknown row \"W9\" (rows: W1, W2, W4, W10; or "
        "all, none) (line 2, column 22)");
  CHECK(ErrorOf("nodes:\n  - {count: 1, gpu: 4}\n") ==
        "scenario: nodes[0].gpu: unknown key (line 2, column 16)");
  CHECK(ErrorOf("nodes: [{count: 0}]\n").find("nodes[0].count: expected an integer in [1, ") !=
        std::string::npos);
  CHECK(ErrorOf("end: soon\nnodes: [{count: 1}]\n") ==
        "scenario: end: expected a duration such as 500ms, 30s, 10m or 1h, got 'soon' (line 1, "
        "column 6)");
  CHECK(
      ErrorOf("nodes: [{count: 1}]\npods: [{gpus: 9}]\n").find("pods[0].gpus: at most 8 devices") !=
      std::string::npos);
  CHECK(ErrorOf("nodes: [{count: 1}]\nfaults: [{kind: plugin-hang, at: 1m}]\n")
            .find("faults[0].node: required for this kind") != std::string::npos);
  CHECK(ErrorOf("nodes: [{count: 1}]\nvariants: [{engine: {}}]\n")
            .find("variants[0].name: required") != std::string::npos);
  CHECK(ErrorOf("nodes: [{count: 1}]\nvariants: [{name: a}, {name: a}]\n") ==
        "scenario: two variants are named 'a'");
  CHECK(ErrorOf("nodes: [{count: 1}]\nvariants: [{name: a, seeds: [1]}]\n")
            .find("variants[0].seeds: cannot be set by a variant") != std::string::npos);
  CHECK(ErrorOf("pods: []\n") ==
        "scenario: nodes: no nodes: give nodes or openb (line 1, column 1)");
  CHECK(ErrorOf("nodes: [\n").starts_with("scenario: invalid YAML"));
  CHECK(ErrorOf("- 1\n") == "scenario: expected a mapping");
  CHECK(ErrorOf("openb: {pods: x.txt}\n") == "scenario: cannot read x.txt");
}

TEST_CASE("experiment: openb files are read from the directory given, the file's or the caller's") {
  FakeFiles files;
  LoadOptions options = files.Options();
  options.base_dir = "/scenarios";
  Result<Experiment> e = ParseExperiment("openb: {dir: traces, mode: replay}\n", options);
  REQUIRE(e.ok());
  CHECK(files.asked == std::vector<std::string>{"/scenarios/traces/openb_node_list_gpu_node.csv",
                                                "/scenarios/traces/openb_pod_list_default.csv"});
  Result<Scenario> s = Expand(e->variants[0].scenario, 0);
  REQUIRE(s.ok());
  CHECK(s->nodes.size() == 1);
  CHECK(s->pods.size() == 1);
  // A default directory (the traces found nearby) is for files naming none.
  options.openb_default_dir = "/nearby";
  files.asked.clear();
  REQUIRE(ParseExperiment("openb: {dir: traces}\n", options).ok());
  CHECK(files.asked.front() == "/scenarios/traces/openb_node_list_gpu_node.csv");
  files.asked.clear();
  REQUIRE(ParseExperiment("openb: {mode: replay}\n", options).ok());
  CHECK(files.asked.front() == "/nearby/openb_node_list_gpu_node.csv");
  // The caller's directory replaces the file's.
  options.openb_dir = "/data";
  files.asked.clear();
  REQUIRE(ParseExperiment("openb: {dir: traces}\n", options).ok());
  CHECK(files.asked.front() == "/data/openb_node_list_gpu_node.csv");
}

TEST_CASE("experiment: openb's largest-first order is the sampled pods, most GPUs first") {
  LoadOptions options;
  options.read = [](const std::string& path) -> Result<std::string> {
    if (path.ends_with("openb_node_list_gpu_node.csv")) return std::string(kNodesCsv);
    return std::string(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        "half,0,0,1,500\nfour,0,0,4,1000\ncpu,1000,0,0,0\nwhole,0,0,1,1000\n");
  };
  Result<Experiment> e = ParseExperiment(
      "openb: {demand: 2}\nvariants:\n  - {name: arrival}\n"
      "  - {name: clairvoyant, openb: {order: largest-first}}\n",
      options);
  REQUIRE(e.ok());
  Result<Scenario> arrival = Expand(e->variants[0].scenario, 3);
  Result<Scenario> sorted = Expand(e->variants[1].scenario, 3);
  REQUIRE(arrival.ok());
  REQUIRE(sorted.ok());
  REQUIRE(arrival->pods.size() == sorted->pods.size());
  std::vector<std::string> names;
  for (const PodSpec& p : arrival->pods) names.push_back(p.name);
  std::vector<std::string> sorted_names;
  for (std::size_t i = 0; i < sorted->pods.size(); ++i) {
    const PodSpec& p = sorted->pods[i];
    sorted_names.push_back(p.name);
    CHECK(p.arrive_ms == arrival->pods[i].arrive_ms);  // the same times, in order
    if (i > 0) {
      const PodSpec& q = sorted->pods[i - 1];
      const double gpus = p.gpus == 1 ? p.gpu_milli / 1000.0 : p.gpus;
      const double before = q.gpus == 1 ? q.gpu_milli / 1000.0 : q.gpus;
      CHECK(before >= gpus);
    }
  }
  CHECK(sorted_names != names);  // seed 3 did not sample them largest first
  std::sort(names.begin(), names.end());
  std::sort(sorted_names.begin(), sorted_names.end());
  CHECK(sorted_names == names);  // the same pods
  CHECK(ErrorOf("openb: {mode: replay, order: largest-first}\n")
            .find("openb.order: replay keeps the trace's order") != std::string::npos);
  CHECK(ErrorOf("openb: {mode: churn, order: largest-first}\n")
            .find("openb.order: churn keeps the order the pods arrive in") != std::string::npos);
  CHECK(ErrorOf("openb: {turnover: 3}\n")
            .find("openb.turnover: only the churn mode has a turnover") != std::string::npos);
  CHECK(ErrorOf("openb: {mode: churn, turnover: 0}\n").find("openb.turnover: must be positive") !=
        std::string::npos);
  CHECK(ErrorOf("openb: {demand: 0}\n").find("openb.demand: must be positive") !=
        std::string::npos);
}

TEST_CASE("experiment: the shipped scenarios parse and expand") {
  const std::vector<std::string_view> names = BuiltinScenarioNames();
  CHECK(names.size() == 11);
  for (std::string_view name : names) {
    CAPTURE(name);
    FakeFiles files;
    Result<std::string_view> yaml = BuiltinScenario(name);
    REQUIRE(yaml.ok());
    Result<Experiment> e = ParseExperiment(*yaml, files.Options());
    REQUIRE(e.ok());
    CHECK(e->name == name);
    CHECK_FALSE(e->description.empty());
    for (const Variant& v : e->variants) CHECK(Expand(v.scenario, e->seeds.front()).ok());
  }
  CHECK(BuiltinScenario("best").status().message() ==
        "no scenario named 'best' (shipped: default, handshake-storm, lock-storm, failover, "
        "plugin-faults, drift, openb, openb-churn, openb-replay, openb-dra, preemption)");
}

TEST_CASE("experiment: audits and the drift faults read from a scenario file") {
  Result<Experiment> e = ParseExperiment(R"(
name: d
end: 5m
nodes: [{count: 2, gpus: 1}]
faults:
  - {kind: missed-events, at: 1m, for: 30s}
  - {kind: pod-deleted-in-bind, at: 2m}
  - {kind: node-replaced, node: node-1, at: 3m}
audit: {period: 1m, grace: 20s}
)",
                                         LoadOptions{});
  REQUIRE(e.ok());
  const Scenario& s = e->variants.front().scenario.settings;
  CHECK(s.audit_period_ms == 60000);
  CHECK(s.engine.audit_grace_ms == 20000);
  REQUIRE(s.faults.size() == 3);
  CHECK(s.faults[0].kind == Fault::Kind::kMissedEvents);
  CHECK(s.faults[2].node == "node-1");
  Result<Experiment> bad = ParseExperiment(
      "nodes: [{count: 1}]\nfaults: [{kind: node-replaced, at: 1m}]\n", LoadOptions{});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("node") != std::string::npos);
}
