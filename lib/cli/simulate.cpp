#include "simulate.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "devshare/sim/experiment.hpp"
#include "read_file.hpp"
#include "table.hpp"

namespace devshare::cli {

namespace {

struct SimulateOptions {
  std::string file;      // a scenario file
  std::string scenario;  // or a shipped scenario's name
  std::vector<std::uint64_t> seeds;
  std::string openb;  // directory of the openb traces
  std::string json;
  bool print = false;
  bool list = false;
  bool wide = false;  // every column, the writes by verb, the wall-clock seconds
};

// The width the default output keeps to.
constexpr std::size_t kWidth = 120;

// `text` wrapped at white space to lines of at most kWidth, each after
// `indent` (the first after `first`); a lone "%" stays with its number.
std::string Wrap(std::string_view text, std::string_view first = "", std::string_view indent = "") {
  std::vector<std::string_view> words;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find_first_of(" \n", start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string out, line(first);
  bool fresh = true;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::size_t glued = i + 1 < words.size() && words[i + 1] == "%" ? 2 : 0;
    if (!fresh && line.size() + 1 + words[i].size() + glued > kWidth) {
      out += line + "\n";
      line = std::string(indent);
      fresh = true;
    }
    if (!fresh) line += ' ';
    line += words[i];
    fresh = false;
  }
  return out + line + "\n";
}

// The openb traces' directory as told: --openb, else $DEVSHARE_OPENB (it
// replaces a scenario's openb.dir; empty: not told).
std::string ToldOpenb(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("DEVSHARE_OPENB");
  return env != nullptr ? env : "";
}

// The shared data next to or inside the working directory, for a scenario
// that names no openb.dir ("" when neither holds the traces).
std::string NearbyOpenb() {
  for (const char* dir : {"../shared/data/openb", "shared/data/openb"}) {
    if (std::filesystem::exists(std::filesystem::path(dir) / "openb_node_list_gpu_node.csv"))
      return dir;
  }
  return "";
}

std::string Millis(double ms) {
  if (ms < 1000) return fmt::format("{:.0f} ms", ms);
  if (ms < 120000) return fmt::format("{:.1f} s", ms / 1000);
  return fmt::format("{:.1f} min", ms / 60000);
}

double Mean(const std::vector<sim::Report>& runs,
            const std::function<double(const sim::Report&)>& field) {
  double sum = 0;
  for (const sim::Report& r : runs) sum += field(r);
  return runs.empty() ? 0 : sum / static_cast<double>(runs.size());
}

// A column of the summary (`key` as sim::kSummaryFigures names it): shown
// always, when any variant has a value, or never (a figure that means
// nothing for this scenario), unless the scenario names its columns.
// `meaning`: said under the table when the figure is not 0 and might read
// as a failure (empty: it never does).
struct Column {
  enum class Show { kAlways, kIfAny, kNever };
  std::string key;
  std::string title;
  std::function<double(const sim::Report&)> field;
  std::function<std::string(double)> format;
  Show show = Show::kIfAny;
  std::string meaning;
};

std::string Count(double v) { return fmt::format("{:.0f}", v); }
std::string Gpus(double v) { return fmt::format("{:.1f}", v); }

// Fragmented GPUs when the arrived pods first asked 90 % of the cluster's
// GPUs (0 when they never did): where the FGD paper's policies differ most
// before the cluster fills and every free GPU is left as fragment.
double FragmentedAt90(const sim::Report& r) {
  for (const sim::FragmentationSample& f : r.fragmentation_curve) {
    if (f.demand_percent == 90) return f.gpu_fragmented;
  }
  return 0;
}

double Total(const std::map<std::string, std::uint64_t>& by_kind) {
  double n = 0;
  for (const auto& [kind, count] : by_kind) n += static_cast<double>(count);
  return n;
}

std::vector<Column> Columns(const sim::Experiment& experiment) {
  using Show = Column::Show;
  bool replicas = false, timed = false;
  for (const sim::Variant& v : experiment.variants) {
    replicas = replicas || v.scenario.settings.scheduler.replicas > 1;
    timed = timed || v.scenario.settings.end_ms > 0 ||
            (v.scenario.openb && v.scenario.openb->mode != sim::OpenbWorkload::Mode::kInflate);
  }
  const Show always = Show::kAlways, if_any = Show::kIfAny;
  const Show if_timed = timed ? Show::kAlways : Show::kNever;
  const Show if_replicas = replicas ? Show::kAlways : Show::kIfAny;
  auto scheduler_writes = [](const sim::Report& r) {
    double n = 0;
    for (const char* verb : {"patch-node", "patch-pod", "binding"}) {
      auto it = r.api_calls.find(verb);
      if (it != r.api_calls.end()) n += static_cast<double>(it->second);
    }
    return r.end_ms > 0 ? n * 60000.0 / static_cast<double>(r.end_ms) : 0;
  };
  return {
      {"pods", "PODS", [](const sim::Report& r) { return r.pods; }, Count, always, ""},
      {"bound", "BOUND", [](const sim::Report& r) { return r.bound; }, Count, always, ""},
      {"pending", "PENDING", [](const sim::Report& r) { return r.pending; }, Count, always,
       "pods not bound at the end; why, below"},
      {"allocated", "GPU ALLOCATED", [](const sim::Report& r) { return r.allocation_percent; },
       [](double v) { return fmt::format("{:.2f} %", v); }, always, ""},
      {"mean_allocated", "MEAN ALLOCATED",
       [](const sim::Report& r) { return r.allocation_mean_percent; },
       [](double v) { return fmt::format("{:.2f} %", v); }, if_timed, ""},
      {"free_gpus", "FREE GPUS", [](const sim::Report& r) { return r.gpu_free; }, Gpus, always, ""},
      {"fragmented_90", "FRAGMENTED AT 90 %", FragmentedAt90, Gpus, if_any, ""},
      {"p50", "P50 TO BOUND", [](const sim::Report& r) { return r.latency_p50_ms; }, Millis, always,
       ""},
      {"p99", "P99 TO BOUND", [](const sim::Report& r) { return r.latency_p99_ms; }, Millis, always,
       ""},
      {"writes_per_min", "SCHEDULER WRITES/MIN", scheduler_writes,
       [](double v) { return fmt::format("{:.1f}", v); }, if_any, ""},
      {"throttled", "THROTTLED", [](const sim::Report& r) { return r.throttled_ms; }, Millis,
       if_any, "time the scheduler's requests waited, summed, for its client's QPS"},
      {"rejected_429", "429", [](const sim::Report& r) { return r.rejected_429; }, Count, if_any,
       "requests the API server refused as too many (429)"},
      {"conflicts_409", "409", [](const sim::Report& r) { return r.conflicts_409; }, Count, if_any,
       "writes that lost a race to another writer (409)"},
      {"timeouts", "TIMEOUTS", [](const sim::Report& r) { return r.extender_timeouts; }, Count,
       if_any, "Filter calls kube-scheduler gave up after its extender timeout"},
      {"refused", "REFUSED", [](const sim::Report& r) { return r.filters_refused; }, Count,
       if_replicas, "Filter calls a replica answered at once with not-ready (not the leader)"},
      {"lock_collisions", "LOCK COLLISIONS", [](const sim::Report& r) { return r.lock_contention; },
       Count, if_any, "binds that found the node lock held by another pod's bind"},
      {"lock_retries", "LOCK RETRIES", [](const sim::Report& r) { return r.lock_retries; }, Count,
       if_any, "lock attempts made again after a collision"},
      {"binds_failed", "BINDS FAILED", [](const sim::Report& r) { return r.binds_failed; }, Count,
       if_any, "binds that failed; kube-scheduler tried those pods again after its backoff"},
      {"nodes_dropped", "NODES DROPPED", [](const sim::Report& r) { return r.nodes_dropped; },
       Count, if_any, "times a node's devices left the scheduler's cache"},
      {"duplicate_handshakes", "DUPLICATE HANDSHAKES",
       [](const sim::Report& r) { return r.duplicate_registration_writes; }, Count, if_replicas,
       "registration writes more than one replica made for the same node"},
      {"unavailable", "UNAVAILABLE", [](const sim::Report& r) { return r.unavailable_ms; }, Millis,
       if_replicas, "time no replica could answer Filter"},
      {"drift_found", "DRIFT FOUND", [](const sim::Report& r) { return Total(r.drift_found); },
       Count, if_any,
       "differences between a replica's cache and the API objects its audits confirmed"},
      {"drift_healed", "HEALED", [](const sim::Report& r) { return Total(r.drift_healed); }, Count,
       if_any, "of those, the ones the audits healed"},
      {"cache_wrong", "CACHE WRONG",
       [](const sim::Report& r) { return r.cache_mismatched_devices; }, Count, if_any,
       "devices the leader's cache counted otherwise than the API objects at the end"},
  };
}

void PrintSummary(const sim::Experiment& experiment, const std::vector<sim::VariantResult>& results,
                  const std::vector<double>& seconds, bool wide) {
  const std::vector<std::string>& named = experiment.summary.columns;
  auto listed = [&](std::string_view key) {
    return std::find(named.begin(), named.end(), key) != named.end();
  };
  std::vector<Column> columns = Columns(experiment);
  std::vector<const Column*> shown;
  for (const Column& c : columns) {
    bool any = c.show == Column::Show::kAlways;
    for (const sim::VariantResult& v : results) {
      any = any || (c.show == Column::Show::kIfAny && Mean(v.reports, c.field) != 0);
    }
    if (wide            ? any
        : named.empty() ? any && c.key != "pods" && c.key != "free_gpus"
                        : listed(c.key)) {
      shown.push_back(&c);
    }
  }
  // Unnamed, the columns that fit in kWidth (a column takes its title's
  // width and two spaces; the variant names theirs).
  std::vector<std::string> left_out;
  if (!wide && named.empty()) {
    std::size_t width = 7;
    for (const sim::VariantResult& v : results) width = std::max(width, v.name.size());
    std::vector<const Column*> fitting;
    for (const Column* c : shown) {
      width += 2 + std::max<std::size_t>(c->title.size(), 9);
      if (width <= kWidth) {
        fitting.push_back(c);
      } else {
        left_out.push_back(c->key);
      }
    }
    shown = std::move(fitting);
  }
  std::vector<std::string> header = {"VARIANT"};
  for (const Column* c : shown) header.push_back(c->title);
  if (wide) header.push_back("SECONDS");
  Table table(header);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const sim::VariantResult& v = results[i];
    std::vector<std::string> row = {v.name};
    for (const Column* c : shown) {
      std::string cell = c->format(Mean(v.reports, c->field));
      if (c->title == "GPU ALLOCATED" && v.reports.size() > 1) {
        const double mean = Mean(v.reports, c->field);
        double var = 0;
        for (const sim::Report& r : v.reports) var += (c->field(r) - mean) * (c->field(r) - mean);
        cell +=
            fmt::format(" ± {:.2f}", std::sqrt(var / static_cast<double>(v.reports.size() - 1)));
      }
      row.push_back(std::move(cell));
    }
    if (wide) row.push_back(fmt::format("{:.1f}", seconds[i]));
    table.AddRow(std::move(row));
  }
  std::cout << table.Render();
  if (!left_out.empty()) {
    std::cout << Wrap(
        fmt::format("(--wide shows {} more: {})", left_out.size(), fmt::join(left_out, ", ")));
  }

  // A line on each shown figure that is not 0 somewhere and would read as a
  // failure: the scenario's own word on it, else what it counts.
  std::string said;
  for (const Column* c : shown) {
    auto note = experiment.summary.notes.find(c->key);
    const std::string& text = note != experiment.summary.notes.end() ? note->second : c->meaning;
    if (text.empty()) continue;
    std::vector<std::string> which;
    for (const sim::VariantResult& v : results) {
      if (Mean(v.reports, c->field) != 0) which.push_back(v.name);
    }
    if (which.empty()) continue;
    said += Wrap(text, fmt::format("{} ({}): ", c->title, fmt::join(which, ", ")), "  ");
  }
  if (!said.empty()) std::cout << "\n" << said;

  // API writes per minute by verb, for runs with an end time.
  std::set<std::string> verbs;
  bool timed = false;
  for (const sim::VariantResult& v : results) {
    for (const sim::Report& r : v.reports) {
      timed = timed || r.end_ms > 0;
      for (const auto& [verb, n] : r.api_calls) verbs.insert(verb);
    }
  }
  if (timed && !verbs.empty() && (wide || listed("writes_by_verb"))) {
    std::vector<std::string> verb_header = {"API WRITES/MIN"};
    verb_header.insert(verb_header.end(), verbs.begin(), verbs.end());
    Table by_verb(verb_header);
    for (const sim::VariantResult& v : results) {
      std::vector<std::string> row = {v.name};
      for (const std::string& verb : verbs) {
        row.push_back(fmt::format(
            "{:.1f}", Mean(v.reports, [&](const sim::Report& r) {
              auto it = r.api_calls.find(verb);
              const double n = it == r.api_calls.end() ? 0 : static_cast<double>(it->second);
              return r.end_ms > 0 ? n * 60000.0 / static_cast<double>(r.end_ms) : 0;
            })));
      }
      by_verb.AddRow(std::move(row));
    }
    std::cout << "\n" << by_verb.Render();
  }

  // Why pods are pending at the end (the first seed's run).
  bool first = true;
  for (const sim::VariantResult& v : results) {
    if (v.reports.empty() || v.reports.front().pending == 0) continue;
    std::string reasons;
    for (const auto& [reason, n] : v.reports.front().pending_reasons) {
      reasons += fmt::format("{}{} ({})", reasons.empty() ? "" : "; ", reason, n);
    }
    std::cout << (first ? "\n" : "")
              << Wrap(reasons, fmt::format("{}: {} pending — ", v.name, v.reports.front().pending),
                      "  ");
    first = false;
  }
}

// With quotas in the scenario: each namespace's limit per device resource,
// the most its pods used at once, its pods bound and pending, and those
// pending for the quota (the first seed's run); then each quota limit that
// was ignored, and why.
void PrintQuotas(const std::vector<sim::VariantResult>& results) {
  Table table({"VARIANT", "NAMESPACE", "RESOURCE", "LIMIT", "PEAK USED", "BOUND", "PENDING",
               "PENDING FOR QUOTA"});
  bool rows = false;
  std::string warnings;
  for (const sim::VariantResult& v : results) {
    if (v.reports.empty()) continue;
    for (const sim::QuotaReport& q : v.reports.front().quotas) {
      const bool limited = !q.resource.empty();
      table.AddRow({v.name, q.pod_namespace, limited ? q.resource : "-",
                    limited ? std::to_string(q.limit) : "none",
                    limited ? std::to_string(q.peak_used) : "-", std::to_string(q.bound),
                    std::to_string(q.pending), std::to_string(q.pending_quota)});
      rows = true;
    }
    for (const std::string& w : v.reports.front().quota_warnings)
      warnings += Wrap(w, fmt::format("quota ignored ({}): ", v.name), "  ");
  }
  if (rows) std::cout << "\n" << table.Render();
  if (!warnings.empty()) std::cout << "\n" << warnings;
}

// With pods of several priorities: the high-priority pods bound (of those
// arrived) and their time to bind, and what their preemptions cost: victims
// and GPU memory freed beyond the preemptor's request per preemption, the
// victims that did not help, evictions a budget refused, and the GPU-seconds
// the victims had run (the first seed's run; PreemptionReport).
void PrintPreemption(const std::vector<sim::VariantResult>& results) {
  Table table({"VARIANT", "HIGH-PRI BOUND", "BIND P50", "BIND P99", "PREEMPTIONS", "VICTIMS/P",
               "MiB BEYOND/P", "NOT HELPED", "PDB 429", "LOST GPU-s"});
  bool rows = false;
  for (const sim::VariantResult& v : results) {
    if (v.reports.empty() || v.reports.front().preemption.high_priority_pods == 0) continue;
    const sim::PreemptionReport& p = v.reports.front().preemption;
    const auto per = [&](double total, int digits) {
      return p.preemptions == 0
                 ? std::string("-")
                 : fmt::format("{:.{}f}", total / static_cast<double>(p.preemptions), digits);
    };
    table.AddRow({v.name, fmt::format("{}/{}", p.high_priority_bound, p.high_priority_pods),
                  Millis(static_cast<double>(p.high_priority_p50_ms)),
                  Millis(static_cast<double>(p.high_priority_p99_ms)),
                  std::to_string(p.preemptions), per(static_cast<double>(p.victims), 2),
                  per(static_cast<double>(p.memory_freed_beyond_mib), 0),
                  std::to_string(p.evicted_not_helped), std::to_string(p.evictions_refused),
                  fmt::format("{:.0f}", p.work_lost_gpu_seconds)});
    rows = true;
  }
  if (rows) std::cout << "\n" << table.Render();
}

int Run(const SimulateOptions& o) {
  if (o.list) {
    for (std::string_view name : sim::BuiltinScenarioNames()) std::cout << name << "\n";
    return 0;
  }
  if (!o.file.empty() && !o.scenario.empty()) {
    std::cerr << "devshare simulate: give a scenario file or --scenario, not both\n";
    return 2;
  }
  sim::LoadOptions load;
  load.openb_dir = ToldOpenb(o.openb);
  load.openb_default_dir = NearbyOpenb();
  load.read = [&load](const std::string& path) -> Result<std::string> {
    Result<std::string> text = ReadFile(path);
    if (!text.ok() && load.openb_dir.empty()) {
      return Status::NotFound(fmt::format(
          "{} (point --openb or DEVSHARE_OPENB at the openb traces)", text.status().message()));
    }
    return text;
  };
  std::string yaml;
  if (!o.file.empty()) {
    Result<std::string> text = ReadFile(o.file);
    if (!text.ok()) {
      std::cerr << "devshare simulate: " << text.status().message() << "\n";
      return 1;
    }
    yaml = std::move(*text);
    load.base_dir = std::filesystem::path(o.file).parent_path().string();
    load.what = o.file;
  } else {
    const std::string name = o.scenario.empty() ? "default" : o.scenario;
    Result<std::string_view> text = sim::BuiltinScenario(name);
    if (!text.ok()) {
      std::cerr << "devshare simulate: " << text.status().message() << "\n";
      return 1;
    }
    yaml = std::string(*text);
    load.what = "scenario " + name;
  }
  if (o.print) {
    std::cout << yaml;
    return 0;
  }
  Result<sim::Experiment> experiment = sim::ParseExperiment(yaml, load);
  if (!experiment.ok()) {
    std::cerr << "devshare simulate: " << experiment.status().message() << "\n";
    return 1;
  }
  if (!o.seeds.empty()) experiment->seeds = o.seeds;
  std::cout << Wrap(experiment->description, fmt::format("{}: ", experiment->name))
            << fmt::format("\nseeds: {}\n\n", fmt::join(experiment->seeds, ", "));
  const bool terminal = isatty(STDERR_FILENO) != 0;
  std::vector<sim::VariantResult> results;
  std::vector<double> seconds;
  for (const sim::Variant& variant : experiment->variants) {
    sim::Experiment one = *experiment;
    one.variants = {variant};
    sim::ExperimentProgress progress;
    if (terminal) {
      progress = [timed = variant.scenario.settings.end_ms > 0](
                     std::string_view name, std::uint64_t seed, std::uint64_t done,
                     std::uint64_t total) {
        std::cerr << fmt::format("\r{} seed {}: {}/{} {}   ", name, seed, done, total,
                                 timed ? "simulated seconds" : "pods")
                  << std::flush;
      };
    }
    const auto start = std::chrono::steady_clock::now();
    Result<std::vector<sim::VariantResult>> run = sim::RunExperiment(one, progress);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (terminal) std::cerr << "\r" << std::string(72, ' ') << "\r";
    if (!run.ok()) {
      std::cerr << "devshare simulate: " << run.status().message() << "\n";
      return 1;
    }
    results.push_back(std::move(run->front()));
  }
  PrintSummary(*experiment, results, seconds, o.wide);
  PrintQuotas(results);
  PrintPreemption(results);
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << sim::ResultsJson(*experiment, results) << "\n";
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
  CLI::App* sub = app.add_subcommand("simulate",
                                     "run the engine on a simulated cluster: a scenario file, or a "
                                     "shipped scenario (default: 'default')");
  sub->add_option("file", o->file, "a scenario file (YAML)");
  sub->add_option("--scenario", o->scenario, "a shipped scenario (see --list)");
  sub->add_option("--seed", o->seeds, "run with this seed instead of the scenario's (repeatable)");
  sub->add_option("--openb", o->openb,
                  "directory of the openb traces, replacing a scenario's openb.dir (default: "
                  "$DEVSHARE_OPENB; for a scenario naming none, ../shared/data/openb or "
                  "shared/data/openb)");
  sub->add_option("--json", o->json, "also write every run's report as JSON to this file");
  sub->add_flag("--print", o->print, "print the scenario's YAML instead of running it");
  sub->add_flag("--list", o->list, "list the shipped scenarios");
  sub->add_flag("--wide", o->wide,
                "every figure, the API writes by verb and the seconds each variant took (default: "
                "the figures the scenario names, in 120 columns)");
  sub->callback([o, &exit_code] { exit_code = Run(*o); });
}

}  // namespace devshare::cli
