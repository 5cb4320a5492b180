// The small annotation values (node lock, handshake, scoring weights) and the
// protocol state machines (registration, node lock, leases) as typed results.
// The results that used to be dicts keep the dict interface (DictCompatible).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>

#include "common.hpp"
#include "devshare/annotations.hpp"
#include "devshare/handshake.hpp"
#include "devshare/lease.hpp"
#include "devshare/nodelock.hpp"
#include "devshare/volcano_lock.hpp"

namespace devshare::python {

namespace {

// A write as the dicts always gave it: {key: value or None}, {} for none.
py::dict WriteDict(const std::optional<AnnotationWrite>& w) {
  py::dict d;
  if (w) d[py::str(w->key)] = w->value ? py::object(py::str(*w->value)) : py::object(py::none());
  return d;
}

std::string LeaderEventName(LeaderEvent e) {
  switch (e) {
    case LeaderEvent::kStartedLeading:
      return "started_leading";
    case LeaderEvent::kStoppedLeading:
      return "stopped_leading";
    case LeaderEvent::kNone:
      break;
  }
  return "none";
}

std::optional<LeaseRecord> LeaseFrom(const std::optional<std::string>& json) {
  if (!json) return std::nullopt;
  return Unwrap(DecodeLease(*json));
}

std::string LockActionName(LockAction a) {
  switch (a) {
    case LockAction::kSet:
      return "set";
    case LockAction::kReentrant:
      return "reentrant";
    case LockAction::kTakeOver:
      return "take_over";
    case LockAction::kCheckHolder:
      return "check_holder";
    case LockAction::kHeld:
      return "held";
  }
  return "held";
}

std::string ElectionActionName(ElectionAction a) {
  switch (a) {
    case ElectionAction::kCreate:
      return "create";
    case ElectionAction::kAcquire:
      return "acquire";
    case ElectionAction::kRenew:
      return "renew";
    case ElectionAction::kStepDown:
      return "step_down";
    case ElectionAction::kNone:
      break;
  }
  return "none";
}

// The Lease an election decision writes, as JSON text, or None.
py::object DecisionLease(const ElectionDecision& d) {
  const bool writes = d.action == ElectionAction::kCreate || d.action == ElectionAction::kAcquire ||
                      d.action == ElectionAction::kRenew;
  return writes ? py::object(py::str(EncodeLease(d.lease))) : py::object(py::none());
}

py::object OwnerField(const NodeLock& l, const std::string& value) {
  return l.has_owner ? py::object(py::str(value)) : py::object(py::none());
}

py::dict NodeLockDict(const NodeLock& l) {
  py::dict out;
  out["unix_seconds"] = l.unix_seconds;
  out["utc_offset_seconds"] = l.utc_offset_seconds;
  out["namespace"] = OwnerField(l, l.pod_namespace);
  out["name"] = OwnerField(l, l.pod_name);
  return out;
}

std::string DialectName(HandshakeDialect d) {
  return d == HandshakeDialect::kHami ? "hami" : "volcano";
}

py::dict HandshakeDict(const Handshake& h) {
  py::dict out;
  out["state"] = std::string(HandshakeStateName(h.state));
  out["dialect"] = DialectName(h.dialect);
  out["unix_seconds"] = py::cast(h.unix_seconds);
  return out;
}

py::dict WeightsDict(const ScoringWeights& w) {
  py::dict out;
  out["slot"] = w.slot;
  out["core"] = w.core;
  out["memory"] = w.memory;
  return out;
}

py::dict StepDict(const RegistrationStep& step) {
  py::dict out;
  out["usable"] = step.usable;
  out["refresh"] = step.refresh;
  out["write"] = WriteDict(step.write);
  return out;
}

py::dict LockDecisionDict(const LockDecision& d) {
  py::dict out;
  out["action"] = LockActionName(d.action);
  out["write"] = WriteDict(d.write);
  out["reason"] = d.reason;
  return out;
}

py::dict ElectionDecisionDict(const ElectionDecision& d) {
  py::dict out;
  out["action"] = ElectionActionName(d.action);
  out["lease"] = DecisionLease(d);
  return out;
}

void BindValues(py::module_& m) {
  py::class_<AnnotationWrite> write(
      m, "AnnotationWrite",
      "One annotation write: set `key` to `value`, or delete it when `value` is None.");
  write
      .def(py::init([](std::string key, std::optional<std::string> value) {
             return AnnotationWrite{std::move(key), std::move(value)};
           }),
           py::arg("key"), py::arg("value") = py::none())
      .def_readonly("key", &AnnotationWrite::key)
      .def_readonly("value", &AnnotationWrite::value, "the value, or None to delete the key")
      .def("__repr__", [](const AnnotationWrite& w) {
        return Repr("AnnotationWrite", {{"key", py::cast(w.key)}, {"value", py::cast(w.value)}});
      });
  ValueType(
      write,
      [](const AnnotationWrite& w) {
        py::dict out;
        out["key"] = w.key;
        out["value"] = py::cast(w.value);
        return out;
      },
      "{key, value}.");

  py::class_<NodeLock> lock(m, "NodeLock", "A decoded hami.io/mutex.lock value.");
  lock.def_readonly("unix_seconds", &NodeLock::unix_seconds, "when the lock was taken")
      .def_readonly("utc_offset_seconds", &NodeLock::utc_offset_seconds,
                    "the writer's zone, east of UTC")
      .def_readonly("has_owner", &NodeLock::has_owner, "False for the legacy bare-time form")
      .def_property_readonly(
          "pod_namespace", [](const NodeLock& l) { return OwnerField(l, l.pod_namespace); },
          "the owner pod's namespace, or None")
      .def_property_readonly(
          "pod_name", [](const NodeLock& l) { return OwnerField(l, l.pod_name); },
          "the owner pod's name, or None")
      .def("__repr__", [](const NodeLock& l) {
        return Repr("NodeLock", {{"unix_seconds", py::cast(l.unix_seconds)},
                                 {"utc_offset_seconds", py::cast(l.utc_offset_seconds)},
                                 {"pod_namespace", OwnerField(l, l.pod_namespace)},
                                 {"pod_name", OwnerField(l, l.pod_name)}});
      });
  DictCompatible(lock, NodeLockDict,
                 "{unix_seconds, utc_offset_seconds, namespace, name} (None without an owner).");

  py::class_<Handshake> handshake(m, "Handshake", "A decoded HAMi or Volcano handshake value.");
  handshake
      .def_property_readonly(
          "state", [](const Handshake& h) { return std::string(HandshakeStateName(h.state)); },
          "Requesting, Reported, Deleted or Other")
      .def_property_readonly(
          "dialect", [](const Handshake& h) { return DialectName(h.dialect); }, "hami or volcano")
      .def_readonly("unix_seconds", &Handshake::unix_seconds,
                    "the instant the value carries, or None")
      .def("__repr__", [](const Handshake& h) {
        return Repr("Handshake", {{"state", py::str(std::string(HandshakeStateName(h.state)))},
                                  {"dialect", py::str(DialectName(h.dialect))},
                                  {"unix_seconds", py::cast(h.unix_seconds)}});
      });
  DictCompatible(handshake, HandshakeDict, "{state, dialect, unix_seconds}.");

  py::class_<ScoringWeights> weights(m, "ScoringWeights",
                                     "Decoded hami.io/device-scoring-weights.");
  weights.def_readonly("slot", &ScoringWeights::slot)
      .def_readonly("core", &ScoringWeights::core)
      .def_readonly("memory", &ScoringWeights::memory)
      .def("__repr__", [](const ScoringWeights& w) {
        return Repr("ScoringWeights", {{"slot", py::cast(w.slot)},
                                       {"core", py::cast(w.core)},
                                       {"memory", py::cast(w.memory)}});
      });
  DictCompatible(weights, WeightsDict, "{slot, core, memory}.");
}

void BindRegistration(py::module_& m) {
  py::class_<RegistrationStep> step(m, "RegistrationStep",
                                    "What one registration step decided for one node.");
  step.def_readonly("usable", &RegistrationStep::usable, "the node's devices may be scheduled on")
      .def_readonly("refresh", &RegistrationStep::refresh,
                    "the scheduler must (re)read the register annotation")
      .def_readonly("write", &RegistrationStep::write,
                    "the one write to the node, or None (step['write'] is {key: value} or {})")
      .def("__repr__", [](const RegistrationStep& s) {
        return Repr("RegistrationStep", {{"usable", py::cast(s.usable)},
                                         {"refresh", py::cast(s.refresh)},
                                         {"write", py::cast(s.write)}});
      });
  DictCompatible(step, StepDict, "{usable, refresh, write: {key: value or None} or {}}.");

  m.def("_hami_scheduler_pass", [](std::optional<std::string> handshake,
                                   std::optional<std::string> registered, std::int64_t allocatable,
                                   const py::dict& memory, const std::string& key, std::int64_t now,
                                   std::int32_t zone, const std::string& hami_exact) {
    HamiNodeMemory mem;
    mem.reported = memory.contains("reported") ? memory["reported"].cast<std::int64_t>() : 0;
    mem.registered = memory.contains("registered") ? memory["registered"].cast<std::string>() : "";
    mem.cached = memory.contains("cached") && memory["cached"].cast<bool>();
    mem.cleaned_up = memory.contains("cleaned_up") && memory["cleaned_up"].cast<bool>();
    RegistrationStep step =
        HamiSchedulerPass({std::move(handshake), std::move(registered), allocatable}, mem, key, now,
                          zone, Unwrap(ParseHamiExact(hami_exact)));
    memory["reported"] = mem.reported;
    memory["registered"] = mem.registered;
    memory["cached"] = mem.cached;
    memory["cleaned_up"] = mem.cleaned_up;
    return step;
  });
  m.def("_volcano_scheduler_pass",
        [](std::optional<std::string> handshake, std::optional<std::string> registered,
           const std::string& key, std::int64_t now, std::int32_t zone, bool read_utc) {
          return VolcanoSchedulerPass({std::move(handshake), std::move(registered), 0}, key, now,
                                      zone, VolcanoHandshakeExact{read_utc});
        });
  m.def("_change_only_scheduler_pass", [](std::optional<std::string> registered,
                                          std::int64_t allocatable,
                                          const std::optional<std::string>& previous) {
    return ChangeOnlySchedulerPass({std::nullopt, std::move(registered), allocatable}, previous);
  });
}

void BindNodeLock(py::module_& m) {
  py::class_<LockDecision> decision(m, "LockDecision",
                                    "Whether a pod may take a node's hami.io/mutex.lock.");
  decision
      .def_property_readonly(
          "action", [](const LockDecision& d) { return LockActionName(d.action); },
          "set, reentrant, take_over, check_holder or held")
      .def_readonly("write", &LockDecision::write,
                    "the lock write, or None (decision['write'] is {key: value} or {})")
      .def_readonly("reason", &LockDecision::reason, "why, for events and errors")
      .def("__repr__", [](const LockDecision& d) {
        return Repr("LockDecision", {{"action", py::str(LockActionName(d.action))},
                                     {"write", py::cast(d.write)},
                                     {"reason", py::cast(d.reason)}});
      });
  DictCompatible(decision, LockDecisionDict,
                 "{action, write: {key: value or None} or {}, reason}.");

  m.def("_decide_lock", [](const std::optional<std::string>& current, const std::string& ns,
                           const std::string& name, const std::string& holder_state,
                           const std::string& holder_phase,
                           std::optional<std::int64_t> holder_bind_time, const py::dict& sighting,
                           std::int64_t now, std::int64_t timeout, std::int64_t grace) {
    LockHolder holder;
    holder.state = holder_state == "gone"      ? LockHolder::State::kGone
                   : holder_state == "present" ? LockHolder::State::kPresent
                                               : LockHolder::State::kUnknown;
    if (!holder_phase.empty()) holder.bind_phase = Unwrap(DecodeBindPhase(holder_phase));
    holder.bind_time = holder_bind_time;
    LockSighting seen;
    seen.value = sighting.contains("value") ? sighting["value"].cast<std::string>() : "";
    seen.first_seen =
        sighting.contains("first_seen") ? sighting["first_seen"].cast<std::int64_t>() : 0;
    LockDecision d =
        DecideLock(current, PodRef{ns, name}, holder, seen, now, NodeLockOptions{timeout, grace});
    sighting["value"] = seen.value;
    sighting["first_seen"] = seen.first_seen;
    return d;
  });
  m.def("_decide_volcano_lock",
        [](const std::optional<std::string>& current, const py::dict& sighting, std::int64_t now,
           std::int64_t timeout, std::int32_t zone, bool unreadable_expires) {
          LockSighting seen;
          seen.value = sighting.contains("value") ? sighting["value"].cast<std::string>() : "";
          seen.first_seen =
              sighting.contains("first_seen") ? sighting["first_seen"].cast<std::int64_t>() : 0;
          const VolcanoLockDecision d = DecideVolcanoLock(
              current, seen, now, VolcanoLockOptions{timeout, zone, unreadable_expires});
          sighting["value"] = seen.value;
          sighting["first_seen"] = seen.first_seen;
          py::dict out;
          out["acquired"] = d.acquired;
          py::dict write;
          if (d.write) write[py::str(d.write->key)] = py::cast(d.write->value);
          out["write"] = write;
          out["reason"] = d.reason;
          return out;
        });
  m.def("backoff_delay_ms", &BackoffDelayMs, py::arg("attempt"), py::arg("u"),
        "Retry delay before attempt + 1: 100 ms x 2^attempt x (1 + 0.5 u); None after five "
        "attempts.");
}

// The Python Elector: client-go's election state with its config and the
// last decision, which write_result reports on.
struct PyElector {
  ElectionConfig config;
  Elector state;
  ElectionDecision last;
};

void BindLeases(py::module_& m) {
  py::class_<LeaseFollower>(m, "LeaseFollower", "Leadership from a Lease another process holds.")
      .def(py::init([](std::string hostname) {
             LeaseFollower f;
             f.hostname = std::move(hostname);
             return f;
           }),
           py::arg("hostname"))
      .def(
          "observe",
          [](LeaseFollower& f, const std::optional<std::string>& lease_json, std::int64_t now_ms) {
            return LeaderEventName(ObserveLease(f, LeaseFrom(lease_json), now_ms));
          },
          py::arg("lease"), py::arg("now_ms"),
          "A Lease event (JSON text, or None when deleted); returns none, started_leading or "
          "stopped_leading.")
      .def(
          "tick",
          [](LeaseFollower& f, std::int64_t now_ms) {
            return LeaderEventName(FollowerTick(f, now_ms));
          },
          py::arg("now_ms"))
      .def(
          "is_leader",
          [](const LeaseFollower& f, std::int64_t now_ms) { return IsLeader(f, now_ms); },
          py::arg("now_ms"))
      .def(
          "registration_done",
          [](LeaseFollower& f, std::int64_t now_ms) { RegistrationPassDone(f, now_ms); },
          py::arg("now_ms"))
      .def(
          "filter_allowed",
          [](const LeaseFollower& f, std::int64_t now_ms) { return FilterAllowed(f, now_ms); },
          py::arg("now_ms"));

  py::class_<ElectionDecision> decision(m, "ElectionDecision",
                                        "One try of a leader election: what to write.");
  decision
      .def_property_readonly(
          "action", [](const ElectionDecision& d) { return ElectionActionName(d.action); },
          "none, create, acquire, renew or step_down")
      .def_property_readonly("lease", &DecisionLease,
                             "the Lease to write (JSON text) for create, acquire and renew, "
                             "else None")
      .def("__repr__", [](const ElectionDecision& d) {
        return Repr("ElectionDecision", {{"action", py::str(ElectionActionName(d.action))},
                                         {"lease", DecisionLease(d)}});
      });
  DictCompatible(decision, ElectionDecisionDict, "{action, lease}.");

  py::class_<PyElector>(m, "Elector",
                        "A leader election with client-go's algorithm (15 s / 10 s / 2 s).")
      .def(py::init([](std::string identity, std::int64_t lease_ms, std::int64_t renew_ms,
                       std::int64_t retry_ms) {
             PyElector e;
             e.config = ElectionConfig{std::move(identity), lease_ms, renew_ms, retry_ms};
             Check(ValidateElectionConfig(e.config));
             return e;
           }),
           py::arg("identity"), py::arg("lease_duration_ms") = 15000,
           py::arg("renew_deadline_ms") = 10000, py::arg("retry_period_ms") = 2000)
      .def(
          "try_acquire_or_renew",
          [](PyElector& e, const std::optional<std::string>& lease_json, const std::string& name,
             const std::string& ns, std::int64_t now_ms) {
            e.last = TryAcquireOrRenew(e.state, LeaseFrom(lease_json), e.config, name, ns, now_ms);
            return e.last;
          },
          py::arg("lease"), py::arg("name"), py::arg("namespace"), py::arg("now_ms"),
          "One try given the Lease just read (JSON text, or None for 404): the action and the "
          "Lease to write.")
      .def(
          "write_result",
          [](PyElector& e, bool succeeded, std::int64_t now_ms) {
            return LeaderEventName(ElectionWriteResult(e.state, e.last, succeeded, now_ms));
          },
          py::arg("succeeded"), py::arg("now_ms"),
          "Reports the write's outcome; returns the leader event.")
      .def_property_readonly("leading", [](const PyElector& e) { return e.state.leading; });
}

}  // namespace

void BindProtocols(py::module_& m) {
  BindValues(m);
  m.def("_decode_node_lock",
        [](const std::string& value) { return Unwrap(DecodeNodeLock(value)); });
  m.def("_decode_handshake", [](const std::string& value, std::int32_t zone) {
    return Unwrap(DecodeHandshake(value, zone));
  });
  m.def("_decode_scoring_weights",
        [](const std::string& value) { return Unwrap(DecodeScoringWeights(value)); });
  BindRegistration(m);
  BindNodeLock(m);
  BindLeases(m);
}

}  // namespace devshare::python
