// Expanding an experiment into runs: a variant's template and a seed into
// the scenario to simulate, and every variant run with every seed
// (devshare/sim/experiment.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "devshare/sim/experiment.hpp"
#include "scenario_objects.hpp"

namespace devshare::sim {

namespace {

// The same pods at the same times, the most GPUs first (a stable sort: the
// sampled order among equals).
void LargestFirst(std::vector<PodSpec>& pods) {
  std::vector<std::int64_t> times;
  times.reserve(pods.size());
  for (const PodSpec& p : pods) times.push_back(p.arrive_ms);
  std::stable_sort(pods.begin(), pods.end(), [](const PodSpec& a, const PodSpec& b) {
    return internal::GpusOf(a) > internal::GpusOf(b);
  });
  for (std::size_t i = 0; i < pods.size(); ++i) pods[i].arrive_ms = times[i];
}

}  // namespace

Result<Scenario> Expand(const ScenarioTemplate& t, std::uint64_t seed) {
  Scenario scenario = t.settings;
  if (t.openb) {
    const OpenbWorkload& w = *t.openb;
    Result<Scenario> openb = w.mode == OpenbWorkload::Mode::kReplay
                                 ? OpenbReplay(w.nodes_csv, w.pods_csv)
                             : w.mode == OpenbWorkload::Mode::kChurn
                                 ? OpenbChurn(w.nodes_csv, w.pods_csv, w.demand, w.turnover, seed)
                                 : OpenbScenario(w.nodes_csv, w.pods_csv, w.demand, seed);
    if (!openb.ok()) return openb.status();
    scenario.nodes = std::move(openb->nodes);
    scenario.pods = std::move(openb->pods);
    if (t.openb->order == OpenbWorkload::Order::kLargestFirst) LargestFirst(scenario.pods);
  }
  for (const NodeGroup& g : t.node_groups) {
    const int width = std::max(1, static_cast<int>(std::to_string(g.count - 1).size()));
    for (std::int32_t i = 0; i < g.count; ++i) {
      NodeSpec n = g.shape;
      n.name = fmt::format("{}{:0{}}", g.prefix, i, width);
      scenario.nodes.push_back(std::move(n));
    }
  }
  // Pod classes: arrivals from each class's start, steady or Poisson, until
  // the class's count or the end.
  std::mt19937_64 rng(seed);
  const std::size_t before = scenario.pods.size();
  for (const PodClass& c : t.pod_classes) {
    if (c.count == 0 && scenario.end_ms <= 0) {
      return Status::InvalidArgument(
          fmt::format("pod class {}: no count and no end time", c.shape.name));
    }
    std::exponential_distribution<double> gap(1.0 / static_cast<double>(c.every_ms));
    double at = static_cast<double>(c.start_ms);
    for (std::int32_t i = 0; c.count == 0 || i < c.count; ++i) {
      if (c.arrival == PodClass::Arrival::kPoisson) at += gap(rng);
      const auto arrive = static_cast<std::int64_t>(at);
      if (scenario.end_ms > 0 && arrive > scenario.end_ms) break;
      PodSpec p = c.shape;
      p.name = fmt::format("{}-{}", c.shape.name, i);
      p.arrive_ms = arrive;
      scenario.pods.push_back(std::move(p));
      if (c.arrival == PodClass::Arrival::kSteady) at += static_cast<double>(c.every_ms);
    }
  }
  std::stable_sort(scenario.pods.begin() + static_cast<std::ptrdiff_t>(before), scenario.pods.end(),
                   [](const PodSpec& a, const PodSpec& b) { return a.arrive_ms < b.arrive_ms; });
  return scenario;
}

Result<std::vector<VariantResult>> RunExperiment(const Experiment& experiment,
                                                 const ExperimentProgress& progress) {
  std::vector<VariantResult> results;
  for (const Variant& variant : experiment.variants) {
    VariantResult result;
    result.name = variant.name;
    for (std::uint64_t seed : experiment.seeds) {
      Result<Scenario> scenario = Expand(variant.scenario, seed);
      if (!scenario.ok()) {
        return Status::InvalidArgument(fmt::format("variant {}, seed {}: {}", variant.name, seed,
                                                   scenario.status().message()));
      }
      Progress run_progress;
      if (progress) {
        run_progress = [&](std::uint64_t done, std::uint64_t total) {
          progress(variant.name, seed, done, total);
        };
      }
      Result<Report> report = Run(*scenario, seed, run_progress);
      if (!report.ok()) {
        std::string message =
            fmt::format("variant {}, seed {}: {}", variant.name, seed, report.status().message());
        return report.status().code() == StatusCode::kInternal
                   ? Status::Internal(std::move(message))
                   : Status::InvalidArgument(std::move(message));
      }
      result.seeds.push_back(seed);
      result.reports.push_back(std::move(*report));
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace devshare::sim
