// DRA objects (resource.k8s.io/v1) decoded from and encoded to the JSON of
// the API server (devshare/dra.hpp).
#include "devshare/dra.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <boost/json.hpp>
#include <chrono>
#include <type_traits>
#include <utility>

#include "base/json.hpp"
#include "base/json_reader.hpp"
#include "base/text.hpp"
#include "devshare/dra_json.hpp"
#include "devshare/time_range.hpp"
#include "k8s/node_selector.hpp"

namespace devshare::dra {

namespace bj = boost::json;

// ---------------------------------------------------------------------------
// Quantities, qualified names, node selectors

std::optional<Quantity> ParseQuantity(std::string_view text) {
  std::optional<std::int64_t> milli = QuantityExactMilli(text);
  if (!milli) return std::nullopt;
  return Quantity{*milli};
}

std::string FormatQuantity(Quantity q) {
  if (q.milli % 1000 == 0) return fmt::format("{}", q.milli / 1000);
  return fmt::format("{}m", q.milli);
}

QualifiedName SplitQualifiedName(std::string_view key, std::string_view driver) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return QualifiedName{driver, key};
  return QualifiedName{key.substr(0, slash), key.substr(slash + 1)};
}

// ---------------------------------------------------------------------------
// Decoding

namespace {

using Reader = internal::JsonReader;

// A resource.Quantity: its text, or a bare JSON number (Go accepts both).
void ReadQuantity(Reader& r, const bj::value& v, const std::string& path, Quantity& out) {
  if (!r.ok()) return;
  std::string text;
  if (v.is_string()) {
    text = v.get_string();
  } else if (v.is_int64()) {
    text = std::to_string(v.get_int64());
  } else if (v.is_uint64()) {
    text = std::to_string(v.get_uint64());
  } else {
    return r.Expect(path, "a quantity", v);
  }
  std::optional<Quantity> q = ParseQuantity(text);
  if (!q) {
    return r.Fail(path, fmt::format("{} is not a quantity devshare holds exactly (whole "
                                    "thousandths, at most 9.2e15)",
                                    internal::Quote(text)));
  }
  out = *q;
}

void ReadQuantity(Reader& r, const bj::object& o, std::string_view key, const std::string& path,
                  std::optional<Quantity>& out) {
  if (const bj::value* v = r.Get(o, key)) ReadQuantity(r, *v, path, out.emplace());
}

void ReadQuantities(Reader& r, const bj::object& o, std::string_view key, const std::string& path,
                    std::map<std::string, Quantity>& out) {
  r.Members(o, key, path, [&](std::string name, const bj::value& v, const std::string& at) {
    ReadQuantity(r, v, at, out[std::move(name)]);
  });
}

// metadata.name (required), and the others the decoders keep.
void ReadMetadata(Reader& r, const bj::object& root, std::string* object_namespace,
                  std::string& name, std::string* uid, std::string* resource_version) {
  const bj::object* m = r.Object(root, "metadata", "metadata");
  if (m != nullptr) {
    if (object_namespace != nullptr)
      r.String(*m, "namespace", "metadata.namespace", *object_namespace);
    r.String(*m, "name", "metadata.name", name);
    if (uid != nullptr) r.String(*m, "uid", "metadata.uid", *uid);
    if (resource_version != nullptr)
      r.String(*m, "resourceVersion", "metadata.resourceVersion", *resource_version);
  }
  if (r.ok() && name.empty()) r.Fail("metadata.name", "missing");
}

template <typename T, typename Fill>
Result<T> Decode(const bj::object& root, std::string_view what, Fill&& fill) {
  Reader r(what);
  T out;
  fill(r, root, out);
  if (!r.ok()) return r.status();
  return out;
}

// `json` parsed, then decoded by `decode` (the object overload).
template <typename T>
Result<T> DecodeText(std::string_view json, std::string_view what,
                     Result<T> (*decode)(const bj::object&)) {
  bj::monotonic_resource arena;
  Result<bj::value> doc = internal::ParseJson(json, what, bj::storage_ptr(&arena));
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return internal::TypeError(what, "value", "an object", *doc);
  return decode(doc->get_object());
}

// Exactly one of the attribute value's fields.
void ReadAttribute(Reader& r, const bj::value& v, const std::string& path, AttributeValue& out) {
  if (!v.is_object()) return r.Expect(path, "an object", v);
  const bj::object& o = v.get_object();
  int set = 0;
  auto scalar = [&](std::string_view key, auto&& read) {
    if (const bj::value* x = r.Get(o, key)) {
      ++set;
      read(*x, fmt::format("{}.{}", path, key));
    }
  };
  scalar("int", [&](const bj::value& x, const std::string& at) {
    r.Int(x, at, out.emplace<std::int64_t>());
  });
  scalar("bool",
         [&](const bj::value& x, const std::string& at) { r.Bool(x, at, out.emplace<bool>()); });
  scalar("string", [&](const bj::value& x, const std::string& at) {
    r.String(x, at, out.emplace<std::string>());
  });
  scalar("version", [&](const bj::value& x, const std::string& at) {
    r.String(x, at, out.emplace<Version>().text);
  });
  auto list = [&](auto type, std::string_view key, auto&& read_one) {
    using T = typename decltype(type)::type;
    if (r.Get(o, key) == nullptr) return;
    ++set;
    auto& values = out.emplace<std::vector<T>>();
    r.Each(o, key, fmt::format("{}.{}", path, key), [&](const bj::value& x, const std::string& at) {
      T value{};
      read_one(x, at, value);
      values.push_back(std::move(value));
    });
  };
  list(std::type_identity<std::int64_t>{}, "ints",
       [&](const bj::value& x, const std::string& at, std::int64_t& v) { r.Int(x, at, v); });
  list(std::type_identity<bool>{}, "bools",
       [&](const bj::value& x, const std::string& at, bool& v) { r.Bool(x, at, v); });
  list(std::type_identity<std::string>{}, "strings",
       [&](const bj::value& x, const std::string& at, std::string& v) { r.String(x, at, v); });
  list(std::type_identity<Version>{}, "versions",
       [&](const bj::value& x, const std::string& at, Version& v) { r.String(x, at, v.text); });
  if (r.ok() && set != 1) r.Fail(path, set == 0 ? "no value" : "more than one value");
}

void ReadNodeSelector(Reader& r, const bj::object& o, std::string_view key, const std::string& path,
                      std::optional<NodeSelector>& out) {
  if (const bj::object* selector = r.Object(o, key, path))
    internal::ReadNodeSelector(r, *selector, path, out.emplace());
}

// nodeName / nodeSelector / allNodes of a slice or a device.
void ReadNodeScope(Reader& r, const bj::object& o, const std::string& path, NodeScope& out) {
  r.String(o, "nodeName", path + "nodeName", out.node_name);
  ReadNodeSelector(r, o, "nodeSelector", path + "nodeSelector", out.node_selector);
  r.Bool(o, "allNodes", path + "allNodes", out.all_nodes);
}

void ReadTolerations(Reader& r, const bj::object& o, const std::string& path,
                     std::vector<DeviceToleration>& out) {
  r.EachObject(o, "tolerations", path, [&](const bj::object& t, const std::string& at) {
    DeviceToleration& toleration = out.emplace_back();
    r.String(t, "key", at + ".key", toleration.key);
    r.String(t, "operator", at + ".operator", toleration.op);
    r.String(t, "value", at + ".value", toleration.value);
    r.String(t, "effect", at + ".effect", toleration.effect);
    if (const bj::value* seconds = r.Get(t, "tolerationSeconds"))
      r.Int(*seconds, at + ".tolerationSeconds", toleration.toleration_seconds.emplace());
  });
}

void ReadCounters(Reader& r, const bj::object& o, const std::string& path,
                  std::map<std::string, Quantity>& out) {
  r.Members(o, "counters", path, [&](std::string name, const bj::value& v, const std::string& at) {
    if (!v.is_object()) return r.Expect(at, "an object", v);
    const bj::value* value = r.Get(v.get_object(), "value");
    if (value == nullptr) return r.Fail(at + ".value", "missing");
    ReadQuantity(r, *value, at + ".value", out[std::move(name)]);
  });
}

void ReadDevice(Reader& r, const bj::object& o, const std::string& path, bool per_device,
                Device& d) {
  r.String(o, "name", path + ".name", d.name);
  if (r.ok() && d.name.empty()) r.Fail(path + ".name", "missing");
  r.Members(o, "attributes", path + ".attributes",
            [&](std::string key, const bj::value& v, const std::string& at) {
              ReadAttribute(r, v, at, d.attributes[std::move(key)]);
            });
  r.Members(o, "capacity", path + ".capacity",
            [&](std::string key, const bj::value& v, const std::string& at) {
              if (!v.is_object()) return r.Expect(at, "an object", v);
              const bj::object& c = v.get_object();
              Capacity& capacity = d.capacity[std::move(key)];
              const bj::value* value = r.Get(c, "value");
              if (value == nullptr) return r.Fail(at + ".value", "missing");
              ReadQuantity(r, *value, at + ".value", capacity.value);
              const bj::object* policy = r.Object(c, "requestPolicy", at + ".requestPolicy");
              if (policy == nullptr) return;
              CapacityRequestPolicy& p = capacity.request_policy.emplace();
              const std::string pat = at + ".requestPolicy";
              ReadQuantity(r, *policy, "default", pat + ".default", p.default_value);
              r.Each(*policy, "validValues", pat + ".validValues",
                     [&](const bj::value& x, const std::string& xat) {
                       ReadQuantity(r, x, xat, p.valid_values.emplace_back());
                     });
              if (const bj::object* range = r.Object(*policy, "validRange", pat + ".validRange")) {
                CapacityRange& cr = p.valid_range.emplace();
                ReadQuantity(r, *range, "min", pat + ".validRange.min", cr.min);
                ReadQuantity(r, *range, "max", pat + ".validRange.max", cr.max);
                ReadQuantity(r, *range, "step", pat + ".validRange.step", cr.step);
              }
            });
  r.EachObject(o, "consumesCounters", path + ".consumesCounters",
               [&](const bj::object& c, const std::string& at) {
                 CounterConsumption& consumption = d.consumes_counters.emplace_back();
                 r.String(c, "counterSet", at + ".counterSet", consumption.counter_set);
                 ReadCounters(r, c, at + ".counters", consumption.counters);
                 r.Strings(c, "compatibilityGroups", at + ".compatibilityGroups",
                           consumption.compatibility_groups);
               });
  NodeScope scope;
  ReadNodeScope(r, o, path + ".", scope);
  if (per_device) d.node_scope = std::move(scope);
  r.EachObject(o, "taints", path + ".taints", [&](const bj::object& t, const std::string& at) {
    DeviceTaint& taint = d.taints.emplace_back();
    r.String(t, "key", at + ".key", taint.key);
    r.String(t, "value", at + ".value", taint.value);
    r.String(t, "effect", at + ".effect", taint.effect);
  });
  r.Bool(o, "bindsToNode", path + ".bindsToNode", d.binds_to_node);
  r.Strings(o, "bindingConditions", path + ".bindingConditions", d.binding_conditions);
  r.Strings(o, "bindingFailureConditions", path + ".bindingFailureConditions",
            d.binding_failure_conditions);
  r.Bool(o, "allowMultipleAllocations", path + ".allowMultipleAllocations",
         d.allow_multiple_allocations);
}

void ReadSelectors(Reader& r, const bj::object& o, const std::string& path,
                   std::vector<std::string>& out) {
  r.EachObject(o, "selectors", path, [&](const bj::object& s, const std::string& at) {
    const bj::object* cel = r.Object(s, "cel", at + ".cel");
    if (cel == nullptr) return r.Fail(at, "no cel selector (the only kind the API has)");
    r.String(*cel, "expression", at + ".cel.expression", out.emplace_back());
  });
}

void ReadSelection(Reader& r, const bj::object& o, const std::string& path, bool exact,
                   DeviceSelection& s) {
  r.String(o, "deviceClassName", path + ".deviceClassName", s.device_class_name);
  if (r.ok() && s.device_class_name.empty()) r.Fail(path + ".deviceClassName", "missing");
  ReadSelectors(r, o, path + ".selectors", s.selectors);
  std::string mode;
  r.String(o, "allocationMode", path + ".allocationMode", mode);
  if (mode == "All") {
    s.allocation_mode = AllocationMode::kAll;
  } else if (mode.empty() || mode == "ExactCount") {
    s.allocation_mode = AllocationMode::kExactCount;
  } else {
    r.Fail(path + ".allocationMode",
           fmt::format("{} is neither ExactCount nor All", internal::Quote(mode)));
  }
  if (s.allocation_mode == AllocationMode::kExactCount) {
    r.Int(o, "count", path + ".count", s.count);
    if (r.ok() && s.count <= 0) r.Fail(path + ".count", "must be at least 1");
  } else {
    s.count = 0;
  }
  if (exact) r.Bool(o, "adminAccess", path + ".adminAccess", s.admin_access);
  ReadTolerations(r, o, path + ".tolerations", s.tolerations);
  if (const bj::object* capacity = r.Object(o, "capacity", path + ".capacity"))
    ReadQuantities(r, *capacity, "requests", path + ".capacity.requests", s.capacity_requests);
}

void ReadClaimSpec(Reader& r, const bj::object& spec, const std::string& path, ClaimSpec& out) {
  const bj::object* devices = r.Object(spec, "devices", path + ".devices");
  if (devices == nullptr) return;
  const std::string at_devices = path + ".devices";
  r.EachObject(*devices, "requests", at_devices + ".requests",
               [&](const bj::object& q, const std::string& at) {
                 DeviceRequest& request = out.requests.emplace_back();
                 r.String(q, "name", at + ".name", request.name);
                 if (r.ok() && request.name.empty()) r.Fail(at + ".name", "missing");
                 if (const bj::object* exactly = r.Object(q, "exactly", at + ".exactly"))
                   ReadSelection(r, *exactly, at + ".exactly", true, request.exactly.emplace());
                 r.EachObject(q, "firstAvailable", at + ".firstAvailable",
                              [&](const bj::object& sub, const std::string& sat) {
                                DeviceSubRequest& s = request.first_available.emplace_back();
                                r.String(sub, "name", sat + ".name", s.name);
                                if (r.ok() && s.name.empty()) r.Fail(sat + ".name", "missing");
                                ReadSelection(r, sub, sat, false, s.selection);
                              });
                 if (r.ok() && request.exactly.has_value() == !request.first_available.empty())
                   r.Fail(at, "needs exactly one of exactly and firstAvailable");
               });
  r.EachObject(*devices, "constraints", at_devices + ".constraints",
               [&](const bj::object& c, const std::string& at) {
                 DeviceConstraint& constraint = out.constraints.emplace_back();
                 r.Strings(c, "requests", at + ".requests", constraint.requests);
                 r.String(c, "matchAttribute", at + ".matchAttribute", constraint.match_attribute);
                 r.String(c, "distinctAttribute", at + ".distinctAttribute",
                          constraint.distinct_attribute);
               });
}

void ReadAllocation(Reader& r, const bj::object& o, const std::string& path, Allocation& out) {
  if (const bj::object* devices = r.Object(o, "devices", path + ".devices")) {
    r.EachObject(*devices, "results", path + ".devices.results",
                 [&](const bj::object& d, const std::string& at) {
                   AllocatedDevice& device = out.devices.emplace_back();
                   r.String(d, "request", at + ".request", device.request);
                   r.String(d, "driver", at + ".driver", device.driver);
                   r.String(d, "pool", at + ".pool", device.pool);
                   r.String(d, "device", at + ".device", device.device);
                   r.Bool(d, "adminAccess", at + ".adminAccess", device.admin_access);
                   ReadTolerations(r, d, at + ".tolerations", device.tolerations);
                   r.Strings(d, "bindingConditions", at + ".bindingConditions",
                             device.binding_conditions);
                   r.Strings(d, "bindingFailureConditions", at + ".bindingFailureConditions",
                             device.binding_failure_conditions);
                   r.String(d, "shareID", at + ".shareID", device.share_id);
                   ReadQuantities(r, d, "consumedCapacity", at + ".consumedCapacity",
                                  device.consumed_capacity);
                 });
  }
  ReadNodeSelector(r, o, "nodeSelector", path + ".nodeSelector", out.node_selector);
  std::string allocated_at;
  r.String(o, "allocationTimestamp", path + ".allocationTimestamp", allocated_at);
  if (allocated_at.empty()) return;
  Result<std::int64_t> at = DecodeRfc3339(allocated_at);
  if (!at.ok()) return r.Fail(path + ".allocationTimestamp", at.status().message());
  out.allocated_unix_seconds = *at;
}

constexpr std::string_view kSliceWhat = "ResourceSlice";
constexpr std::string_view kClassWhat = "DeviceClass";
constexpr std::string_view kClaimWhat = "ResourceClaim";
constexpr std::string_view kTemplateWhat = "ResourceClaimTemplate";

}  // namespace

Result<ResourceSlice> DecodeResourceSlice(std::string_view json) {
  return DecodeText<ResourceSlice>(json, kSliceWhat, DecodeResourceSlice);
}

Result<ResourceSlice> DecodeResourceSlice(const bj::object& root) {
  return Decode<ResourceSlice>(
      root, kSliceWhat, [](Reader& r, const bj::object& root, ResourceSlice& s) {
        ReadMetadata(r, root, nullptr, s.name, nullptr, &s.resource_version);
        const bj::object* spec = r.Object(root, "spec", "spec");
        if (spec == nullptr) return r.Fail("spec", "missing");
        r.String(*spec, "driver", "spec.driver", s.driver);
        if (r.ok() && s.driver.empty()) r.Fail("spec.driver", "missing");
        const bj::object* pool = r.Object(*spec, "pool", "spec.pool");
        if (pool == nullptr) return r.Fail("spec.pool", "missing");
        r.String(*pool, "name", "spec.pool.name", s.pool.name);
        r.Int(*pool, "generation", "spec.pool.generation", s.pool.generation);
        r.Int(*pool, "resourceSliceCount", "spec.pool.resourceSliceCount",
              s.pool.resource_slice_count);
        if (r.ok() && s.pool.name.empty()) r.Fail("spec.pool.name", "missing");
        if (r.ok() && s.pool.resource_slice_count <= 0)
          r.Fail("spec.pool.resourceSliceCount", "must be at least 1");
        ReadNodeScope(r, *spec, "spec.", s.node_scope);
        r.Bool(*spec, "perDeviceNodeSelection", "spec.perDeviceNodeSelection",
               s.per_device_node_selection);
        r.EachObject(*spec, "devices", "spec.devices",
                     [&](const bj::object& d, const std::string& at) {
                       ReadDevice(r, d, at, s.per_device_node_selection, s.devices.emplace_back());
                     });
        r.EachObject(*spec, "sharedCounters", "spec.sharedCounters",
                     [&](const bj::object& c, const std::string& at) {
                       CounterSet& set = s.shared_counters.emplace_back();
                       r.String(c, "name", at + ".name", set.name);
                       ReadCounters(r, c, at + ".counters", set.counters);
                     });
      });
}

Result<DeviceClass> DecodeDeviceClass(std::string_view json) {
  return DecodeText<DeviceClass>(json, kClassWhat, DecodeDeviceClass);
}

Result<DeviceClass> DecodeDeviceClass(const bj::object& root) {
  return Decode<DeviceClass>(root, kClassWhat,
                             [](Reader& r, const bj::object& root, DeviceClass& c) {
                               ReadMetadata(r, root, nullptr, c.name, nullptr, &c.resource_version);
                               const bj::object* spec = r.Object(root, "spec", "spec");
                               if (spec == nullptr) return;
                               ReadSelectors(r, *spec, "spec.selectors", c.selectors);
                               r.String(*spec, "extendedResourceName", "spec.extendedResourceName",
                                        c.extended_resource_name);
                             });
}

Result<ResourceClaim> DecodeResourceClaim(std::string_view json) {
  return DecodeText<ResourceClaim>(json, kClaimWhat, DecodeResourceClaim);
}

Result<ResourceClaim> DecodeResourceClaim(const bj::object& root) {
  return Decode<ResourceClaim>(
      root, kClaimWhat, [](Reader& r, const bj::object& root, ResourceClaim& c) {
        ReadMetadata(r, root, &c.claim_namespace, c.name, &c.uid, &c.resource_version);
        const bj::object* spec = r.Object(root, "spec", "spec");
        if (spec == nullptr) return r.Fail("spec", "missing");
        ReadClaimSpec(r, *spec, "spec", c.spec);
        const bj::object* status = r.Object(root, "status", "status");
        if (status == nullptr) return;
        if (const bj::object* allocation = r.Object(*status, "allocation", "status.allocation"))
          ReadAllocation(r, *allocation, "status.allocation", c.allocation.emplace());
        r.EachObject(*status, "reservedFor", "status.reservedFor",
                     [&](const bj::object& o, const std::string& at) {
                       ClaimConsumer& consumer = c.reserved_for.emplace_back();
                       r.String(o, "apiGroup", at + ".apiGroup", consumer.api_group);
                       r.String(o, "resource", at + ".resource", consumer.resource);
                       r.String(o, "name", at + ".name", consumer.name);
                       r.String(o, "uid", at + ".uid", consumer.uid);
                     });
      });
}

Result<ResourceClaimTemplate> DecodeResourceClaimTemplate(std::string_view json) {
  return DecodeText<ResourceClaimTemplate>(json, kTemplateWhat, DecodeResourceClaimTemplate);
}

Result<ResourceClaimTemplate> DecodeResourceClaimTemplate(const bj::object& root) {
  return Decode<ResourceClaimTemplate>(
      root, kTemplateWhat, [](Reader& r, const bj::object& root, ResourceClaimTemplate& t) {
        ReadMetadata(r, root, &t.template_namespace, t.name, nullptr, nullptr);
        const bj::object* spec = r.Object(root, "spec", "spec");
        if (spec == nullptr) return r.Fail("spec", "missing");
        const bj::object* claim_spec = r.Object(*spec, "spec", "spec.spec");
        if (claim_spec == nullptr) return r.Fail("spec.spec", "missing");
        ReadClaimSpec(r, *claim_spec, "spec.spec", t.spec);
      });
}

// ---------------------------------------------------------------------------
// Encoding

namespace {

bj::value QuantityJson(Quantity q) { return bj::value(FormatQuantity(q)); }

bj::array StringsJson(const std::vector<std::string>& values) {
  bj::array a;
  for (const std::string& v : values) a.emplace_back(v);
  return a;
}

bj::object QuantitiesJson(const std::map<std::string, Quantity>& values) {
  bj::object o;
  for (const auto& [name, q] : values) o[name] = QuantityJson(q);
  return o;
}

bj::object CountersJson(const std::map<std::string, Quantity>& counters) {
  bj::object o;
  for (const auto& [name, q] : counters) o[name] = bj::object{{"value", QuantityJson(q)}};
  return o;
}

bj::object AttributeJson(const AttributeValue& value) {
  struct Visit {
    bj::object operator()(std::int64_t v) const { return {{"int", v}}; }
    bj::object operator()(bool v) const { return {{"bool", v}}; }
    bj::object operator()(const std::string& v) const { return {{"string", v}}; }
    bj::object operator()(const Version& v) const { return {{"version", v.text}}; }
    bj::object operator()(const std::vector<std::int64_t>& v) const {
      return {{"ints", bj::array(v.begin(), v.end())}};
    }
    bj::object operator()(const std::vector<bool>& v) const {
      bj::array a;
      for (bool b : v) a.emplace_back(b);
      return {{"bools", std::move(a)}};
    }
    bj::object operator()(const std::vector<std::string>& v) const {
      return {{"strings", StringsJson(v)}};
    }
    bj::object operator()(const std::vector<Version>& v) const {
      bj::array a;
      for (const Version& x : v) a.emplace_back(x.text);
      return {{"versions", std::move(a)}};
    }
  };
  return std::visit(Visit{}, value);
}

bj::array RequirementsJson(const std::vector<NodeSelectorRequirement>& requirements) {
  bj::array a;
  for (const NodeSelectorRequirement& r : requirements) {
    bj::object o{{"key", r.key}, {"operator", r.op}};
    if (!r.values.empty()) o["values"] = StringsJson(r.values);
    a.emplace_back(std::move(o));
  }
  return a;
}

bj::object NodeSelectorJson(const NodeSelector& selector) {
  bj::array terms;
  for (const NodeSelectorTerm& t : selector.terms) {
    bj::object term;
    if (!t.match_expressions.empty())
      term["matchExpressions"] = RequirementsJson(t.match_expressions);
    if (!t.match_fields.empty()) term["matchFields"] = RequirementsJson(t.match_fields);
    terms.emplace_back(std::move(term));
  }
  return {{"nodeSelectorTerms", std::move(terms)}};
}

void PutNodeScope(bj::object& o, const NodeScope& scope) {
  if (!scope.node_name.empty()) o["nodeName"] = scope.node_name;
  if (scope.node_selector) o["nodeSelector"] = NodeSelectorJson(*scope.node_selector);
  if (scope.all_nodes) o["allNodes"] = true;
}

bj::array TolerationsJson(const std::vector<DeviceToleration>& tolerations) {
  bj::array a;
  for (const DeviceToleration& t : tolerations) {
    bj::object o;
    if (!t.key.empty()) o["key"] = t.key;
    o["operator"] = t.op;
    if (!t.value.empty()) o["value"] = t.value;
    if (!t.effect.empty()) o["effect"] = t.effect;
    if (t.toleration_seconds) o["tolerationSeconds"] = *t.toleration_seconds;
    a.emplace_back(std::move(o));
  }
  return a;
}

bj::array SelectorsJson(const std::vector<std::string>& selectors) {
  bj::array a;
  for (const std::string& s : selectors) a.emplace_back(bj::object{{"cel", {{"expression", s}}}});
  return a;
}

bj::object DeviceJson(const Device& d) {
  bj::object o{{"name", d.name}};
  if (!d.attributes.empty()) {
    bj::object attributes;
    for (const auto& [key, value] : d.attributes) attributes[key] = AttributeJson(value);
    o["attributes"] = std::move(attributes);
  }
  if (!d.capacity.empty()) {
    bj::object capacity;
    for (const auto& [key, c] : d.capacity) {
      bj::object entry{{"value", QuantityJson(c.value)}};
      if (c.request_policy) {
        const CapacityRequestPolicy& p = *c.request_policy;
        bj::object policy;
        if (p.default_value) policy["default"] = QuantityJson(*p.default_value);
        if (!p.valid_values.empty()) {
          bj::array values;
          for (Quantity q : p.valid_values) values.push_back(QuantityJson(q));
          policy["validValues"] = std::move(values);
        }
        if (p.valid_range) {
          bj::object range;
          if (p.valid_range->min) range["min"] = QuantityJson(*p.valid_range->min);
          if (p.valid_range->max) range["max"] = QuantityJson(*p.valid_range->max);
          if (p.valid_range->step) range["step"] = QuantityJson(*p.valid_range->step);
          policy["validRange"] = std::move(range);
        }
        entry["requestPolicy"] = std::move(policy);
      }
      capacity[key] = std::move(entry);
    }
    o["capacity"] = std::move(capacity);
  }
  if (!d.consumes_counters.empty()) {
    bj::array consumes;
    for (const CounterConsumption& c : d.consumes_counters) {
      bj::object consumption{{"counterSet", c.counter_set}, {"counters", CountersJson(c.counters)}};
      if (!c.compatibility_groups.empty())
        consumption["compatibilityGroups"] = StringsJson(c.compatibility_groups);
      consumes.emplace_back(std::move(consumption));
    }
    o["consumesCounters"] = std::move(consumes);
  }
  if (d.node_scope) PutNodeScope(o, *d.node_scope);
  if (!d.taints.empty()) {
    bj::array taints;
    for (const DeviceTaint& t : d.taints) {
      bj::object taint{{"key", t.key}};
      if (!t.value.empty()) taint["value"] = t.value;
      taint["effect"] = t.effect;
      taints.emplace_back(std::move(taint));
    }
    o["taints"] = std::move(taints);
  }
  if (d.binds_to_node) o["bindsToNode"] = true;
  if (!d.binding_conditions.empty()) o["bindingConditions"] = StringsJson(d.binding_conditions);
  if (!d.binding_failure_conditions.empty())
    o["bindingFailureConditions"] = StringsJson(d.binding_failure_conditions);
  if (d.allow_multiple_allocations) o["allowMultipleAllocations"] = true;
  return o;
}

// A request's `exactly`, or (with a name) one of its firstAvailable.
bj::object SelectionJson(const DeviceSelection& s, bool exact, std::string_view name = {}) {
  bj::object o;
  if (!name.empty()) o["name"] = name;
  o["deviceClassName"] = s.device_class_name;
  if (!s.selectors.empty()) o["selectors"] = SelectorsJson(s.selectors);
  if (s.allocation_mode == AllocationMode::kAll) {
    o["allocationMode"] = "All";
  } else {
    o["allocationMode"] = "ExactCount";
    o["count"] = s.count;
  }
  if (exact && s.admin_access) o["adminAccess"] = true;
  if (!s.tolerations.empty()) o["tolerations"] = TolerationsJson(s.tolerations);
  if (!s.capacity_requests.empty())
    o["capacity"] = bj::object{{"requests", QuantitiesJson(s.capacity_requests)}};
  return o;
}

bj::object ClaimSpecJson(const ClaimSpec& spec) {
  bj::array requests;
  for (const DeviceRequest& r : spec.requests) {
    bj::object request{{"name", r.name}};
    if (r.exactly) request["exactly"] = SelectionJson(*r.exactly, true);
    if (!r.first_available.empty()) {
      bj::array subs;
      for (const DeviceSubRequest& s : r.first_available) {
        subs.emplace_back(SelectionJson(s.selection, false, s.name));
      }
      request["firstAvailable"] = std::move(subs);
    }
    requests.emplace_back(std::move(request));
  }
  bj::object devices{{"requests", std::move(requests)}};
  if (!spec.constraints.empty()) {
    bj::array constraints;
    for (const DeviceConstraint& c : spec.constraints) {
      bj::object constraint;
      if (!c.requests.empty()) constraint["requests"] = StringsJson(c.requests);
      if (c.match_attribute) constraint["matchAttribute"] = *c.match_attribute;
      if (c.distinct_attribute) constraint["distinctAttribute"] = *c.distinct_attribute;
      constraints.emplace_back(std::move(constraint));
    }
    devices["constraints"] = std::move(constraints);
  }
  return {{"devices", std::move(devices)}};
}

bj::object AllocationJson(const Allocation& allocation) {
  bj::array results;
  for (const AllocatedDevice& d : allocation.devices) {
    bj::object o{
        {"request", d.request}, {"driver", d.driver}, {"pool", d.pool}, {"device", d.device}};
    if (d.admin_access) o["adminAccess"] = true;
    if (!d.tolerations.empty()) o["tolerations"] = TolerationsJson(d.tolerations);
    if (!d.binding_conditions.empty()) o["bindingConditions"] = StringsJson(d.binding_conditions);
    if (!d.binding_failure_conditions.empty())
      o["bindingFailureConditions"] = StringsJson(d.binding_failure_conditions);
    if (d.share_id) o["shareID"] = *d.share_id;
    if (!d.consumed_capacity.empty()) o["consumedCapacity"] = QuantitiesJson(d.consumed_capacity);
    results.emplace_back(std::move(o));
  }
  bj::object o{{"devices", bj::object{{"results", std::move(results)}}}};
  if (allocation.node_selector) o["nodeSelector"] = NodeSelectorJson(*allocation.node_selector);
  if (allocation.allocated_unix_seconds) {
    const std::chrono::sys_seconds at{std::chrono::seconds{*allocation.allocated_unix_seconds}};
    o["allocationTimestamp"] = fmt::format("{:%Y-%m-%dT%H:%M:%S}Z", at);
  }
  return o;
}

bj::object Header(std::string_view kind, bj::object metadata) {
  return {{"apiVersion", "resource.k8s.io/v1"}, {"kind", kind}, {"metadata", std::move(metadata)}};
}

bj::object Metadata(std::string_view object_namespace, std::string_view name,
                    std::string_view uid = {}, std::string_view resource_version = {}) {
  bj::object m{{"name", name}};
  if (!object_namespace.empty()) m["namespace"] = object_namespace;
  if (!uid.empty()) m["uid"] = uid;
  if (!resource_version.empty()) m["resourceVersion"] = resource_version;
  return m;
}

}  // namespace

std::string EncodeResourceSlice(const ResourceSlice& slice) {
  bj::object spec{{"driver", slice.driver},
                  {"pool",
                   {{"name", slice.pool.name},
                    {"generation", slice.pool.generation},
                    {"resourceSliceCount", slice.pool.resource_slice_count}}}};
  PutNodeScope(spec, slice.node_scope);
  if (slice.per_device_node_selection) spec["perDeviceNodeSelection"] = true;
  bj::array devices;
  for (const Device& d : slice.devices) devices.emplace_back(DeviceJson(d));
  if (!devices.empty()) spec["devices"] = std::move(devices);
  if (!slice.shared_counters.empty()) {
    bj::array sets;
    for (const CounterSet& c : slice.shared_counters)
      sets.emplace_back(bj::object{{"name", c.name}, {"counters", CountersJson(c.counters)}});
    spec["sharedCounters"] = std::move(sets);
  }
  bj::object o = Header("ResourceSlice", Metadata({}, slice.name, {}, slice.resource_version));
  o["spec"] = std::move(spec);
  return bj::serialize(o);
}

std::string EncodeDeviceClass(const DeviceClass& device_class) {
  bj::object spec;
  if (!device_class.selectors.empty()) spec["selectors"] = SelectorsJson(device_class.selectors);
  if (device_class.extended_resource_name)
    spec["extendedResourceName"] = *device_class.extended_resource_name;
  bj::object o =
      Header("DeviceClass", Metadata({}, device_class.name, {}, device_class.resource_version));
  o["spec"] = std::move(spec);
  return bj::serialize(o);
}

namespace {

bj::array ConsumersJson(const std::vector<ClaimConsumer>& reserved_for) {
  bj::array consumers;
  for (const ClaimConsumer& c : reserved_for) {
    bj::object consumer;
    if (!c.api_group.empty()) consumer["apiGroup"] = c.api_group;
    consumer["resource"] = c.resource;
    consumer["name"] = c.name;
    consumer["uid"] = c.uid;
    consumers.emplace_back(std::move(consumer));
  }
  return consumers;
}

}  // namespace

std::string EncodeResourceClaim(const ResourceClaim& claim) {
  bj::object o = Header("ResourceClaim", Metadata(claim.claim_namespace, claim.name, claim.uid,
                                                  claim.resource_version));
  o["spec"] = ClaimSpecJson(claim.spec);
  bj::object status;
  if (claim.allocation) status["allocation"] = AllocationJson(*claim.allocation);
  if (!claim.reserved_for.empty()) status["reservedFor"] = ConsumersJson(claim.reserved_for);
  if (!status.empty()) o["status"] = std::move(status);
  return bj::serialize(o);
}

std::string EncodeClaimStatusPatch(const std::optional<Allocation>& allocation,
                                   const std::vector<ClaimConsumer>& reserved_for,
                                   std::string_view resource_version) {
  bj::object status;
  status["allocation"] = allocation ? bj::value(AllocationJson(*allocation)) : bj::value(nullptr);
  status["reservedFor"] =
      reserved_for.empty() ? bj::value(nullptr) : bj::value(ConsumersJson(reserved_for));
  return bj::serialize(bj::object{{"metadata", bj::object{{"resourceVersion", resource_version}}},
                                  {"status", std::move(status)}});
}

std::string EncodeResourceClaimTemplate(const ResourceClaimTemplate& claim_template) {
  bj::object o = Header("ResourceClaimTemplate",
                        Metadata(claim_template.template_namespace, claim_template.name));
  o["spec"] = bj::object{{"spec", ClaimSpecJson(claim_template.spec)}};
  return bj::serialize(o);
}

std::string EncodeAllocation(const Allocation& allocation) {
  return bj::serialize(AllocationJson(allocation));
}

}  // namespace devshare::dra
