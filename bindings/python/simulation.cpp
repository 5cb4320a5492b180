// The simulator (lib/sim): shipped scenarios, running an experiment, and its
// results as typed objects (ExperimentResults, VariantResult, Report,
// FragmentationSample). ExperimentResults keeps the dict interface simulate()
// used to return (the JSON of `devshare simulate --json`).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "devshare/sim/experiment.hpp"
#include "devshare/sim/simulator.hpp"

namespace devshare::python {

namespace {

// An experiment's results: what ResultsJson needs of the experiment, and
// every variant's reports.
struct ExperimentResults {
  std::string name;
  std::string description;
  std::vector<sim::VariantResult> variants;
};

std::string ResultsJsonOf(const ExperimentResults& r) {
  sim::Experiment experiment;
  experiment.name = r.name;
  experiment.description = r.description;
  return sim::ResultsJson(experiment, r.variants);
}

// simulate's JSON as Python objects.
py::dict FromJson(const std::string& json) {
  return py::dict(py::module_::import("json").attr("loads")(json));
}

py::dict SampleDict(const sim::FragmentationSample& f) {
  return FromJson(sim::FragmentationSampleJson(f));
}

py::dict QuotaDict(const sim::QuotaReport& q) { return FromJson(sim::QuotaReportJson(q)); }

py::dict PreemptionDict(const sim::PreemptionReport& p) {
  return FromJson(sim::PreemptionReportJson(p));
}

// A report's fields under simulate's JSON names, after `out`'s own.
py::dict ReportDict(const sim::Report& r, py::dict out = py::dict()) {
  out.attr("update")(FromJson(sim::ReportJson(r)));
  return out;
}

py::dict VariantDict(const sim::VariantResult& v) {
  py::list runs;
  for (std::size_t i = 0; i < v.reports.size(); ++i) {
    py::dict run;
    run["seed"] = i < v.seeds.size() ? v.seeds[i] : 0;
    runs.append(ReportDict(v.reports[i], std::move(run)));
  }
  py::dict out;
  out["name"] = v.name;
  out["runs"] = std::move(runs);
  return out;
}

py::dict ExperimentDict(const ExperimentResults& r) { return FromJson(ResultsJsonOf(r)); }

void BindResults(py::module_& m) {
  using sim::FragmentationSample;
  using sim::Report;
  py::class_<FragmentationSample> sample(m, "FragmentationSample",
                                         "The cluster when the pods asked a share of its GPUs.");
  sample.def_readonly("demand_percent", &FragmentationSample::demand_percent)
      .def_readonly("allocation_percent", &FragmentationSample::allocation_percent,
                    "GPUs held by running pods / cluster GPUs")
      .def_readonly("gpu_free", &FragmentationSample::gpu_free)
      .def_readonly("gpu_fragmented", &FragmentationSample::gpu_fragmented)
      .def("__repr__", [](const FragmentationSample& f) {
        return Repr("FragmentationSample", {{"demand_percent", py::cast(f.demand_percent)},
                                            {"allocation_percent", py::cast(f.allocation_percent)},
                                            {"gpu_free", py::cast(f.gpu_free)},
                                            {"gpu_fragmented", py::cast(f.gpu_fragmented)}});
      });
  ValueType(sample, SampleDict,
            "{demandPercent, allocationPercent, gpuFree, gpuFragmented} (simulate's JSON "
            "names).");

  py::class_<sim::QuotaReport> quota(
      m, "QuotaReport",
      "One namespace's pods and one device resource its quotas limit (empty: none).");
  quota.def_readonly("namespace", &sim::QuotaReport::pod_namespace)
      .def_readonly("resource", &sim::QuotaReport::resource,
                    "e.g. nvidia.com/gpumem; empty: no device quota")
      .def_readonly("limit", &sim::QuotaReport::limit, "the tightest quota's; -1: none")
      .def_readonly("peak_used", &sim::QuotaReport::peak_used,
                    "the most the namespace's bound pods used at once")
      .def_readonly("bound", &sim::QuotaReport::bound, "the namespace's pods bound at some point")
      .def_readonly("pending", &sim::QuotaReport::pending, "arrived, not bound at the end")
      .def_readonly("pending_quota", &sim::QuotaReport::pending_quota,
                    "of those, refused last for the quota (ResourceQuotaNotFit)")
      .def("__repr__", [](const sim::QuotaReport& q) {
        return Repr("QuotaReport", {{"namespace", py::cast(q.pod_namespace)},
                                    {"resource", py::cast(q.resource)},
                                    {"limit", py::cast(q.limit)},
                                    {"peak_used", py::cast(q.peak_used)}});
      });
  ValueType(quota, QuotaDict,
            "{namespace, resource, limit, peakUsed, bound, pending, pendingQuota} (simulate's "
            "JSON names).");

  py::class_<sim::PreemptionReport> preemption(
      m, "PreemptionReport",
      "Preemption in a run: the high-priority pods (above the lowest priority) and what their "
      "preemptions cost.");
  preemption.def_readonly("high_priority_pods", &sim::PreemptionReport::high_priority_pods)
      .def_readonly("high_priority_bound", &sim::PreemptionReport::high_priority_bound)
      .def_readonly("high_priority_p50_ms", &sim::PreemptionReport::high_priority_p50_ms,
                    "creation to bound (a pod still waiting: its wait so far)")
      .def_readonly("high_priority_p99_ms", &sim::PreemptionReport::high_priority_p99_ms)
      .def_readonly("preemptions", &sim::PreemptionReport::preemptions)
      .def_readonly("victims", &sim::PreemptionReport::victims,
                    "pods whose eviction the Eviction API accepted")
      .def_readonly("evictions_refused", &sim::PreemptionReport::evictions_refused,
                    "429: a budget allowed no disruption")
      .def_readonly("preemptions_abandoned", &sim::PreemptionReport::preemptions_abandoned)
      .def_readonly("memory_freed_beyond_mib", &sim::PreemptionReport::memory_freed_beyond_mib,
                    "per preemption, the victims' GPU memory less the preemptor's, summed")
      .def_readonly("evicted_not_helped", &sim::PreemptionReport::evicted_not_helped,
                    "victims gone whose preemptor is not bound on their node")
      .def_readonly("victims_terminating", &sim::PreemptionReport::victims_terminating)
      .def_readonly("work_lost_gpu_seconds", &sim::PreemptionReport::work_lost_gpu_seconds,
                    "the victims' GPUs times their time from binding to deletion")
      .def("__repr__", [](const sim::PreemptionReport& p) {
        return Repr("PreemptionReport", {{"high_priority_bound", py::cast(p.high_priority_bound)},
                                         {"preemptions", py::cast(p.preemptions)},
                                         {"victims", py::cast(p.victims)},
                                         {"evicted_not_helped", py::cast(p.evicted_not_helped)}});
      });
  ValueType(preemption, PreemptionDict,
            "{highPriorityPods, highPriorityBound, highPriorityP50Ms, highPriorityP99Ms, "
            "preemptions, victims, evictionsRefused, preemptionsAbandoned, memoryFreedBeyondMib, "
            "evictedNotHelped, victimsTerminating, workLostGpuSeconds} (simulate's JSON names).");

  py::class_<Report> report(m, "Report", "One simulated run: what happened, measured.");
  report.def_readonly("pods", &Report::pods, "arrived")
      .def_readonly("bound", &Report::bound, "bound at some point")
      .def_readonly("pending", &Report::pending, "arrived, not bound at the end")
      .def_readonly("pending_reasons", &Report::pending_reasons, "pods by their last reason")
      .def_readonly("gpu_capacity", &Report::gpu_capacity, "devices in the cluster")
      .def_readonly("gpu_allocated", &Report::gpu_allocated, "GPUs held by running pods at the end")
      .def_readonly("allocation_percent", &Report::allocation_percent)
      .def_readonly("allocation_mean_percent", &Report::allocation_mean_percent,
                    "the allocation averaged over the run's time")
      .def_readonly("gpu_free", &Report::gpu_free, "free GPUs at the end")
      .def_readonly("gpu_fragmented", &Report::gpu_fragmented,
                    "of the free GPUs, the part the scenario's pods could not use")
      .def_readonly("fragmentation_percent", &Report::fragmentation_percent)
      .def_readonly("fragmentation_curve", &Report::fragmentation_curve,
                    "a sample per 10 % of the GPUs asked")
      .def_property_readonly(
          "free_by_share",
          [](const Report& r) {
            py::dict by_share;
            for (const sim::FreeShareCount& c : r.free_by_share)
              by_share[py::int_(c.free_milli)] = c.devices;
            return by_share;
          },
          "the devices not full at the end, by free share in thousandths (1000: fully free)")
      .def_readonly("latency_p50_ms", &Report::latency_p50_ms, "creation to bound")
      .def_readonly("latency_p99_ms", &Report::latency_p99_ms)
      .def_readonly("latency_percentiles", &Report::latency_percentiles, "0 % .. 100 %")
      .def_readonly("throttled_ms", &Report::throttled_ms)
      .def_readonly("api_calls", &Report::api_calls, "by verb")
      .def_readonly("rejected_429", &Report::rejected_429)
      .def_readonly("conflicts_409", &Report::conflicts_409)
      .def_readonly("filters_refused", &Report::filters_refused)
      .def_readonly("extender_timeouts", &Report::extender_timeouts)
      .def_readonly("lock_contention", &Report::lock_contention)
      .def_readonly("lock_retries", &Report::lock_retries)
      .def_readonly("binds_failed", &Report::binds_failed)
      .def_readonly("registration_writes", &Report::registration_writes)
      .def_readonly("nodes_dropped", &Report::nodes_dropped)
      .def_readonly("duplicate_registration_writes", &Report::duplicate_registration_writes,
                    "by a replica not holding the Lease")
      .def_readonly("unavailable_ms", &Report::unavailable_ms, "leader crash to the next placement")
      .def_readonly("drift_injected", &Report::drift_injected, "faults injected, by kind")
      .def_readonly("drift_found", &Report::drift_found,
                    "differences the drift audits confirmed, by kind")
      .def_readonly("drift_healed", &Report::drift_healed, "those healed, by kind")
      .def_readonly("cache_mismatched_devices", &Report::cache_mismatched_devices,
                    "devices the leader's cache counts otherwise than the API objects at the end")
      .def_readonly("quotas", &Report::quotas,
                    "with quotas in the scenario: by namespace, then resource")
      .def_readonly("quota_warnings", &Report::quota_warnings,
                    "quota limits ignored (not whole numbers), in words")
      .def_readonly("preemption", &Report::preemption,
                    "preemption: high-priority pods' time to bind, victims, work lost")
      .def_readonly("end_ms", &Report::end_ms)
      .def("__repr__", [](const Report& r) {
        return Repr("Report", {{"pods", py::cast(r.pods)},
                               {"bound", py::cast(r.bound)},
                               {"pending", py::cast(r.pending)},
                               {"allocation_percent", py::cast(r.allocation_percent)},
                               {"latency_p50_ms", py::cast(r.latency_p50_ms)}});
      });
  ValueType(
      report, [](const Report& r) { return ReportDict(r); },
      "The fields under simulate's JSON names (pods, bound, ..., endMs), without the seed.");

  py::class_<sim::VariantResult> variant(m, "VariantResult",
                                         "A variant's runs: one report per seed.");
  variant.def_readonly("name", &sim::VariantResult::name)
      .def_readonly("seeds", &sim::VariantResult::seeds)
      .def_readonly("reports", &sim::VariantResult::reports, "one per seed, in order")
      .def("__repr__", [](const sim::VariantResult& v) {
        return Repr("VariantResult", {{"name", py::cast(v.name)}, {"seeds", py::cast(v.seeds)}});
      });
  ValueType(variant, VariantDict, "{name, runs: [{seed, and the report's fields}]}.");

  py::class_<ExperimentResults> results(m, "ExperimentResults",
                                        "Every variant's runs of a scenario.");
  results.def_readonly("name", &ExperimentResults::name)
      .def_readonly("description", &ExperimentResults::description)
      .def_readonly("variants", &ExperimentResults::variants)
      .def("to_json", &ResultsJsonOf, "The JSON `devshare simulate --json` writes.")
      .def("__repr__", [](const ExperimentResults& r) {
        std::vector<std::string> names;
        for (const sim::VariantResult& v : r.variants) names.push_back(v.name);
        return Repr("ExperimentResults",
                    {{"name", py::cast(r.name)}, {"variants", py::cast(names)}});
      });
  DictCompatible(results, ExperimentDict,
                 "{name, description, variants: [{name, runs: [{seed, and the report's "
                 "fields}]}]}: the JSON of to_json().");
}

// The nodes and pods of one openb run (OpenbScenario) as dicts, in arrival
// order: what the offline bound and the reorderings are computed over.
py::dict OpenbScenarioDict(const sim::Scenario& scenario) {
  py::list nodes;
  for (const sim::NodeSpec& n : scenario.nodes) {
    py::dict d;
    d["name"] = n.name;
    d["gpus"] = n.gpus;
    d["gpu_memory_mib"] = n.gpu_memory_mib;
    d["model"] = n.model;
    d["cpu_milli"] = n.cpu_milli;
    d["memory_mib"] = n.memory_mib;
    nodes.append(std::move(d));
  }
  py::list pods;
  for (const sim::PodSpec& p : scenario.pods) {
    py::dict d;
    d["name"] = p.name;
    d["gpus"] = p.gpus;
    d["gpu_milli"] = p.gpu_milli;
    d["gpu_spec"] = p.gpu_spec;
    d["cpu_milli"] = p.cpu_milli;
    d["memory_mib"] = p.memory_mib;
    d["arrive_ms"] = p.arrive_ms;
    pods.append(std::move(d));
  }
  py::dict out;
  out["nodes"] = std::move(nodes);
  out["pods"] = std::move(pods);
  return out;
}

}  // namespace

void BindSimulation(py::module_& m) {
  BindResults(m);
  m.def("_builtin_scenarios", [] {
    std::vector<std::string> names;
    for (std::string_view name : sim::BuiltinScenarioNames()) names.emplace_back(name);
    return names;
  });
  m.def("_builtin_scenario",
        [](const std::string& name) { return std::string(Unwrap(sim::BuiltinScenario(name))); });
  m.def(
      "_run_experiment",
      [](const std::string& yaml, const std::string& what, const std::string& base_dir,
         const std::string& openb_dir, const std::string& openb_default_dir,
         const std::optional<std::vector<std::uint64_t>>& seeds) {
        sim::LoadOptions load;
        load.what = what;
        load.base_dir = base_dir;
        load.openb_dir = openb_dir;
        load.openb_default_dir = openb_default_dir;
        load.read = [](const std::string& path) -> Result<std::string> {
          std::ifstream in(path, std::ios::binary);
          if (!in) return Status::NotFound(fmt::format("cannot read {}", path));
          std::ostringstream text;
          text << in.rdbuf();
          return text.str();
        };
        sim::Experiment experiment = Unwrap(sim::ParseExperiment(yaml, load));
        if (seeds) experiment.seeds = *seeds;
        Result<std::vector<sim::VariantResult>> run = Status();
        {
          py::gil_scoped_release release;
          run = sim::RunExperiment(experiment);
        }
        return ExperimentResults{experiment.name, experiment.description, Unwrap(std::move(run))};
      },
      py::arg("yaml"), py::arg("what"), py::arg("base_dir"), py::arg("openb_dir"),
      py::arg("openb_default_dir"), py::arg("seeds"));
  m.def(
      "_openb_scenario",
      [](const std::string& nodes_csv, const std::string& pods_csv, double demand,
         std::uint64_t seed) {
        return OpenbScenarioDict(Unwrap(sim::OpenbScenario(nodes_csv, pods_csv, demand, seed)));
      },
      py::arg("nodes_csv"), py::arg("pods_csv"), py::arg("demand"), py::arg("seed"));
}

}  // namespace devshare::python
