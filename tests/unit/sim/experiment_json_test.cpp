// The results JSON writer (experiment_json.cpp): the document's shape and
// the report's fields.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "devshare/sim/experiment.hpp"

using namespace devshare;
using namespace devshare::sim;

namespace {

Report SomeReport() {
  Report r;
  r.pods = 10;
  r.bound = 7;
  r.pending = 3;
  r.pending_reasons = {{"no fit", 3}};
  r.api_calls = {{"patch", 4}};
  r.latency_p99_ms = 12;
  r.fragmentation_curve = {FragmentationSample{50, 40, 2, 0.5}};
  r.drift_found = {{"pod-gone", 1}};
  r.quotas = {QuotaReport{"team-a", "nvidia.com/gpumem", 8192, 4096, 2, 3, 1}};
  r.quota_warnings = {"resource quota team-b/gpu: ..."};
  r.preemption = PreemptionReport{30, 29, 52, 35600, 15, 15, 1, 2, 378880, 0, 1, 3302.5};
  r.end_ms = 60000;
  return r;
}

}  // namespace

TEST_CASE("ResultsJson: name, description, and each variant's runs with their seeds") {
  Experiment experiment;
  experiment.name = "mine";
  experiment.description = "two \"policies\"";
  std::vector<VariantResult> results{{"a", {4, 5}, {SomeReport(), SomeReport()}}, {"b", {}, {}}};
  results[0].reports[1].bound = 8;
  const boost::json::value doc = boost::json::parse(ResultsJson(experiment, results));
  CHECK(doc.at("name").as_string() == "mine");
  CHECK(doc.at("description").as_string() == "two \"policies\"");
  const boost::json::array& variants = doc.at("variants").as_array();
  REQUIRE(variants.size() == 2);
  CHECK(variants[0].at("name").as_string() == "a");
  const boost::json::array& runs = variants[0].at("runs").as_array();
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].at("seed").to_number<std::uint64_t>() == 4);
  CHECK(runs[1].at("seed").to_number<std::uint64_t>() == 5);
  CHECK(runs[1].at("bound").to_number<std::uint64_t>() == 8);
  CHECK(runs[0].as_object().begin()->key() == "seed");  // the seed first
  CHECK(variants[1].at("runs").as_array().empty());
}

TEST_CASE("ReportJson: every field in camelCase, no seed; the curve's samples as their own JSON") {
  const boost::json::value report = boost::json::parse(ReportJson(SomeReport()));
  CHECK_FALSE(report.as_object().contains("seed"));
  CHECK(report.at("pods").to_number<std::uint64_t>() == 10);
  CHECK(report.at("pendingReasons").at("no fit").to_number<std::uint64_t>() == 3);
  CHECK(report.at("apiCalls").at("patch").to_number<std::uint64_t>() == 4);
  CHECK(report.at("latencyP99Ms").to_number<std::int64_t>() == 12);
  CHECK(report.at("driftFound").at("pod-gone").to_number<std::uint64_t>() == 1);
  CHECK(report.at("driftHealed").as_object().empty());
  CHECK(report.at("endMs").to_number<std::int64_t>() == 60000);
  CHECK(report.at("quotas") == boost::json::parse(R"([{"namespace": "team-a",
      "resource": "nvidia.com/gpumem", "limit": 8192, "peakUsed": 4096, "bound": 2,
      "pending": 3, "pendingQuota": 1}])"));
  CHECK(report.at("quotaWarnings").as_array().at(0).as_string() ==
        "resource quota team-b/gpu: ...");
  CHECK(report.at("preemption") == boost::json::parse(R"({"highPriorityPods": 30,
      "highPriorityBound": 29, "highPriorityP50Ms": 52, "highPriorityP99Ms": 35600,
      "preemptions": 15, "victims": 15, "evictionsRefused": 1, "preemptionsAbandoned": 2,
      "memoryFreedBeyondMib": 378880, "evictedNotHelped": 0, "victimsTerminating": 1,
      "workLostGpuSeconds": 3302.5})"));
  CHECK(boost::json::parse(PreemptionReportJson(SomeReport().preemption)) ==
        report.at("preemption"));
  const boost::json::value sample =
      boost::json::parse(FragmentationSampleJson(SomeReport().fragmentation_curve[0]));
  CHECK(report.at("fragmentationCurve").as_array().at(0) == sample);
  CHECK(sample.at("demandPercent").to_number<double>() == 50);
  CHECK(sample.at("allocationPercent").to_number<double>() == 40);
  CHECK(sample.at("gpuFree").to_number<double>() == 2);
  CHECK(sample.at("gpuFragmented").to_number<double>() == 0.5);
}
