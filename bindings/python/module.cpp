// The private extension `devshare._devshare`: pybind11 bindings of the core,
// the engine and the simulator. The public package (devshare/__init__.py)
// re-exports it and turns Kubernetes objects given as dicts into the JSON the
// core decodes. This file holds the module init, the value types, the codecs
// and the cluster with its Filter; protocols.cpp, preemption.cpp, engine.cpp,
// simulation.cpp and dra.cpp the rest.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "devshare/admission.hpp"
#include "devshare/dra.hpp"
#include "devshare/dra_place.hpp"
#include "devshare/filter.hpp"
#include "devshare/node_codec.hpp"
#include "devshare/objects.hpp"
#include "devshare/pod_codec.hpp"
#include "devshare/preemption.hpp"
#include "devshare/request.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/testing.hpp"
#include "devshare/vendor.hpp"
#include "devshare/version.hpp"

namespace devshare::python {

namespace {

// A filter result whose maps become Python objects only when read.
struct PyFilterResult {
  FilterResult result;
};

py::dict FailedDict(const std::vector<NodeFailure>& failed) {
  py::dict out;
  for (const NodeFailure& f : failed) out[py::str(f.node)] = f.reason;
  return out;
}

py::dict ScoresDict(const std::vector<NodeScore>& scores, bool normalized) {
  py::dict out;
  for (const NodeScore& s : scores) out[py::str(s.node)] = normalized ? s.normalized : s.score;
  return out;
}

py::dict FilterResultDict(const PyFilterResult& r) {
  py::dict devices;
  for (const auto& [vendor, containers] : r.result.devices) {
    py::list per_container;
    for (const auto& container : containers) {
      py::list list;
      for (const ContainerDevice& d : container) list.append(py::cast(d).attr("to_dict")());
      per_container.append(std::move(list));
    }
    devices[py::str(vendor)] = std::move(per_container);
  }
  py::dict out;
  out["node"] = py::cast(r.result.node);
  out["devices"] = std::move(devices);
  out["failed"] = FailedDict(r.result.failed);
  out["scores"] = ScoresDict(r.result.scores, false);
  out["normalized_scores"] = ScoresDict(r.result.scores, true);
  out["annotations"] = ToDict(r.result.annotations);
  out["has_requests"] = r.result.has_requests;
  return out;
}

py::dict NodeFragmentationDict(const NodeFragmentation& n) {
  py::dict out;
  out["node"] = n.node;
  out["free_gpus"] = n.free_gpus;
  out["fragmented_gpus"] = n.fragmented_gpus;
  return out;
}

py::dict ClusterFragmentationDict(const ClusterFragmentation& f) {
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

py::dict AdmissionDict(const AdmissionDecision& d) {
  return py::dict(py::module_::import("json").attr("loads")(EncodeAdmissionResponse(d)));
}

// Kubernetes objects arrive as JSON text (the package serialises dicts).
class Cluster {
 public:
  // Under the fgd policies the snapshot keeps each node's fragmentation
  // measure (an invalid workload is refused by every filter call).
  explicit Cluster(const std::optional<std::string>& config_yaml, FilterOptions options)
      : snapshot_(ConfigFrom(config_yaml)), options_(std::move(options)) {
    if (UsesFgd(options_)) static_cast<void>(snapshot_.SetFragmentationWorkload(options_.workload));
  }

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
    Check(snapshot_.SetQuota(ns, name, m));
  }
  // PlanPreemption over this cluster: `pods` may be victims (those bound,
  // as JSON), `budgets` the PodDisruptionBudgets (JSON).
  PreemptionPlan PlanPreemption(const std::string& pod_json, const std::vector<std::string>& pods,
                                const std::vector<std::string>& budgets,
                                const std::vector<std::string>& nodes, std::int64_t now) {
    const Pod pod = Unwrap(DecodePod(pod_json));
    std::vector<Pod> victims;
    for (const std::string& json : pods) victims.push_back(Unwrap(DecodePod(json)));
    std::vector<PodDisruptionBudget> pdbs;
    for (const std::string& json : budgets) pdbs.push_back(Unwrap(DecodePodDisruptionBudget(json)));
    Result<PreemptionPlan> plan = Status();
    {
      py::gil_scoped_release release;
      plan = devshare::PlanPreemption(snapshot_, pod, victims, pdbs, nodes, now, options_);
    }
    return Unwrap(std::move(plan));
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
  ClusterFragmentation Fragmentation() const {
    return Unwrap(MeasureFragmentation(snapshot_, options_.workload));
  }
  std::vector<std::string> NodeNames() const { return snapshot_.NodeNames(); }
  std::size_t pod_count() const { return snapshot_.pod_count(); }
  std::vector<DeviceView> NodeDevices(const std::string& node) const {
    return Unwrap(snapshot_.NodeDevices(node));
  }
  const ClusterSnapshot& snapshot() const { return snapshot_; }

  // DRA: the objects as API JSON; placement by dra::Placer with the
  // cluster's workload.
  void AddResourceSlice(const std::string& json) {
    snapshot_.AddResourceSlice(Unwrap(dra::DecodeResourceSlice(json)));
  }
  bool RemoveResourceSlice(const std::string& name) { return snapshot_.RemoveResourceSlice(name); }
  void AddDeviceClass(const std::string& json) {
    snapshot_.AddDeviceClass(Unwrap(dra::DecodeDeviceClass(json)));
  }
  bool RemoveDeviceClass(const std::string& name) { return snapshot_.RemoveDeviceClass(name); }
  void AddResourceClaim(const std::string& json) {
    snapshot_.AddResourceClaim(Unwrap(dra::DecodeResourceClaim(json)));
  }
  bool RemoveResourceClaim(const std::string& ns, const std::string& name) {
    return snapshot_.RemoveResourceClaim(ns, name);
  }
  std::optional<py::dict> DraPlace(const std::vector<std::string>& claims_json,
                                   std::int64_t cpu_milli, std::int64_t memory_bytes,
                                   const std::string& policy) {
    std::vector<dra::ResourceClaim> claims;
    for (const std::string& c : claims_json) claims.push_back(Unwrap(dra::DecodeResourceClaim(c)));
    dra::Placer& placer = PlacerFor(policy);
    Result<dra::Placement> placed = Status();
    {
      py::gil_scoped_release release;
      placed = placer.Place(snapshot_, claims, dra::PodResources{cpu_milli, memory_bytes});
    }
    const dra::Placement p = Unwrap(std::move(placed));
    if (!p.chosen) return std::nullopt;
    py::list allocations;
    for (const dra::Allocation& a : p.chosen->allocations)
      allocations.append(py::module_::import("json").attr("loads")(dra::EncodeAllocation(a)));
    py::dict out;
    out["node"] = p.chosen->node;
    out["allocations"] = allocations;
    out["score"] = p.chosen->score;
    out["feasible"] = p.feasible;
    out["short_of_cpu_or_memory"] = p.short_of_cpu_or_memory;
    out["short_of_devices"] = p.short_of_devices;
    return out;
  }
  ClusterFragmentation DraFragmentation() {
    return PlacerFor("fgd").MeasureFragmentation(snapshot_);
  }

 private:
  dra::Placer& PlacerFor(const std::string& policy) {
    auto it = placers_.find(policy);
    if (it != placers_.end()) return it->second;
    const std::optional<dra::Policy> named = dra::kPolicyNames.Find(policy);
    if (!named || *named == dra::Policy::kUpstream)
      Raise(Status::InvalidArgument("DRA policy must be binpack, spread or fgd, not " + policy));
    dra::PlacerOptions options;
    options.policy = *named;
    options.workload = options_.workload;
    return placers_.emplace(policy, Unwrap(dra::Placer::Make(std::move(options)))).first->second;
  }

  ClusterSnapshot snapshot_;
  FilterOptions options_;
  std::map<std::string, std::string> uids_;     // "namespace/name" -> UID
  std::map<std::string, dra::Placer> placers_;  // by policy name
};

void BindValueTypes(py::module_& m) {
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

  py::class_<ContainerRequest>(m, "ContainerRequest", "What one container asks of one vendor.")
      .def_readonly("nums", &ContainerRequest::nums, "devices wanted")
      .def_readonly("memreq", &ContainerRequest::memreq, "MiB (after the memory factor)")
      .def_readonly("mem_percentage", &ContainerRequest::mem_percentage,
                    "1..100, or 101 when unset")
      .def_readonly("coresreq", &ContainerRequest::coresreq, "percent of one device")
      .def_readonly("vendor", &ContainerRequest::vendor)
      .def("__eq__", [](const ContainerRequest& a, const ContainerRequest& b) { return a == b; })
      .def("__repr__",
           [](const ContainerRequest& r) {
             return fmt::format(
                 "ContainerRequest(nums={}, memreq={}, mem_percentage={}, coresreq={})", r.nums,
                 r.memreq, r.mem_percentage, r.coresreq);
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

  py::class_<DeviceView> view(m, "DeviceView", "A device of a node with what is in use on it.");
  view.def_readonly("device", &DeviceView::device)
      .def_property_readonly("used", [](const DeviceView& v) { return v.usage.used; })
      .def_property_readonly("usedmem", [](const DeviceView& v) { return v.usage.usedmem; })
      .def_property_readonly("usedcores", [](const DeviceView& v) { return v.usage.usedcores; })
      .def_readonly("healthy", &DeviceView::healthy)
      .def("__repr__", [](const DeviceView& v) {
        return fmt::format("DeviceView(id='{}', used={}/{}, usedmem={}/{}, usedcores={}/{})",
                           v.device.id, v.usage.used, v.device.count, v.usage.usedmem,
                           v.device.devmem, v.usage.usedcores, v.device.devcore);
      });
  ValueType(
      view,
      [](const DeviceView& v) {
        py::dict out;
        out["device"] = py::cast(v.device).attr("to_dict")();
        out["used"] = v.usage.used;
        out["usedmem"] = v.usage.usedmem;
        out["usedcores"] = v.usage.usedcores;
        out["healthy"] = v.healthy;
        return out;
      },
      "{device: Device.to_dict(), used, usedmem, usedcores, healthy}.");
}

void BindCodecs(py::module_& m) {
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
  // devshare/testing.hpp's builders: what devshare.testing puts in its dicts.
  m.def("_fixture_node",
        [](const std::string& name, int gpus, std::int32_t memory_mib, std::int32_t slots,
           std::int32_t cores, const std::string& type, const std::string& format,
           const std::optional<std::string>& config, const std::string& vendor) {
          const DeviceConfig c = ConfigFrom(config);
          if (c.FindVendor(vendor) == nullptr)
            Raise(Status::InvalidArgument(fmt::format("no vendor \"{}\" in the config", vendor)));
          testing::NodeBuilder builder(name, c, vendor);
          builder.Gpus(gpus, memory_mib, slots, cores, type);
          if (!format.empty()) {
            const RegisterFormat f = Unwrap(ParseRegisterFormat(format));
            if (f == RegisterFormat::kAuto)
              Raise(Status::InvalidArgument("a node's format is json, legacy or volcano"));
            builder.Format(f);
          }
          const Node node = builder.Build();
          return py::make_tuple(ToDict(node.annotations), ToDict(node.allocatable));
        });
  m.def("_fixture_limits", [](int gpus, int memory_mib, int cores, int memory_percent,
                              const std::optional<std::string>& config, const std::string& vendor) {
    const DeviceConfig c = ConfigFrom(config);
    if (c.FindVendor(vendor) == nullptr)
      Raise(Status::InvalidArgument(fmt::format("no vendor \"{}\" in the config", vendor)));
    const Pod pod = testing::PodBuilder("p", "default", c, vendor)
                        .Gpus(gpus, memory_mib, cores, memory_percent);
    return ToDict(pod.containers.front().limits);
  });
  m.def("_fixture_allocation", [](const std::string& node, const PodSingleDevice& containers,
                                  const std::optional<std::string>& config,
                                  const std::string& vendor) {
    const DeviceConfig c = ConfigFrom(config);
    if (c.FindVendor(vendor) == nullptr)
      Raise(Status::InvalidArgument(fmt::format("no vendor \"{}\" in the config", vendor)));
    const Pod pod = testing::PodBuilder("p", "default", c, vendor).Allocated(node, containers);
    return ToDict(pod.annotations);
  });
  m.def("_parse_device_config", [](const std::string& yaml) {
    DeviceConfig c = Unwrap(ParseDeviceConfig(yaml));
    py::list vendors;
    for (const VendorSpec& v : c.vendors) vendors.append(v.common_word);
    return vendors;
  });
}

void BindCluster(py::module_& m) {
  py::class_<NodeScore> score(m, "NodeScore", "A feasible node's score under the node policy.");
  score.def_readonly("node", &NodeScore::node)
      .def_readonly("score", &NodeScore::score, "the node policy's raw score")
      .def_readonly("normalized", &NodeScore::normalized,
                    "0..100, higher is better under every node policy")
      .def("__repr__", [](const NodeScore& s) {
        return Repr("NodeScore", {{"node", py::cast(s.node)},
                                  {"score", py::cast(s.score)},
                                  {"normalized", py::cast(s.normalized)}});
      });
  ValueType(
      score,
      [](const NodeScore& s) {
        py::dict out;
        out["node"] = s.node;
        out["score"] = s.score;
        out["normalized"] = s.normalized;
        return out;
      },
      "{node, score, normalized}.");

  py::class_<QuotaUse> quota(m, "QuotaUse",
                             "A namespace's quota on one device resource: the limit in force (the "
                             "tightest of its quotas) and what its placed pods use.");
  quota.def_readonly("namespace", &QuotaUse::pod_namespace)
      .def_readonly("resource", &QuotaUse::resource)
      .def_readonly("limit", &QuotaUse::limit)
      .def_readonly("used", &QuotaUse::used)
      .def("__repr__", [](const QuotaUse& q) {
        return Repr("QuotaUse", {{"namespace", py::cast(q.pod_namespace)},
                                 {"resource", py::cast(q.resource)},
                                 {"limit", py::cast(q.limit)},
                                 {"used", py::cast(q.used)}});
      });
  ValueType(
      quota,
      [](const QuotaUse& q) {
        py::dict out;
        out["namespace"] = q.pod_namespace;
        out["resource"] = q.resource;
        out["limit"] = q.limit;
        out["used"] = q.used;
        return out;
      },
      "{namespace, resource, limit, used}.");

  py::class_<PyFilterResult> filter(m, "FilterResult", "Where a pod goes, and why not elsewhere.");
  filter
      .def_property_readonly(
          "node", [](const PyFilterResult& r) { return r.result.node; }, "the chosen node, or None")
      .def_property_readonly(
          "devices", [](const PyFilterResult& r) { return DevicesToPython(r.result.devices); },
          "vendor -> per-container lists of ContainerDevice")
      .def_property_readonly(
          "failed", [](const PyFilterResult& r) { return FailedDict(r.result.failed); },
          "node -> reason, for every rejected node")
      .def_property_readonly(
          "scores", [](const PyFilterResult& r) { return ScoresDict(r.result.scores, false); },
          "node -> the node policy's raw score, for every feasible node")
      .def_property_readonly(
          "normalized_scores",
          [](const PyFilterResult& r) { return ScoresDict(r.result.scores, true); },
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
  ValueType(filter, FilterResultDict,
            "{node, devices: {vendor: [[ContainerDevice.to_dict()]]}, failed, scores, "
            "normalized_scores, annotations, has_requests}.");

  py::class_<NodeFragmentation> node_fragmentation(m, "NodeFragmentation",
                                                   "One node's fragmentation under fgd's measure.");
  node_fragmentation.def_readonly("node", &NodeFragmentation::node)
      .def_readonly("free_gpus", &NodeFragmentation::free_gpus,
                    "the free share of every healthy device with a free slot, summed")
      .def_readonly("fragmented_gpus", &NodeFragmentation::fragmented_gpus,
                    "the part of free_gpus the workload is expected not to be able to use")
      .def("__repr__", [](const NodeFragmentation& n) {
        return Repr("NodeFragmentation", {{"node", py::cast(n.node)},
                                          {"free_gpus", py::cast(n.free_gpus)},
                                          {"fragmented_gpus", py::cast(n.fragmented_gpus)}});
      });
  ValueType(node_fragmentation, NodeFragmentationDict, "{node, free_gpus, fragmented_gpus}.");

  py::class_<ClusterFragmentation> fragmentation(m, "ClusterFragmentation",
                                                 "A cluster's fragmentation under fgd's measure.");
  fragmentation.def_readonly("free_gpus", &ClusterFragmentation::free_gpus, "over the nodes")
      .def_readonly("fragmented_gpus", &ClusterFragmentation::fragmented_gpus,
                    "over the nodes; at most free_gpus")
      .def_property_readonly(
          "nodes",
          [](const ClusterFragmentation& f) {
            py::dict out;
            for (const NodeFragmentation& n : f.nodes) out[py::str(n.node)] = py::cast(n);
            return out;
          },
          "node name -> NodeFragmentation, every node in name order")
      .def("__repr__", [](const ClusterFragmentation& f) {
        return Repr("ClusterFragmentation", {{"free_gpus", py::cast(f.free_gpus)},
                                             {"fragmented_gpus", py::cast(f.fragmented_gpus)},
                                             {"nodes", py::cast(f.nodes.size())}});
      });
  DictCompatible(fragmentation, ClusterFragmentationDict,
                 "{free_gpus, fragmented_gpus, nodes: {name: {free_gpus, fragmented_gpus}}}.");

  py::class_<Cluster>(m, "_Cluster")
      .def(py::init([](const std::optional<std::string>& config, const std::string& node_policy,
                       const std::string& gpu_policy, const std::vector<WorkloadTuple>& workload,
                       bool reasons, const std::string& hami_exact) {
             return Cluster(
                 config, FilterOptionsFrom(node_policy, gpu_policy, workload, reasons, hami_exact));
           }),
           py::arg("config"), py::arg("node_policy"), py::arg("gpu_policy"), py::arg("workload"),
           py::arg("reasons"), py::arg("hami_exact"))
      .def("add_node", &Cluster::AddNode)
      .def("remove_node", &Cluster::RemoveNode)
      .def("add_pod", &Cluster::AddPod)
      .def("remove_pod", &Cluster::RemovePod)
      .def("set_quota", &Cluster::SetQuota)
      .def("plan_preemption", &Cluster::PlanPreemption)
      .def("quotas", [](const Cluster& c) { return c.snapshot().Quotas(); })
      .def("filter", &Cluster::Filter)
      .def("node_names", &Cluster::NodeNames)
      .def("fragmentation", &Cluster::Fragmentation)
      .def("pod_count", &Cluster::pod_count)
      .def("node_devices", &Cluster::NodeDevices)
      .def("add_resource_slice", &Cluster::AddResourceSlice)
      .def("remove_resource_slice", &Cluster::RemoveResourceSlice)
      .def("add_device_class", &Cluster::AddDeviceClass)
      .def("remove_device_class", &Cluster::RemoveDeviceClass)
      .def("add_resource_claim", &Cluster::AddResourceClaim)
      .def("remove_resource_claim", &Cluster::RemoveResourceClaim)
      .def("dra_place", &Cluster::DraPlace)
      .def("dra_fragmentation", &Cluster::DraFragmentation);
}

void BindAdmission(py::module_& m) {
  py::class_<AdmissionDecision> decision(m, "AdmissionDecision",
                                         "The mutating webhook's decision on one AdmissionReview.");
  decision.def_readonly("uid", &AdmissionDecision::uid, "the request's uid")
      .def_readonly("allowed", &AdmissionDecision::allowed)
      .def_readonly("code", &AdmissionDecision::code, "HTTP-style status code of a denial")
      .def_readonly("message", &AdmissionDecision::message,
                    "why it was denied, or why it was left alone")
      .def_readonly("patch", &AdmissionDecision::patch,
                    "the JSON Patch (JSON text, not base64), empty for none")
      .def("to_json", &EncodeAdmissionResponse, "The AdmissionReview response JSON.")
      .def("__repr__", [](const AdmissionDecision& d) {
        return Repr("AdmissionDecision", {{"uid", py::cast(d.uid)},
                                          {"allowed", py::cast(d.allowed)},
                                          {"code", py::cast(d.code)},
                                          {"message", py::cast(d.message)},
                                          {"patch", py::cast(d.patch)}});
      });
  DictCompatible(decision, AdmissionDict,
                 "The AdmissionReview response: {apiVersion, kind, response: {uid, allowed, "
                 "patch (base64), patchType, status}}.");

  m.def(
      "_decide_admission",
      [](const std::string& review, const std::optional<std::string>& config,
         const std::string& scheduler_name, const Cluster* cluster) {
        AdmissionOptions options;
        options.scheduler_name = scheduler_name;
        return Unwrap(DecideAdmission(review, ConfigFrom(config), options,
                                      cluster ? &cluster->snapshot() : nullptr));
      },
      py::arg("review"), py::arg("config"), py::arg("scheduler_name"), py::arg("cluster"));
}

}  // namespace

}  // namespace devshare::python

PYBIND11_MODULE(_devshare, m) {
  namespace dp = devshare::python;
  m.doc() =
      "devshare core: codecs, cluster snapshot and filter, protocol state machines, the engine "
      "and the simulator.";
  m.attr("__version__") = DEVSHARE_VERSION;
  dp::AddExceptions(m);
  dp::BindValueTypes(m);
  dp::BindCodecs(m);
  dp::BindPreemption(m);
  dp::BindCluster(m);
  dp::BindAdmission(m);
  dp::BindProtocols(m);
  dp::BindEngine(m);
  dp::BindSimulation(m);
  dp::BindDra(m);
}
