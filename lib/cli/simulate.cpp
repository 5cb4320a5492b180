#include "simulate.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "devshare/sim/simulator.hpp"
#include "table.hpp"

namespace devshare::cli {

namespace {

struct SimulateOptions {
  std::string openb;                 // directory of the openb CSV files
  std::string pods = "openb_pod_list_default.csv";
  double demand = 1.3;
  std::uint64_t seed = 0;
  std::string policies = "hami-default,binpack,spread,fgd";
  std::string json;
  std::int32_t nodes = 200;
};

struct Policy {
  std::string node;
  std::string gpu;
};

Result<Policy> PolicyNamed(const std::string& name) {
  if (name == "hami-default") return Policy{"binpack", "spread"};
  if (name == "binpack") return Policy{"binpack", "binpack"};
  if (name == "spread") return Policy{"spread", "spread"};
  if (name == "fgd") return Policy{"fgd", "fgd"};
  return Status::InvalidArgument(
      fmt::format("unknown policy {} (want hami-default, binpack, spread or fgd)", name));
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int Run(const SimulateOptions& o) {
  std::vector<std::pair<std::string, Policy>> policies;
  std::stringstream list(o.policies);
  for (std::string name; std::getline(list, name, ',');) {
    Result<Policy> policy = PolicyNamed(name);
    if (!policy.ok()) {
      std::cerr << "devshare simulate: " << policy.status().message() << "\n";
      return 1;
    }
    policies.emplace_back(name, *policy);
  }
  Result<sim::Scenario> scenario = sim::SyntheticScenario(o.seed, o.nodes, o.demand);
  std::string source = fmt::format("synthetic: {} nodes x 8 GPUs, openb-like pods", o.nodes);
  if (!o.openb.empty()) {
    Result<std::string> nodes = ReadFile(o.openb + "/openb_node_list_gpu_node.csv");
    Result<std::string> pods = nodes.ok() ? ReadFile(o.openb + "/" + o.pods) : nodes;
    if (!pods.ok()) {
      std::cerr << "devshare simulate: " << pods.status().message() << "\n";
      return 1;
    }
    scenario = sim::OpenbScenario(*nodes, *pods, o.demand, o.seed);
    source = fmt::format("openb: {} with {}", o.openb, o.pods);
  }
  if (!scenario.ok()) {
    std::cerr << "devshare simulate: " << scenario.status().message() << "\n";
    return 1;
  }
  std::cout << fmt::format("{}\n{} pods arriving until {:.0f} % of the GPUs are asked for; seed {}\n\n",
                           source, scenario->pods.size(), o.demand * 100, o.seed);
  const bool terminal = isatty(STDERR_FILENO) != 0;
  Table table({"POLICY", "BOUND", "UNSCHEDULABLE", "GPU ALLOCATED", "P50 BIND", "P99 BIND",
               "API WRITES", "SECONDS"});
  boost::json::array reports;
  for (const auto& [name, policy] : policies) {
    sim::Scenario s = *scenario;
    s.engine.filter.node_policy = policy.node;
    s.engine.filter.gpu_policy = policy.gpu;
    s.engine.filter.reasons = false;
    const auto start = std::chrono::steady_clock::now();
    sim::Progress progress;
    if (terminal) {
      progress = [&name = name](std::uint64_t handled, std::uint64_t total) {
        std::cerr << fmt::format("{}: {}/{} pods\r", name, handled, total) << std::flush;
      };
    }
    Result<sim::Report> r = sim::Run(s, o.seed, progress);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!r.ok()) {
      std::cerr << "devshare simulate: " << r.status().message() << "\n";
      return 1;
    }
    std::uint64_t writes = 0;
    boost::json::object calls;
    for (const auto& [verb, n] : r->api_calls) {
      writes += n;
      calls[verb] = n;
    }
    table.AddRow({name, std::to_string(r->bound), std::to_string(r->pending),
                  fmt::format("{:.2f} %", r->allocation_percent), fmt::format("{} ms", r->latency_p50_ms),
                  fmt::format("{} ms", r->latency_p99_ms), std::to_string(writes),
                  fmt::format("{:.1f}", seconds)});
    reports.push_back(boost::json::object{{"policy", name},
                                          {"pods", r->pods},
                                          {"bound", r->bound},
                                          {"unschedulable", r->pending},
                                          {"gpuCapacity", r->gpu_capacity},
                                          {"gpuAllocated", r->gpu_allocated},
                                          {"allocationPercent", r->allocation_percent},
                                          {"latencyP50Ms", r->latency_p50_ms},
                                          {"latencyP99Ms", r->latency_p99_ms},
                                          {"throttledMs", r->throttled_ms},
                                          {"apiCalls", std::move(calls)},
                                          {"wallSeconds", seconds}});
  }
  if (terminal) std::cerr << std::string(40, ' ') << "\r";
  std::cout << table.Render();
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << boost::json::serialize(reports) << "\n";
    if (!out) {
      std::cerr << "devshare simulate: cannot write " << o.json << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* sub = app.add_subcommand("simulate", "compare scheduling policies on a simulated cluster");
  sub->add_option("--openb", o->openb, "directory of the openb traces (default: a synthetic cluster)");
  sub->add_option("--pods", o->pods, "pod list in that directory")->capture_default_str();
  sub->add_option("--demand", o->demand, "GPU demand as a share of capacity")->capture_default_str();
  sub->add_option("--seed", o->seed, "the one seed of every random choice")->capture_default_str();
  sub->add_option("--policies", o->policies, "comma list of hami-default, binpack, spread, fgd")
      ->capture_default_str();
  sub->add_option("--nodes", o->nodes, "nodes of the synthetic cluster")->capture_default_str();
  sub->add_option("--json", o->json, "also write the reports as JSON to this file");
  sub->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace devshare::cli
