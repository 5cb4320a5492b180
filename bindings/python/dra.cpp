// Kubernetes DRA from Python: objects as the JSON of the API server (the
// public package turns dicts into it), normalised through devshare's
// decoders, the "upstream" allocation on one node, and CEL selectors.
#include "devshare/dra.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "devshare/dra_allocate.hpp"
#include "devshare/dra_cel.hpp"
#include "devshare/dra_place.hpp"

namespace devshare::python {

namespace {

template <typename T, typename Decode>
std::vector<T> DecodeAll(const std::vector<std::string>& texts, Decode decode) {
  std::vector<T> out;
  out.reserve(texts.size());
  for (const std::string& text : texts) out.push_back(Unwrap(decode(text)));
  return out;
}

// What Allocate and ExplainNode take besides the claims and the node, from
// the package's JSON texts.
struct DraInputs {
  std::vector<dra::ResourceSlice> slices;
  dra::DeviceClasses classes;
  dra::AllocatedState allocated;
  dra::AllocatorOptions options;
};

DraInputs InputsFrom(const std::vector<std::string>& slices,
                     const std::vector<std::string>& classes,
                     const std::vector<std::string>& allocated, const std::string& policy,
                     bool fractional_capacity_range) {
  DraInputs c;
  c.slices = DecodeAll<dra::ResourceSlice>(slices, dra::DecodeResourceSlice);
  for (dra::DeviceClass& d : DecodeAll<dra::DeviceClass>(classes, dra::DecodeDeviceClass)) {
    std::string name = d.name;
    c.classes.emplace(std::move(name), std::move(d));
  }
  for (const dra::ResourceClaim& claim :
       DecodeAll<dra::ResourceClaim>(allocated, dra::DecodeResourceClaim)) {
    if (claim.allocation) c.allocated.Add(*claim.allocation);
  }
  c.options.fractional_capacity_range = fractional_capacity_range;
  const std::optional<dra::Policy> named = dra::kPolicyNames.Find(policy);
  if (!named || *named == dra::Policy::kFgd)
    Raise(Status::InvalidArgument("policy must be upstream, binpack or spread, not " + policy));
  c.options.device_order = dra::DeviceOrderOf(*named);
  return c;
}

std::optional<std::vector<std::string>> AllocateOnNode(const std::vector<std::string>& claims,
                                                       const std::string& node,
                                                       const std::vector<std::string>& slices,
                                                       const std::vector<std::string>& classes,
                                                       const std::vector<std::string>& allocated,
                                                       const std::string& policy,
                                                       bool fractional_capacity_range) {
  const DraInputs c = InputsFrom(slices, classes, allocated, policy, fractional_capacity_range);
  std::optional<std::vector<dra::Allocation>> result =
      Unwrap(dra::Allocate(DecodeAll<dra::ResourceClaim>(claims, dra::DecodeResourceClaim),
                           Unwrap(DecodeNode(node)), c.slices, c.classes, c.allocated, c.options));
  if (!result) return std::nullopt;
  std::vector<std::string> out;
  for (const dra::Allocation& a : *result) out.push_back(dra::EncodeAllocation(a));
  return out;
}

py::dict ExplainOnNode(const std::string& claim, const std::string& node,
                       const std::vector<std::string>& slices,
                       const std::vector<std::string>& classes,
                       const std::vector<std::string>& allocated, const std::string& policy,
                       bool fractional_capacity_range) {
  const DraInputs c = InputsFrom(slices, classes, allocated, policy, fractional_capacity_range);
  const dra::NodeExplanation e =
      Unwrap(dra::ExplainNode(Unwrap(dra::DecodeResourceClaim(claim)), Unwrap(DecodeNode(node)),
                              c.slices, c.classes, c.allocated, c.options));
  py::list devices;
  for (const dra::DeviceVerdict& v : e.devices) {
    py::dict d;
    d["device"] = v.device.driver + "/" + v.device.pool + "/" + v.device.device;
    d["request"] = v.request;
    d["fits"] = v.fits;
    d["reason"] = v.reason;
    devices.append(d);
  }
  py::dict out;
  out["devices"] = devices;
  out["pools"] = py::cast(e.pools);
  return out;
}

bool SelectorMatches(const std::string& expression, const std::string& slice_json,
                     const std::string& device_name) {
  const dra::ResourceSlice slice = Unwrap(dra::DecodeResourceSlice(slice_json));
  for (const dra::Device& device : slice.devices) {
    if (device.name != device_name) continue;
    const dra::Selector selector = Unwrap(dra::CompileSelector(expression));
    return Unwrap(dra::Matches(selector, slice.driver, device));
  }
  Raise(Status::NotFound("the slice has no device " + device_name));
}

std::string Normalize(const std::string& kind, const std::string& json) {
  if (kind == "ResourceSlice")
    return dra::EncodeResourceSlice(Unwrap(dra::DecodeResourceSlice(json)));
  if (kind == "DeviceClass") return dra::EncodeDeviceClass(Unwrap(dra::DecodeDeviceClass(json)));
  if (kind == "ResourceClaim")
    return dra::EncodeResourceClaim(Unwrap(dra::DecodeResourceClaim(json)));
  if (kind == "ResourceClaimTemplate")
    return dra::EncodeResourceClaimTemplate(Unwrap(dra::DecodeResourceClaimTemplate(json)));
  Raise(
      Status::InvalidArgument("kind must be ResourceSlice, DeviceClass, ResourceClaim or "
                              "ResourceClaimTemplate, not " +
                              kind));
}

std::int64_t QuantityMilli(const std::string& text) {
  std::optional<dra::Quantity> q = dra::ParseQuantity(text);
  if (!q) Raise(Status::Malformed("not a quantity devshare holds exactly: " + text));
  return q->milli;
}

}  // namespace

void BindDra(py::module_& m) {
  m.def("_dra_allocate", &AllocateOnNode, py::arg("claims"), py::arg("node"), py::arg("slices"),
        py::arg("classes"), py::arg("allocated"), py::arg("policy"),
        py::arg("fractional_capacity_range"),
        "The AllocationResult JSON of each claim on the node as kube-scheduler v1.37's allocator "
        "chooses it (policy upstream) or in devshare's device order (binpack, spread), or None "
        "when they do not fit; raises what upstream reports as an error "
        "(ValueError, KeyError for a missing DeviceClass) and UnsupportedError for a selector "
        "devshare does not evaluate.");
  m.def("_dra_explain", &ExplainOnNode, py::arg("claim"), py::arg("node"), py::arg("slices"),
        py::arg("classes"), py::arg("allocated"), py::arg("policy"),
        py::arg("fractional_capacity_range"),
        "Every request of the claim against every device the node sees, in the order tried: "
        "{devices: [{device, request, fits, reason}], pools: [pools the node cannot use]}.");
  m.def("_dra_selector_matches", &SelectorMatches, py::arg("expression"), py::arg("slice"),
        py::arg("device"),
        "Whether the CEL selector selects the slice's device; raises DecodeError for a syntax "
        "error, UnsupportedError beyond what devshare evaluates, ValueError for a runtime error.");
  m.def("_dra_quantity_milli", &QuantityMilli, py::arg("text"),
        "A Kubernetes quantity in thousandths, exactly; DecodeError when it cannot be.");
  m.def("_dra_normalize", &Normalize, py::arg("kind"), py::arg("json"),
        "The object as devshare keeps it, encoded again (what devshare reads of it).");
}

}  // namespace devshare::python
