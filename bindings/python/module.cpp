// The private extension `devshare._devshare`: pybind11 bindings of the core.
// The public package (devshare/__init__.py) re-exports it and turns
// Kubernetes objects given as dicts into the JSON the core decodes.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "devshare/admission.hpp"
#include "devshare/annotations.hpp"
#include "devshare/filter.hpp"
#include "devshare/handshake.hpp"
#include "devshare/lease.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/nodelock.hpp"
#include "devshare/objects.hpp"
#include "devshare/pod_codec.hpp"
#include "devshare/request.hpp"
#include "devshare/sim/experiment.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/vendor.hpp"
#include "devshare/version.hpp"

namespace py = pybind11;
using namespace devshare;

namespace {

// Python exceptions, created in the module init.
PyObject* g_decode_error = nullptr;
PyObject* g_config_error = nullptr;

[[noreturn]] void Raise(const Status& status) {
  PyObject* type = PyExc_ValueError;
  switch (status.code()) {
    case StatusCode::kMalformed:
      type = g_decode_error;
      break;
    case StatusCode::kInvalidConfig:
      type = g_config_error;
      break;
    case StatusCode::kNotFound:
      type = PyExc_KeyError;
      break;
    default:
      break;
  }
  PyErr_SetString(type, std::string(status.message()).c_str());
  throw py::error_already_set();
}

template <typename T>
T Unwrap(Result<T> r) {
  if (!r.ok()) Raise(r.status());
  return std::move(r).value();
}

void Check(const Status& s) {
  if (!s.ok()) Raise(s);
}

DeviceConfig ConfigFrom(const std::optional<std::string>& yaml) {
  return yaml ? Unwrap(ParseDeviceConfig(*yaml)) : DefaultDeviceConfig();
}

py::dict ToDict(const StringMap& m) {
  py::dict d;
  for (const auto& [k, v] : m.entries()) d[py::str(k)] = v;
  return d;
}

py::dict WriteDict(const std::optional<AnnotationWrite>& w) {
  py::dict d;
  if (w) d[py::str(w->key)] = w->value ? py::object(py::str(*w->value)) : py::object(py::none());
  return d;
}

py::dict StepDict(const RegistrationStep& step) {
  py::dict out;
  out["usable"] = step.usable;
  out["refresh"] = step.refresh;
  out["write"] = WriteDict(step.write);
  return out;
}

// A filter result whose maps become Python objects only when read.
struct PyFilterResult {
  FilterResult result;
};

py::object DevicesToPython(const PodDevices& devices) {
  py::dict out;
  for (const auto& [vendor, containers] : devices) out[py::str(vendor)] = py::cast(containers);
  return out;
}

// Kubernetes objects arrive as JSON text (the package serialises dicts).
class Cluster {
 public:
  explicit Cluster(const std::optional<std::string>& config_yaml, FilterOptions options)
      : snapshot_(ConfigFrom(config_yaml)), options_(std::move(options)) {}

  void AddNode(const std::string& json) { Check(snapshot_.AddNode(Unwrap(DecodeNode(json)))); }
  bool RemoveNode(const std::string& name) { return snapshot_.RemoveNode(name); }
  void AddPod(const std::string& json) {
    Pod pod = Unwrap(DecodePod(json));
    Check(snapshot_.AddPod(pod));
    uids_[pod.pod_namespace + "/" + pod.name] = pod.uid;
  }
  bool RemovePod(const std::string& pod_namespace, const std::string& name) {
    auto it = uids_.find(pod_namespace + "/" + name);
    if (it == uids_.end()) return false;
    const bool removed = snapshot_.RemovePod(it->second);
    uids_.erase(it);
    return removed;
  }
  void SetQuota(const std::string& ns, const std::string& name,
                const std::map<std::string, std::string>& hard) {
    StringMap m;
    for (const auto& [k, v] : hard) m.Set(k, v);
    snapshot_.SetQuota(ns, name, m);
  }
  PyFilterResult Filter(const std::string& pod_json, const std::vector<std::string>& nodes,
                        std::int64_t now) {
    Pod pod = Unwrap(DecodePod(pod_json));
    Result<FilterResult> r = Status();
    {
      py::gil_scoped_release release;
      r = devshare::Filter(snapshot_, pod, nodes, now, options_);
    }
    return PyFilterResult{Unwrap(std::move(r))};
  }
  py::dict Fragmentation() const {
    ClusterFragmentation f = Unwrap(MeasureFragmentation(snapshot_, options_.workload));
    py::dict nodes;
    for (const NodeFragmentation& n : f.nodes) {
      py::dict node;
      node["free_gpus"] = n.free_gpus;
      node["fragmented_gpus"] = n.fragmented_gpus;
      nodes[py::str(n.node)] = std::move(node);
    }
    py::dict out;
    out["free_gpus"] = f.free_gpus;
    out["fragmented_gpus"] = f.fragmented_gpus;
    out["nodes"] = std::move(nodes);
    return out;
  }
  std::vector<std::string> NodeNames() const { return snapshot_.NodeNames(); }
  std::size_t pod_count() const { return snapshot_.pod_count(); }
  std::vector<DeviceView> NodeDevices(const std::string& node) const {
    return Unwrap(snapshot_.NodeDevices(node));
  }
  const ClusterSnapshot& snapshot() const { return snapshot_; }

 private:
  ClusterSnapshot snapshot_;
  FilterOptions options_;
  std::map<std::string, std::string> uids_;  // "namespace/name" -> UID
};

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

}  // namespace

PYBIND11_MODULE(_devshare, m) {
  m.doc() = "devshare core: codecs, cluster snapshot and filter, protocol state machines.";
  m.attr("__version__") = DEVSHARE_VERSION;
  g_decode_error = PyErr_NewExceptionWithDoc("devshare.DecodeError",
                                             "An annotation or object that does not decode.",
                                             PyExc_ValueError, nullptr);
  g_config_error = PyErr_NewExceptionWithDoc("devshare.ConfigError",
                                             "An invalid device config or scheduler option.",
                                             PyExc_ValueError, nullptr);
  m.attr("DecodeError") = py::handle(g_decode_error);
  m.attr("ConfigError") = py::handle(g_config_error);

  // --- value types -------------------------------------------------------
  py::class_<Device>(m, "Device", "One physical device as a node registers it.")
      .def(py::init([](std::string id, std::uint32_t index, std::int32_t count, std::int32_t devmem,
                       std::int32_t devcore, std::string type, std::int32_t numa, bool health,
                       std::string mode) {
             Device d;
             d.id = std::move(id);
             d.index = index;
             d.count = count;
             d.devmem = devmem;
             d.devcore = devcore;
             d.type = std::move(type);
             d.numa = numa;
             d.health = health;
             d.mode = std::move(mode);
             return d;
           }),
           py::arg("id"), py::arg("index") = 0, py::arg("count") = 0, py::arg("devmem") = 0,
           py::arg("devcore") = 0, py::arg("type") = "", py::arg("numa") = 0,
           py::arg("health") = false, py::arg("mode") = "")
      .def_readwrite("id", &Device::id, "UUID")
      .def_readwrite("index", &Device::index, "NVML index")
      .def_readwrite("count", &Device::count, "slots: containers that may share it")
      .def_readwrite("devmem", &Device::devmem, "memory, MiB")
      .def_readwrite("devcore", &Device::devcore, "cores, percent of one device")
      .def_readwrite("type", &Device::type, "model name")
      .def_readwrite("numa", &Device::numa, "NUMA node")
      .def_readwrite("health", &Device::health, "healthy")
      .def_readwrite("mode", &Device::mode, "hami-core, mig or mps")
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__repr__",
           [](const Device& d) {
             return fmt::format(
                 "Device(id='{}', index={}, count={}, devmem={}, devcore={}, type='{}', numa={}, "
                 "health={}, mode='{}')",
                 d.id, d.index, d.count, d.devmem, d.devcore, d.type, d.numa,
                 d.health ? "True" : "False", d.mode);
           })
      .def(
          "to_dict",
          [](const Device& d) {
            py::dict out;
            out["id"] = d.id;
            out["index"] = d.index;
            out["count"] = d.count;
            out["devmem"] = d.devmem;
            out["devcore"] = d.devcore;
            out["type"] = d.type;
            out["numa"] = d.numa;
            out["health"] = d.health;
            out["mode"] = d.mode;
            return out;
          },
          "The fields as a dict.");

  py::class_<ContainerDevice>(m, "ContainerDevice", "One device given to one container.")
      .def(py::init([](std::string uuid, std::string type, std::int32_t usedmem,
                       std::int32_t usedcores) {
             return ContainerDevice{std::move(uuid), std::move(type), usedmem, usedcores};
           }),
           py::arg("uuid"), py::arg("type") = "NVIDIA", py::arg("usedmem") = 0,
           py::arg("usedcores") = 0)
      .def_readwrite("uuid", &ContainerDevice::uuid)
      .def_readwrite("type", &ContainerDevice::type, "vendor common word, e.g. NVIDIA")
      .def_readwrite("usedmem", &ContainerDevice::usedmem, "MiB")
      .def_readwrite("usedcores", &ContainerDevice::usedcores, "percent")
      .def("__eq__", [](const ContainerDevice& a, const ContainerDevice& b) { return a == b; })
      .def("__repr__",
           [](const ContainerDevice& d) {
             return fmt::format("ContainerDevice(uuid='{}', type='{}', usedmem={}, usedcores={})",
                                d.uuid, d.type, d.usedmem, d.usedcores);
           })
      .def(
          "to_dict",
          [](const ContainerDevice& d) {
            py::dict out;
            out["uuid"] = d.uuid;
            out["type"] = d.type;
            out["usedmem"] = d.usedmem;
            out["usedcores"] = d.usedcores;
            return out;
          },
          "The fields as a dict.");

  py::class_<ContainerRequest>(m, "Request", "What one container asks of one vendor.")
      .def_readonly("nums", &ContainerRequest::nums, "devices wanted")
      .def_readonly("memreq", &ContainerRequest::memreq, "MiB (after the memory factor)")
      .def_readonly("mem_percentage", &ContainerRequest::mem_percentage,
                    "1..100, or 101 when unset")
      .def_readonly("coresreq", &ContainerRequest::coresreq, "percent of one device")
      .def_readonly("vendor", &ContainerRequest::vendor)
      .def("__eq__", [](const ContainerRequest& a, const ContainerRequest& b) { return a == b; })
      .def("__repr__",
           [](const ContainerRequest& r) {
             return fmt::format("Request(nums={}, memreq={}, mem_percentage={}, coresreq={})",
                                r.nums, r.memreq, r.mem_percentage, r.coresreq);
           })
      .def(
          "to_dict",
          [](const ContainerRequest& r) {
            py::dict out;
            out["nums"] = r.nums;
            out["memreq"] = r.memreq;
            out["mem_percentage"] = r.mem_percentage;
            out["coresreq"] = r.coresreq;
            return out;
          },
          "The fields as a dict.");

  py::class_<DeviceView>(m, "DeviceState", "A device of a node with what is in use on it.")
      .def_readonly("device", &DeviceView::device)
      .def_property_readonly("used", [](const DeviceView& v) { return v.usage.used; })
      .def_property_readonly("usedmem", [](const DeviceView& v) { return v.usage.usedmem; })
      .def_property_readonly("usedcores", [](const DeviceView& v) { return v.usage.usedcores; })
      .def_readonly("healthy", &DeviceView::healthy)
      .def("__repr__", [](const DeviceView& v) {
        return fmt::format("DeviceState(id='{}', used={}/{}, usedmem={}/{}, usedcores={}/{})",
                           v.device.id, v.usage.used, v.device.count, v.usage.usedmem,
                           v.device.devmem, v.usage.usedcores, v.device.devcore);
      });

  // --- codecs --------------------------------------------------------------
  m.def("_decode_node_devices", [](const std::string& value, const std::string& format) {
    return Unwrap(DecodeNodeDevices(value, Unwrap(ParseRegisterFormat(format))));
  });
  m.def("_encode_node_devices", [](const std::vector<Device>& devices, const std::string& format) {
    const RegisterFormat f = Unwrap(ParseRegisterFormat(format));
    if (f == RegisterFormat::kAuto)
      Raise(Status::InvalidArgument("encode needs json, legacy or volcano"));
    return EncodeNodeDevices(devices, f);
  });
  m.def("_decode_pod_devices",
        [](const std::string& value) { return Unwrap(DecodePodDevices(value)); });
  m.def("_encode_pod_devices", [](const PodSingleDevice& containers, const std::string& format) {
    if (format != "hami" && format != "volcano") {
      Raise(Status::InvalidArgument(
          fmt::format("unknown pod devices format \"{}\" (want hami or volcano)", format)));
    }
    return EncodePodDevices(
        containers, format == "volcano" ? PodDevicesFormat::kVolcano : PodDevicesFormat::kHami);
  });
  m.def("_container_requests",
        [](const std::string& pod_json, const std::optional<std::string>& config) {
          const DeviceConfig c = ConfigFrom(config);
          Pod pod = Unwrap(DecodePod(pod_json));
          py::dict out;
          if (pod.containers.empty()) return out;
          for (const VendorSpec& v : c.vendors) {
            ContainerRequest r = GenerateRequest(pod.containers[0], v);
            if (r.nums > 0) out[py::str(v.common_word)] = r;
          }
          return out;
        });
  m.def("_decode_node_lock", [](const std::string& value) {
    NodeLock l = Unwrap(DecodeNodeLock(value));
    py::dict out;
    out["unix_seconds"] = l.unix_seconds;
    out["utc_offset_seconds"] = l.utc_offset_seconds;
    out["namespace"] = l.has_owner ? py::object(py::str(l.pod_namespace)) : py::object(py::none());
    out["name"] = l.has_owner ? py::object(py::str(l.pod_name)) : py::object(py::none());
    return out;
  });
  m.def("_decode_handshake", [](const std::string& value, std::int32_t zone) {
    Handshake h = Unwrap(DecodeHandshake(value, zone));
    py::dict out;
    out["state"] = std::string(HandshakeStateName(h.state));
    out["dialect"] = h.dialect == HandshakeDialect::kHami ? "hami" : "volcano";
    out["unix_seconds"] =
        h.unix_seconds ? py::object(py::int_(*h.unix_seconds)) : py::object(py::none());
    return out;
  });
  m.def("_decode_scoring_weights", [](const std::string& value) {
    ScoringWeights w = Unwrap(DecodeScoringWeights(value));
    py::dict out;
    out["slot"] = w.slot;
    out["core"] = w.core;
    out["memory"] = w.memory;
    return out;
  });
  m.def("_parse_device_config", [](const std::string& yaml) {
    DeviceConfig c = Unwrap(ParseDeviceConfig(yaml));
    py::list vendors;
    for (const VendorSpec& v : c.vendors) vendors.append(v.common_word);
    return vendors;
  });

  // --- cluster and filter --------------------------------------------------
  py::class_<PyFilterResult>(m, "FilterResult", "Where a pod goes, and why not elsewhere.")
      .def_property_readonly(
          "node", [](const PyFilterResult& r) { return r.result.node; }, "the chosen node, or None")
      .def_property_readonly(
          "devices", [](const PyFilterResult& r) { return DevicesToPython(r.result.devices); },
          "vendor -> per-container lists of ContainerDevice")
      .def_property_readonly(
          "failed",
          [](const PyFilterResult& r) {
            py::dict out;
            for (const NodeFailure& f : r.result.failed) out[py::str(f.node)] = f.reason;
            return out;
          },
          "node -> reason, for every rejected node")
      .def_property_readonly(
          "scores",
          [](const PyFilterResult& r) {
            py::dict out;
            for (const NodeScore& s : r.result.scores) out[py::str(s.node)] = s.score;
            return out;
          },
          "node -> the node policy's raw score, for every feasible node")
      .def_property_readonly(
          "normalized_scores",
          [](const PyFilterResult& r) {
            py::dict out;
            for (const NodeScore& s : r.result.scores) out[py::str(s.node)] = s.normalized;
            return out;
          },
          "node -> 0..100, higher is better under every node policy (the chosen node 100)")
      .def_property_readonly(
          "annotations", [](const PyFilterResult& r) { return ToDict(r.result.annotations); },
          "the annotation patch for the pod")
      .def_property_readonly("has_requests",
                             [](const PyFilterResult& r) { return r.result.has_requests; })
      .def("__repr__", [](const PyFilterResult& r) {
        return fmt::format(
            "FilterResult(node={}, failed={}, feasible={})",
            r.result.node ? fmt::format("'{}'", *r.result.node) : std::string("None"),
            r.result.failed.size(), r.result.scores.size());
      });

  py::class_<Cluster>(m, "_Cluster")
      .def(py::init([](const std::optional<std::string>& config, const std::string& node_policy,
                       const std::string& gpu_policy,
                       const std::vector<std::tuple<double, std::int32_t, std::int32_t,
                                                    std::int64_t, std::int64_t>>& workload,
                       bool reasons, const std::string& hami_exact) {
             FilterOptions o;
             o.reasons = reasons;
             o.hami_exact = Unwrap(ParseHamiExact(hami_exact));
             o.node_policy = node_policy;
             o.gpu_policy = gpu_policy;
             for (const auto& [weight, gpus, gpu_milli, cpu_milli, memory_mib] : workload) {
               o.workload.push_back({weight, gpus, gpu_milli, cpu_milli, memory_mib});
             }
             return Cluster(config, o);
           }),
           py::arg("config"), py::arg("node_policy"), py::arg("gpu_policy"), py::arg("workload"),
           py::arg("reasons"), py::arg("hami_exact"))
      .def("add_node", &Cluster::AddNode)
      .def("remove_node", &Cluster::RemoveNode)
      .def("add_pod", &Cluster::AddPod)
      .def("remove_pod", &Cluster::RemovePod)
      .def("set_quota", &Cluster::SetQuota)
      .def("filter", &Cluster::Filter)
      .def("node_names", &Cluster::NodeNames)
      .def("fragmentation", &Cluster::Fragmentation)
      .def("pod_count", &Cluster::pod_count)
      .def("node_devices", &Cluster::NodeDevices);

  // --- protocols -------------------------------------------------------------
  m.def("_hami_scheduler_pass", [](std::optional<std::string> handshake,
                                   std::optional<std::string> registered, std::int64_t allocatable,
                                   py::dict memory, const std::string& key, std::int64_t now,
                                   std::int32_t zone, const std::string& hami_exact) {
    HamiNodeMemory mem;
    mem.reported = memory.contains("reported") ? memory["reported"].cast<std::int64_t>() : 0;
    mem.registered = memory.contains("registered") ? memory["registered"].cast<std::string>() : "";
    mem.cached = memory.contains("cached") && memory["cached"].cast<bool>();
    mem.cleaned_up = memory.contains("cleaned_up") && memory["cleaned_up"].cast<bool>();
    RegistrationStep step = HamiSchedulerPass({handshake, registered, allocatable}, mem, key, now,
                                              zone, Unwrap(ParseHamiExact(hami_exact)));
    memory["reported"] = mem.reported;
    memory["registered"] = mem.registered;
    memory["cached"] = mem.cached;
    memory["cleaned_up"] = mem.cleaned_up;
    return StepDict(step);
  });
  m.def("_volcano_scheduler_pass", [](std::optional<std::string> handshake, const std::string& key,
                                      std::int64_t now, std::int32_t zone) {
    return StepDict(VolcanoSchedulerPass({handshake, std::nullopt, 0}, key, now, zone));
  });
  m.def("_change_only_scheduler_pass", [](std::optional<std::string> registered,
                                          std::int64_t allocatable,
                                          std::optional<std::string> previous) {
    return StepDict(ChangeOnlySchedulerPass({std::nullopt, registered, allocatable}, previous));
  });

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

  struct PyElector {
    ElectionConfig config;
    Elector state;
    ElectionDecision last;
  };
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
            py::dict out;
            out["action"] = ElectionActionName(e.last.action);
            const bool writes = e.last.action == ElectionAction::kCreate ||
                                e.last.action == ElectionAction::kAcquire ||
                                e.last.action == ElectionAction::kRenew;
            out["lease"] =
                writes ? py::object(py::str(EncodeLease(e.last.lease))) : py::object(py::none());
            return out;
          },
          py::arg("lease"), py::arg("name"), py::arg("namespace"), py::arg("now_ms"),
          "One try given the Lease just read (JSON text, or None for 404): {action, lease to "
          "write}.")
      .def(
          "write_result",
          [](PyElector& e, bool succeeded, std::int64_t now_ms) {
            return LeaderEventName(ElectionWriteResult(e.state, e.last, succeeded, now_ms));
          },
          py::arg("succeeded"), py::arg("now_ms"),
          "Reports the write's outcome; returns the leader event.")
      .def_property_readonly("leading", [](const PyElector& e) { return e.state.leading; });

  m.def("_decide_lock", [](std::optional<std::string> current, const std::string& ns,
                           const std::string& name, const std::string& holder_state,
                           const std::string& holder_phase,
                           std::optional<std::int64_t> holder_bind_time, py::dict sighting,
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
    py::dict out;
    out["action"] = LockActionName(d.action);
    out["write"] = WriteDict(d.write);
    out["reason"] = d.reason;
    return out;
  });
  m.def("backoff_delay_ms", &BackoffDelayMs, py::arg("attempt"), py::arg("u"),
        "Retry delay before attempt + 1: 100 ms x 2^attempt x (1 + 0.5 u); None after five "
        "attempts.");

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
         const std::string& openb_dir, const std::optional<std::vector<std::uint64_t>>& seeds) {
        sim::LoadOptions load;
        load.what = what;
        load.base_dir = base_dir;
        load.openb_dir = openb_dir;
        load.read = [](const std::string& path) -> Result<std::string> {
          std::ifstream in(path, std::ios::binary);
          if (!in) return Status::NotFound(fmt::format("cannot read {}", path));
          std::ostringstream text;
          text << in.rdbuf();
          return text.str();
        };
        sim::Experiment experiment = Unwrap(sim::ParseExperiment(yaml, load));
        if (seeds) experiment.seeds = *seeds;
        Result<std::vector<sim::VariantResult>> results = Status();
        {
          py::gil_scoped_release release;
          results = sim::RunExperiment(experiment);
        }
        return sim::ResultsJson(experiment, Unwrap(std::move(results)));
      },
      py::arg("yaml"), py::arg("what"), py::arg("base_dir"), py::arg("openb_dir"),
      py::arg("seeds"));

  m.def(
      "_decide_admission",
      [](const std::string& review, const std::optional<std::string>& config,
         const std::string& scheduler_name, const Cluster* cluster) {
        AdmissionOptions options;
        options.scheduler_name = scheduler_name;
        AdmissionDecision d = Unwrap(DecideAdmission(review, ConfigFrom(config), options,
                                                     cluster ? &cluster->snapshot() : nullptr));
        return EncodeAdmissionResponse(d);
      },
      py::arg("review"), py::arg("config"), py::arg("scheduler_name"), py::arg("cluster"));
}
