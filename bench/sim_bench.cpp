// Whole simulated runs: the engine, the API model and kube-scheduler's loop
// placing every pod of a scenario. One iteration is one run.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "devshare/sim/experiment.hpp"
#include "devshare/sim/simulator.hpp"

namespace {

using namespace devshare;

void RunScenario(benchmark::State& state, const sim::Scenario& scenario) {
  std::uint64_t pods = 0;
  for (auto _ : state) {
    Result<sim::Report> report = sim::Run(scenario, 0);
    if (!report.ok()) {
      state.SkipWithError(std::string(report.status().message()).c_str());
      return;
    }
    pods += report->pods;
  }
  state.counters["pods/s"] =
      benchmark::Counter(static_cast<double>(pods), benchmark::Counter::kIsRate);
}

sim::Scenario WithPolicy(sim::Scenario s, const char* node_policy, const char* gpu_policy) {
  s.engine.filter.node_policy = node_policy;
  s.engine.filter.gpu_policy = gpu_policy;
  s.engine.filter.reasons = false;
  return s;
}

void BM_Sim_Synthetic200Nodes(benchmark::State& state) {
  RunScenario(state, WithPolicy(sim::SyntheticScenario(0, 200), "binpack", "binpack"));
}
BENCHMARK(BM_Sim_Synthetic200Nodes)->Unit(benchmark::kMillisecond);

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The FGD paper's experiment on the openb traces, from $DEVSHARE_OPENB
// (default ../shared/data/openb, relative to the repository).
void BM_Sim_Openb(benchmark::State& state, const char* node_policy, const char* gpu_policy) {
  const char* env = std::getenv("DEVSHARE_OPENB");
  const std::string dir = env != nullptr ? env : "../shared/data/openb";
  Result<sim::Scenario> scenario =
      sim::OpenbScenario(Slurp(dir + "/openb_node_list_gpu_node.csv"),
                         Slurp(dir + "/openb_pod_list_default.csv"), 1.3, 0);
  if (!scenario.ok()) {
    state.SkipWithError(
        ("openb traces in " + dir + ": " + std::string(scenario.status().message())).c_str());
    return;
  }
  RunScenario(state, WithPolicy(*scenario, node_policy, gpu_policy));
}
void BM_Sim_OpenbBinpack(benchmark::State& s) { BM_Sim_Openb(s, "binpack", "binpack"); }
void BM_Sim_OpenbFgd(benchmark::State& s) { BM_Sim_Openb(s, "fgd", "fgd"); }
BENCHMARK(BM_Sim_OpenbBinpack)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Sim_OpenbFgd)->Unit(benchmark::kMillisecond)->Iterations(1);

// A variant of a shipped scenario (one simulated hour of handshake-storm:
// 200 nodes, legacy or change-only registration).
void BM_Sim_Shipped(benchmark::State& state, const char* name, const char* variant) {
  Result<std::string_view> yaml = sim::BuiltinScenario(name);
  Result<sim::Experiment> experiment = yaml.ok() ? sim::ParseExperiment(*yaml, {}) : yaml.status();
  if (!experiment.ok()) {
    state.SkipWithError(std::string(experiment.status().message()).c_str());
    return;
  }
  for (const sim::Variant& v : experiment->variants) {
    if (v.name != variant) continue;
    Result<sim::Scenario> scenario = sim::Expand(v.scenario, 0);
    if (scenario.ok()) return RunScenario(state, *scenario);
  }
  state.SkipWithError("no such variant");
}
BENCHMARK_CAPTURE(BM_Sim_Shipped, HandshakeStormVolcanoLegacy, "handshake-storm", "volcano-legacy")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(BM_Sim_Shipped, HandshakeStormHamiLegacy, "handshake-storm", "hami-legacy")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(BM_Sim_Shipped, HandshakeStormChangeOnly, "handshake-storm", "change-only")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

}  // namespace

BENCHMARK_MAIN();
