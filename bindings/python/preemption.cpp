// PlanPreemption's results (devshare/preemption.hpp) as Python values; the
// plan itself is Cluster.plan_preemption (module.cpp).
#include "devshare/preemption.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common.hpp"

namespace devshare::python {

namespace {

py::dict VictimDict(const PreemptionVictim& v) {
  py::dict out;
  out["namespace"] = v.pod_namespace;
  out["name"] = v.name;
  out["uid"] = v.uid;
  out["priority"] = v.priority;
  out["violates_budget"] = v.violates_budget;
  return out;
}

py::dict CandidateDict(const PreemptionCandidate& c) {
  py::list victims;
  for (const PreemptionVictim& v : c.victims) victims.append(VictimDict(v));
  py::dict out;
  out["node"] = c.node;
  out["victims"] = victims;
  out["budget_violations"] = c.budget_violations;
  out["devices"] = DevicesToPython(c.devices);
  return out;
}

py::dict PlanDict(const PreemptionPlan& p) {
  py::list candidates;
  for (const PreemptionCandidate& c : p.candidates) candidates.append(CandidateDict(c));
  py::dict unresolvable;
  for (const NodeFailure& f : p.unresolvable) unresolvable[py::str(f.node)] = f.reason;
  py::dict out;
  out["candidates"] = candidates;
  out["unresolvable"] = unresolvable;
  out["refused"] = p.refused;
  return out;
}

}  // namespace

void BindPreemption(py::module_& m) {
  py::class_<PreemptionVictim> victim(m, "PreemptionVictim", "A pod a preemption would evict.");
  victim.def_readonly("namespace", &PreemptionVictim::pod_namespace)
      .def_readonly("name", &PreemptionVictim::name)
      .def_readonly("uid", &PreemptionVictim::uid)
      .def_readonly("priority", &PreemptionVictim::priority)
      .def_readonly("violates_budget", &PreemptionVictim::violates_budget,
                    "its eviction exceeds a PodDisruptionBudget")
      .def("__repr__", [](const PreemptionVictim& v) {
        return Repr("PreemptionVictim", {{"namespace", py::cast(v.pod_namespace)},
                                         {"name", py::cast(v.name)},
                                         {"priority", py::cast(v.priority)}});
      });
  ValueType(victim, VictimDict, "{namespace, name, uid, priority, violates_budget}.");

  py::class_<PreemptionCandidate> candidate(m, "PreemptionCandidate",
                                            "A node where evicting `victims` lets the pod fit.");
  candidate.def_readonly("node", &PreemptionCandidate::node)
      .def_readonly("victims", &PreemptionCandidate::victims, "most important first")
      .def_readonly("budget_violations", &PreemptionCandidate::budget_violations)
      .def_property_readonly(
          "devices", [](const PreemptionCandidate& c) { return DevicesToPython(c.devices); },
          "what the pod takes there: vendor -> per-container lists of ContainerDevice")
      .def("__repr__", [](const PreemptionCandidate& c) {
        return Repr("PreemptionCandidate", {{"node", py::cast(c.node)},
                                            {"victims", py::cast(c.victims.size())},
                                            {"budget_violations", py::cast(c.budget_violations)}});
      });
  ValueType(candidate, CandidateDict,
            "{node, victims: [PreemptionVictim.to_dict()], "
            "budget_violations, devices}.");

  py::class_<PreemptionPlan> plan(m, "PreemptionPlan",
                                  "Where a pod that fits nowhere would go by evicting "
                                  "lower-priority pods, and which.");
  plan.def_readonly("candidates", &PreemptionPlan::candidates, "best first")
      .def_property_readonly(
          "chosen",
          [](const PreemptionPlan& p) -> py::object {
            return p.chosen() == nullptr ? py::none() : py::cast(*p.chosen());
          },
          "the best candidate, or None")
      .def_property_readonly(
          "unresolvable",
          [](const PreemptionPlan& p) {
            py::dict out;
            for (const NodeFailure& f : p.unresolvable) out[py::str(f.node)] = f.reason;
            return out;
          },
          "node -> why no eviction there helps")
      .def_readonly("refused", &PreemptionPlan::refused,
                    "why the pod may not preempt at all, or empty")
      .def("__repr__", [](const PreemptionPlan& p) {
        return Repr("PreemptionPlan",
                    {{"chosen", p.chosen() == nullptr ? py::none() : py::cast(p.chosen()->node)},
                     {"candidates", py::cast(p.candidates.size())},
                     {"refused", py::cast(p.refused)}});
      });
  ValueType(plan, PlanDict,
            "{candidates: [PreemptionCandidate.to_dict()], unresolvable, refused}.");
}

}  // namespace devshare::python
