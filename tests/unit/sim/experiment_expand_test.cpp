// Expanding an experiment into runs (experiment_expand.cpp): Expand's node
// names and arrivals, and RunExperiment's order and errors.
#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <vector>

#include "devshare/sim/experiment.hpp"

using namespace devshare;
using namespace devshare::sim;

namespace {

ScenarioTemplate TwoGroupsOneClass() {
  ScenarioTemplate t;
  NodeGroup wide;
  wide.count = 12;
  wide.prefix = "gpu-";
  wide.shape.gpus = 4;
  NodeGroup single;
  single.count = 1;
  single.prefix = "cpu-";
  t.node_groups = {wide, single};
  PodClass steady;
  steady.count = 3;
  steady.every_ms = 2000;
  steady.start_ms = 500;
  steady.shape.name = "job";
  steady.shape.gpus = 1;
  steady.shape.gpu_milli = 1000;
  t.pod_classes = {steady};
  return t;
}

}  // namespace

TEST_CASE("Expand: node groups named <prefix><index>, the index as wide as the largest") {
  Result<Scenario> s = Expand(TwoGroupsOneClass(), 0);
  REQUIRE(s.ok());
  REQUIRE(s->nodes.size() == 13);
  CHECK(s->nodes[0].name == "gpu-00");
  CHECK(s->nodes[11].name == "gpu-11");
  CHECK(s->nodes[11].gpus == 4);
  CHECK(s->nodes[12].name == "cpu-0");
}

TEST_CASE("Expand: steady arrivals from the start, every `every`, named <class>-<index>") {
  Result<Scenario> s = Expand(TwoGroupsOneClass(), 0);
  REQUIRE(s.ok());
  REQUIRE(s->pods.size() == 3);
  CHECK(s->pods[0].name == "job-0");
  CHECK(s->pods[2].name == "job-2");
  CHECK(s->pods[0].arrive_ms == 500);
  CHECK(s->pods[1].arrive_ms == 2500);
  CHECK(s->pods[2].arrive_ms == 4500);
}

TEST_CASE("Expand: classes interleave by arrival; a class with no count stops at the end") {
  ScenarioTemplate t = TwoGroupsOneClass();
  PodClass late = t.pod_classes[0];
  late.shape.name = "late";
  late.count = 0;  // until the end
  late.start_ms = 1000;
  t.pod_classes.push_back(late);
  t.settings.end_ms = 5000;
  Result<Scenario> s = Expand(t, 0);
  REQUIRE(s.ok());
  std::vector<std::string> names;
  for (const PodSpec& p : s->pods) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"job-0", "late-0", "job-1", "late-1", "job-2", "late-2"});
  SUBCASE("without an end, such a class is refused") {
    t.settings.end_ms = 0;
    Result<Scenario> refused = Expand(t, 0);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message() == "pod class late: no count and no end time");
  }
}

TEST_CASE("RunExperiment: every variant with every seed, in order; errors name both") {
  ScenarioTemplate t = TwoGroupsOneClass();
  Experiment experiment;
  experiment.seeds = {3, 1};
  experiment.variants = {Variant{"a", t}, Variant{"b", t}};
  std::vector<std::tuple<std::string, std::uint64_t>> runs;
  Result<std::vector<VariantResult>> results = RunExperiment(
      experiment, [&](std::string_view variant, std::uint64_t seed, std::uint64_t, std::uint64_t) {
        if (runs.empty() || runs.back() != std::tuple{std::string(variant), seed})
          runs.emplace_back(std::string(variant), seed);
      });
  REQUIRE(results.ok());
  REQUIRE(results->size() == 2);
  CHECK((*results)[1].name == "b");
  CHECK((*results)[0].seeds == std::vector<std::uint64_t>{3, 1});
  CHECK((*results)[0].reports.size() == 2);
  CHECK((*results)[0].reports[0].bound == 3);
  if (!runs.empty()) {  // progress is told as a run goes
    CHECK(runs.front() == std::tuple{std::string("a"), std::uint64_t{3}});
    CHECK(runs.back() == std::tuple{std::string("b"), std::uint64_t{1}});
  }
  experiment.variants[1].scenario.pod_classes[0].count = 0;  // no count, no end
  Result<std::vector<VariantResult>> refused = RunExperiment(experiment);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message() == "variant b, seed 3: pod class job: no count and no end time");
}
