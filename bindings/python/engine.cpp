// The Engine (devshare/engine/engine.hpp): the sans-I/O scheduler service,
// driven from Python. Events go in as method calls; the commands it emits
// come back as lists of typed objects (PatchNode, PatchPod, PostBinding,
// FilterReply, BindReply; under preemption EvictPod, NominatePod, PodEvent).
#include "devshare/engine/engine.hpp"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"
#include "devshare/engine/engine_options.hpp"
#include "devshare/lease.hpp"

namespace devshare::python {

namespace {

using engine::BindReply;
using engine::Command;
using engine::Counters;
using engine::EvictPod;
using engine::FilterReply;
using engine::NominatePod;
using engine::PatchNode;
using engine::PatchPod;
using engine::PodEvent;
using engine::PostBinding;

py::list WritesList(const std::vector<AnnotationWrite>& writes) {
  py::list out;
  for (const AnnotationWrite& w : writes) {
    py::dict d;
    d["key"] = w.key;
    d["value"] = py::cast(w.value);
    out.append(std::move(d));
  }
  return out;
}

py::dict FailedDict(const std::vector<NodeFailure>& failed) {
  py::dict out;
  for (const NodeFailure& f : failed) out[py::str(f.node)] = f.reason;
  return out;
}

py::dict PatchNodeDict(const PatchNode& c) {
  py::dict out;
  out["id"] = c.id;
  out["node"] = c.node;
  out["writes"] = WritesList(c.writes);
  out["preconditions"] = WritesList(c.preconditions);
  out["resource_version"] = c.resource_version;
  out["registration"] = c.registration;
  return out;
}

py::dict PatchPodDict(const PatchPod& c) {
  py::dict out;
  out["id"] = c.id;
  out["pod_namespace"] = c.pod_namespace;
  out["name"] = c.name;
  out["annotations"] = ToDict(c.annotations);
  return out;
}

py::dict PostBindingDict(const PostBinding& c) {
  py::dict out;
  out["id"] = c.id;
  out["pod_namespace"] = c.pod_namespace;
  out["name"] = c.name;
  out["uid"] = c.uid;
  out["node"] = c.node;
  out["annotations"] = ToDict(c.annotations);
  return out;
}

py::dict FilterReplyDict(const FilterReply& c) {
  py::dict out;
  out["request"] = c.request;
  out["nodes"] = py::cast(c.nodes);
  out["failed"] = FailedDict(c.failed);
  out["error"] = c.error;
  out["unresolvable"] = FailedDict(c.unresolvable);
  return out;
}

py::dict EvictPodDict(const EvictPod& c) {
  py::dict out;
  out["id"] = c.id;
  out["pod_namespace"] = c.pod_namespace;
  out["name"] = c.name;
  out["uid"] = c.uid;
  return out;
}

py::dict NominatePodDict(const NominatePod& c) {
  py::dict out;
  out["pod_namespace"] = c.pod_namespace;
  out["name"] = c.name;
  out["uid"] = c.uid;
  out["node"] = c.node;
  return out;
}

py::dict PodEventDict(const PodEvent& c) {
  py::dict out;
  out["pod_namespace"] = c.pod_namespace;
  out["name"] = c.name;
  out["uid"] = c.uid;
  out["reason"] = c.reason;
  out["message"] = c.message;
  return out;
}

py::dict BindReplyDict(const BindReply& c) {
  py::dict out;
  out["request"] = c.request;
  out["error"] = c.error;
  return out;
}

// The counters in declaration order, for to_dict and __repr__.
std::vector<std::pair<const char*, std::uint64_t>> CounterFields(const Counters& c) {
  return {{"filters", c.filters},
          {"filters_refused", c.filters_refused},
          {"filters_placed", c.filters_placed},
          {"filters_unschedulable", c.filters_unschedulable},
          {"binds", c.binds},
          {"binds_failed", c.binds_failed},
          {"lock_contention", c.lock_contention},
          {"lock_retries", c.lock_retries},
          {"filters_around_locks", c.filters_around_locks},
          {"filters_held", c.filters_held},
          {"filters_hold_expired", c.filters_hold_expired},
          {"node_patches", c.node_patches},
          {"pod_patches", c.pod_patches},
          {"bindings", c.bindings},
          {"registration_passes", c.registration_passes},
          {"registration_writes", c.registration_writes},
          {"nodes_dropped", c.nodes_dropped},
          {"preemptions", c.preemptions},
          {"preemption_victims", c.preemption_victims},
          {"evictions_failed", c.evictions_failed},
          {"preemptions_placed", c.preemptions_placed},
          {"preemptions_abandoned", c.preemptions_abandoned},
          {"preemptions_refused", c.preemptions_refused},
          {"retries_requested", c.retries_requested}};
}

py::dict CountersDict(const Counters& c) {
  py::dict out;
  for (const auto& [name, value] : CounterFields(c)) out[name] = value;
  return out;
}

// The engine with a lock of its own: every call runs with the GIL released
// and the lock held, so Python threads may share one engine, and a long
// registration pass or Filter does not stop the other threads. Arguments are
// converted before, and results after, with the GIL held.
class PyEngine {
 public:
  explicit PyEngine(engine::EngineOptions options) : engine_(std::move(options)) {}

  std::vector<Command> NodeObserved(const std::string& node_json, std::int64_t now_ms) {
    const Node node = Unwrap(DecodeNode(node_json));
    return Emit([&](std::vector<Command>& out) { engine_.NodeObserved(node, now_ms, out); });
  }
  void NodeDeleted(const std::string& name) {
    Run([&] { engine_.NodeDeleted(name); });
  }
  void PodObserved(const std::string& pod_json) {
    const Pod pod = Unwrap(DecodePod(pod_json));
    Run([&] { engine_.PodObserved(pod); });
  }
  void PodDeleted(const std::string& uid) {
    Run([&] { engine_.PodDeleted(uid); });
  }
  void QuotaObserved(const std::string& quota_json) {
    const ResourceQuota quota = Unwrap(DecodeResourceQuota(quota_json));
    Run([&] { engine_.ResourceQuotaObserved(quota); });
  }
  void QuotaDeleted(const std::string& quota_namespace, const std::string& name) {
    Run([&] { engine_.ResourceQuotaDeleted(quota_namespace, name); });
  }
  void BudgetObserved(const std::string& budget_json) {
    const PodDisruptionBudget budget = Unwrap(DecodePodDisruptionBudget(budget_json));
    Run([&] { engine_.PodDisruptionBudgetObserved(budget); });
  }
  void BudgetDeleted(const std::string& budget_namespace, const std::string& name) {
    Run([&] { engine_.PodDisruptionBudgetDeleted(budget_namespace, name); });
  }
  // Per node: (victim UIDs, budget violations), both ways.
  using Proposal = std::map<std::string, std::pair<std::vector<std::string>, std::int64_t>>;
  Proposal ExtenderPreempt(const std::string& pod_json, const Proposal& proposed,
                           std::int64_t now_ms) const {
    const Pod pod = Unwrap(DecodePod(pod_json));
    std::map<std::string, engine::NodeVictims> in;
    for (const auto& [node, victims] : proposed) in[node] = {victims.first, victims.second};
    const auto answer = Unwrap(Run([&] { return engine_.ExtenderPreempt(pod, in, now_ms); }));
    Proposal out;
    for (const auto& [node, victims] : answer)
      out[node] = {victims.uids, victims.budget_violations};
    return out;
  }
  py::dict Preemptions() const {
    const std::map<std::string, engine::Preemption> all =
        Run([&] { return engine_.preemptions(); });
    py::dict out;
    for (const auto& [uid, p] : all) {
      py::dict d;
      d["namespace"] = p.pod_namespace;
      d["name"] = p.name;
      d["node"] = p.node;
      d["victims"] = py::cast(p.victims);
      d["started_ms"] = p.started_ms;
      d["victims_gone_ms"] = py::cast(p.victims_gone_ms);
      out[py::str(uid)] = std::move(d);
    }
    return out;
  }
  std::vector<Command> LeaseObserved(const std::optional<std::string>& lease_json,
                                     std::int64_t now_ms) {
    std::optional<LeaseRecord> lease;
    if (lease_json) lease = Unwrap(DecodeLease(*lease_json));
    return Emit([&](std::vector<Command>& out) { engine_.LeaseObserved(lease, now_ms, out); });
  }
  std::vector<Command> Tick(std::int64_t now_ms) {
    return Emit([&](std::vector<Command>& out) { engine_.Tick(now_ms, out); });
  }
  std::optional<std::int64_t> NextWakeMs() const {
    return Run([&] { return engine_.NextWakeMs(); });
  }
  std::vector<Command> Filter(std::uint64_t request, const std::string& pod_json,
                              const std::vector<std::string>& nodes, std::int64_t now_ms) {
    const Pod pod = Unwrap(DecodePod(pod_json));
    return Emit(
        [&](std::vector<Command>& out) { engine_.Filter(request, pod, nodes, now_ms, out); });
  }
  std::vector<Command> Bind(std::uint64_t request, const std::string& pod_namespace,
                            const std::string& name, const std::string& uid,
                            const std::string& node, std::int64_t now_ms) {
    return Emit([&](std::vector<Command>& out) {
      engine_.Bind(request, pod_namespace, name, uid, node, now_ms, out);
    });
  }
  std::vector<NodeScore> Prioritize(const std::string& pod_json,
                                    const std::vector<std::string>& nodes,
                                    std::int64_t now_ms) const {
    const Pod pod = Unwrap(DecodePod(pod_json));
    return Unwrap(Run([&] { return engine_.Prioritize(pod, nodes, now_ms); }));
  }
  std::vector<Command> ApiResult(std::uint64_t id, bool succeeded, std::int64_t now_ms) {
    return Emit([&](std::vector<Command>& out) { engine_.ApiResult(id, succeeded, now_ms, out); });
  }
  bool Ready(std::int64_t now_ms) const {
    return Run([&] { return engine_.Ready(now_ms); });
  }
  Counters counters() const {
    return Run([&] { return engine_.counters(); });
  }
  std::map<std::string, std::string> node_errors() const {
    return Run([&] { return engine_.node_errors(); });
  }
  std::map<std::string, std::string> pod_errors() const {
    return Run([&] { return engine_.pod_errors(); });
  }
  std::map<std::string, std::string> quota_errors() const {
    return Run([&] { return engine_.quota_errors(); });
  }
  std::vector<QuotaUse> Quotas() const {
    return Run([&] { return engine_.snapshot().Quotas(); });
  }
  std::vector<std::string> NodeNames() const {
    return Run([&] { return engine_.snapshot().NodeNames(); });
  }
  std::vector<DeviceView> NodeDevices(const std::string& name) const {
    return Unwrap(Run([&] { return engine_.snapshot().NodeDevices(name); }));
  }

 private:
  // `f()` with the GIL released and the engine's lock held.
  template <typename F>
  std::invoke_result_t<F&> Run(F&& f) const {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    return f();
  }
  // The commands `f(out)` emits.
  template <typename F>
  std::vector<Command> Emit(F&& f) {
    std::vector<Command> out;
    Run([&] { f(out); });
    return out;
  }

  mutable std::mutex mutex_;
  engine::Engine engine_;
};

void BindCommands(py::module_& m) {
  py::class_<PatchNode> patch_node(m, "PatchNode",
                                   "Command: patch a node's annotations (then report api_result).");
  patch_node.def_readonly("id", &PatchNode::id, "ties the command to its api_result")
      .def_readonly("node", &PatchNode::node)
      .def_readonly("writes", &PatchNode::writes, "the annotation writes, in order")
      .def_readonly("preconditions", &PatchNode::preconditions,
                    "what each key must hold when written (value None: absent); a mismatch or "
                    "a 409 is a failure")
      .def_readonly("resource_version", &PatchNode::resource_version,
                    "the node's version the preconditions were checked at (empty: unknown); "
                    "on a 409 a driver reads the node and checks again")
      .def_readonly("registration", &PatchNode::registration,
                    "a registration (handshake) write, which a newer one for the node may replace")
      .def("__repr__", [](const PatchNode& c) {
        return Repr("PatchNode", {{"id", py::cast(c.id)},
                                  {"node", py::cast(c.node)},
                                  {"writes", py::cast(c.writes)},
                                  {"preconditions", py::cast(c.preconditions)},
                                  {"resource_version", py::cast(c.resource_version)},
                                  {"registration", py::cast(c.registration)}});
      });
  ValueType(patch_node, PatchNodeDict,
            "{id, node, writes: [{key, value}], preconditions: [{key, value}], resource_version, "
            "registration}.");

  py::class_<PatchPod> patch_pod(m, "PatchPod",
                                 "Command: patch a pod's annotations (then report api_result).");
  patch_pod.def_readonly("id", &PatchPod::id, "ties the command to its api_result")
      .def_readonly("pod_namespace", &PatchPod::pod_namespace)
      .def_readonly("name", &PatchPod::name)
      .def_property_readonly(
          "annotations", [](const PatchPod& c) { return ToDict(c.annotations); },
          "the annotations to set")
      .def("__repr__", [](const PatchPod& c) {
        return Repr("PatchPod", {{"id", py::cast(c.id)},
                                 {"pod_namespace", py::cast(c.pod_namespace)},
                                 {"name", py::cast(c.name)},
                                 {"annotations", ToDict(c.annotations)}});
      });
  ValueType(patch_pod, PatchPodDict, "{id, pod_namespace, name, annotations}.");

  py::class_<PostBinding> binding(m, "PostBinding",
                                  "Command: post the pod's Binding (then report api_result).");
  binding.def_readonly("id", &PostBinding::id, "ties the command to its api_result")
      .def_readonly("pod_namespace", &PostBinding::pod_namespace)
      .def_readonly("name", &PostBinding::name)
      .def_readonly("uid", &PostBinding::uid)
      .def_readonly("node", &PostBinding::node)
      .def_property_readonly(
          "annotations", [](const PostBinding& c) { return ToDict(c.annotations); },
          "lock-free binding: the device assignment the Binding carries")
      .def("__repr__", [](const PostBinding& c) {
        return Repr("PostBinding", {{"id", py::cast(c.id)},
                                    {"pod_namespace", py::cast(c.pod_namespace)},
                                    {"name", py::cast(c.name)},
                                    {"uid", py::cast(c.uid)},
                                    {"node", py::cast(c.node)},
                                    {"annotations", ToDict(c.annotations)}});
      });
  ValueType(binding, PostBindingDict, "{id, pod_namespace, name, uid, node, annotations}.");

  py::class_<FilterReply> filter_reply(m, "FilterReply",
                                       "Command: answer the filter request `request`.");
  filter_reply.def_readonly("request", &FilterReply::request)
      .def_readonly("nodes", &FilterReply::nodes,
                    "the nodes kept: the chosen one, or all for a pod asking no device")
      .def_property_readonly(
          "failed", [](const FilterReply& c) { return FailedDict(c.failed); },
          "node -> reason, for every rejected node")
      .def_readonly("error", &FilterReply::error, "non-empty: the extender's Error field")
      .def_property_readonly(
          "unresolvable", [](const FilterReply& c) { return FailedDict(c.unresolvable); },
          "node -> reason, for the nodes where no eviction of a lower-priority pod would help "
          "(under preemption; `failed` then holds the others)")
      .def("__repr__", [](const FilterReply& c) {
        return Repr("FilterReply", {{"request", py::cast(c.request)},
                                    {"nodes", py::cast(c.nodes)},
                                    {"failed", FailedDict(c.failed)},
                                    {"error", py::cast(c.error)},
                                    {"unresolvable", FailedDict(c.unresolvable)}});
      });
  ValueType(filter_reply, FilterReplyDict, "{request, nodes, failed, error, unresolvable}.");

  py::class_<BindReply> bind_reply(m, "BindReply", "Command: answer the bind request `request`.");
  bind_reply.def_readonly("request", &BindReply::request)
      .def_readonly("error", &BindReply::error, "empty when bound")
      .def("__repr__", [](const BindReply& c) {
        return Repr("BindReply", {{"request", py::cast(c.request)}, {"error", py::cast(c.error)}});
      });
  ValueType(bind_reply, BindReplyDict, "{request, error}.");

  py::class_<EvictPod> evict(m, "EvictPod",
                             "Command: evict a victim through the Eviction API, its UID as "
                             "precondition (then report api_result; a 404 is a success).");
  evict.def_readonly("id", &EvictPod::id, "ties the command to its api_result")
      .def_readonly("pod_namespace", &EvictPod::pod_namespace)
      .def_readonly("name", &EvictPod::name)
      .def_readonly("uid", &EvictPod::uid)
      .def("__repr__", [](const EvictPod& c) {
        return Repr("EvictPod", {{"id", py::cast(c.id)},
                                 {"pod_namespace", py::cast(c.pod_namespace)},
                                 {"name", py::cast(c.name)},
                                 {"uid", py::cast(c.uid)}});
      });
  ValueType(evict, EvictPodDict, "{id, pod_namespace, name, uid}.");

  py::class_<NominatePod> nominate(
      m, "NominatePod", "Command: set the preemptor's status.nominatedNodeName (no result).");
  nominate.def_readonly("pod_namespace", &NominatePod::pod_namespace)
      .def_readonly("name", &NominatePod::name)
      .def_readonly("uid", &NominatePod::uid)
      .def_readonly("node", &NominatePod::node)
      .def("__repr__", [](const NominatePod& c) {
        return Repr("NominatePod", {{"pod_namespace", py::cast(c.pod_namespace)},
                                    {"name", py::cast(c.name)},
                                    {"uid", py::cast(c.uid)},
                                    {"node", py::cast(c.node)}});
      });
  ValueType(nominate, NominatePodDict, "{pod_namespace, name, uid, node}.");

  py::class_<PodEvent> event(m, "PodEvent", "Command: a Warning Event on the pod (no result).");
  event.def_readonly("pod_namespace", &PodEvent::pod_namespace)
      .def_readonly("name", &PodEvent::name)
      .def_readonly("uid", &PodEvent::uid)
      .def_readonly("reason", &PodEvent::reason)
      .def_readonly("message", &PodEvent::message)
      .def("__repr__", [](const PodEvent& c) {
        return Repr("PodEvent", {{"pod_namespace", py::cast(c.pod_namespace)},
                                 {"name", py::cast(c.name)},
                                 {"reason", py::cast(c.reason)},
                                 {"message", py::cast(c.message)}});
      });
  ValueType(event, PodEventDict, "{pod_namespace, name, uid, reason, message}.");

  py::class_<Counters> counters(m, "Counters", "What an Engine did, counted since it started.");
  counters.def_readonly("filters", &Counters::filters)
      .def_readonly("filters_refused", &Counters::filters_refused, "not ready")
      .def_readonly("filters_placed", &Counters::filters_placed)
      .def_readonly("filters_unschedulable", &Counters::filters_unschedulable)
      .def_readonly("binds", &Counters::binds)
      .def_readonly("binds_failed", &Counters::binds_failed)
      .def_readonly("lock_contention", &Counters::lock_contention)
      .def_readonly("lock_retries", &Counters::lock_retries)
      .def_readonly("filters_around_locks", &Counters::filters_around_locks,
                    "placements among the unlocked nodes while a candidate was locked")
      .def_readonly("filters_held", &Counters::filters_held,
                    "Filters held back while the binds in flight had the client's writes busy")
      .def_readonly("filters_hold_expired", &Counters::filters_hold_expired,
                    "held Filters refused at the end of the hold")
      .def_readonly("node_patches", &Counters::node_patches)
      .def_readonly("pod_patches", &Counters::pod_patches)
      .def_readonly("bindings", &Counters::bindings)
      .def_readonly("registration_passes", &Counters::registration_passes)
      .def_readonly("registration_writes", &Counters::registration_writes)
      .def_readonly("nodes_dropped", &Counters::nodes_dropped)
      .def_readonly("preemptions", &Counters::preemptions, "pods that began a preemption")
      .def_readonly("preemption_victims", &Counters::preemption_victims, "pods evicted")
      .def_readonly("evictions_failed", &Counters::evictions_failed)
      .def_readonly("preemptions_placed", &Counters::preemptions_placed,
                    "preempting pods placed on what was freed")
      .def_readonly("preemptions_abandoned", &Counters::preemptions_abandoned)
      .def_readonly("preemptions_refused", &Counters::preemptions_refused,
                    "Filters of pods that found no room and could not preempt")
      .def_readonly("retries_requested", &Counters::retries_requested,
                    "pods annotated to be tried again after a deletion freed devices")
      .def("__repr__", [](const Counters& c) {
        std::string out = "Counters(";
        bool first = true;
        for (const auto& [name, value] : CounterFields(c)) {
          out += fmt::format("{}{}={}", first ? "" : ", ", name, value);
          first = false;
        }
        return out + ")";
      });
  ValueType(counters, CountersDict, "Every counter by name.");
}

}  // namespace

void BindEngine(py::module_& m) {
  BindCommands(m);
  py::class_<PyEngine, std::unique_ptr<PyEngine>>(m, "_Engine")
      .def(py::init([](const std::optional<std::string>& config, const std::string& node_policy,
                       const std::string& gpu_policy, const std::vector<WorkloadTuple>& workload,
                       bool reasons, const std::string& hami_exact, const std::string& registration,
                       const std::string& leadership, const std::string& hostname,
                       const std::string& bind_mode, const std::string& lock_retry,
                       std::int64_t lock_retry_timeout_ms, bool avoid_locked_nodes,
                       const std::string& pod_writes, double api_qps, std::int64_t bind_budget_ms,
                       std::int64_t filter_hold_ms, std::int64_t lock_timeout_seconds,
                       std::int64_t lock_grace_seconds, std::uint64_t seed,
                       std::int64_t register_period_ms, std::int32_t zone_offset_seconds,
                       bool preemption, std::int64_t preemption_hold_ms,
                       std::int64_t preemption_timeout_ms) {
             engine::EngineOptions base;
             base.config = ConfigFrom(config);
             base.filter =
                 FilterOptionsFrom(node_policy, gpu_policy, workload, reasons, hami_exact);
             const engine::EngineOption named[] = {
                 {"registration", registration},
                 {"leadership", leadership},
                 {"hostname", hostname},
                 {"bind_mode", bind_mode},
                 {"lock_retry", lock_retry},
                 {"lock_retry_timeout_ms", std::to_string(lock_retry_timeout_ms)},
                 {"avoid_locked_nodes", avoid_locked_nodes ? "true" : "false"},
                 {"pod_writes", pod_writes},
                 {"api_qps", fmt::format("{}", api_qps)},
                 {"bind_budget_ms", std::to_string(bind_budget_ms)},
                 {"filter_hold_ms", std::to_string(filter_hold_ms)},
                 {"lock_timeout_seconds", std::to_string(lock_timeout_seconds)},
                 {"lock_grace_seconds", std::to_string(lock_grace_seconds)},
                 {"seed", std::to_string(seed)},
                 {"register_period_ms", std::to_string(register_period_ms)},
                 {"zone_offset_seconds", std::to_string(zone_offset_seconds)},
                 {"preemption", preemption ? "true" : "false"},
                 {"preemption_hold_ms", std::to_string(preemption_hold_ms)},
                 {"preemption_timeout_ms", std::to_string(preemption_timeout_ms)}};
             engine::EngineOptions o = Unwrap(engine::BuildEngineOptions(named, std::move(base)));
             return std::make_unique<PyEngine>(std::move(o));
           }),
           py::arg("config"), py::arg("node_policy"), py::arg("gpu_policy"), py::arg("workload"),
           py::arg("reasons"), py::arg("hami_exact"), py::arg("registration"),
           py::arg("leadership"), py::arg("hostname"), py::arg("bind_mode"), py::arg("lock_retry"),
           py::arg("lock_retry_timeout_ms"), py::arg("avoid_locked_nodes"), py::arg("pod_writes"),
           py::arg("api_qps"), py::arg("bind_budget_ms"), py::arg("filter_hold_ms"),
           py::arg("lock_timeout_seconds"), py::arg("lock_grace_seconds"), py::arg("seed"),
           py::arg("register_period_ms"), py::arg("zone_offset_seconds"), py::arg("preemption"),
           py::arg("preemption_hold_ms"), py::arg("preemption_timeout_ms"))
      .def("node_observed", &PyEngine::NodeObserved, py::arg("node_json"), py::arg("now_ms"))
      .def("node_deleted", &PyEngine::NodeDeleted, py::arg("name"))
      .def("pod_observed", &PyEngine::PodObserved, py::arg("pod_json"))
      .def("pod_deleted", &PyEngine::PodDeleted, py::arg("uid"))
      .def("quota_observed", &PyEngine::QuotaObserved, py::arg("quota_json"))
      .def("quota_deleted", &PyEngine::QuotaDeleted, py::arg("namespace"), py::arg("name"))
      .def("budget_observed", &PyEngine::BudgetObserved, py::arg("budget_json"))
      .def("budget_deleted", &PyEngine::BudgetDeleted, py::arg("namespace"), py::arg("name"))
      .def("extender_preempt", &PyEngine::ExtenderPreempt, py::arg("pod_json"), py::arg("proposed"),
           py::arg("now_ms"))
      .def("preemptions", &PyEngine::Preemptions)
      .def("lease_observed", &PyEngine::LeaseObserved, py::arg("lease_json"), py::arg("now_ms"))
      .def("tick", &PyEngine::Tick, py::arg("now_ms"))
      .def("next_wake_ms", &PyEngine::NextWakeMs)
      .def("filter", &PyEngine::Filter, py::arg("request"), py::arg("pod_json"), py::arg("nodes"),
           py::arg("now_ms"))
      .def("bind", &PyEngine::Bind, py::arg("request"), py::arg("pod_namespace"), py::arg("name"),
           py::arg("uid"), py::arg("node"), py::arg("now_ms"))
      .def("prioritize", &PyEngine::Prioritize, py::arg("pod_json"), py::arg("nodes"),
           py::arg("now_ms"))
      .def("api_result", &PyEngine::ApiResult, py::arg("id"), py::arg("succeeded"),
           py::arg("now_ms"))
      .def("ready", &PyEngine::Ready, py::arg("now_ms"))
      .def("counters", &PyEngine::counters)
      .def("node_errors", &PyEngine::node_errors)
      .def("pod_errors", &PyEngine::pod_errors)
      .def("quota_errors", &PyEngine::quota_errors)
      .def("quotas", &PyEngine::Quotas)
      .def("node_names", &PyEngine::NodeNames)
      .def("node_devices", &PyEngine::NodeDevices, py::arg("name"));
}

}  // namespace devshare::python
