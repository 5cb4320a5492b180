#include "devshare/objects.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/json.hpp"
#include "base/text.hpp"
#include "devshare/objects_json.hpp"
#include "k8s/quantity.hpp"

namespace devshare {

// ---------------------------------------------------------------------------
// StringMap

StringMap::StringMap(std::initializer_list<Entry> entries) {
  for (const Entry& e : entries) Set(e.first, e.second);
}

const std::string* StringMap::Find(std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, std::string_view k) { return e.first < k; });
  if (it == entries_.end() || it->first != key) return nullptr;
  return &it->second;
}

void StringMap::Set(std::string_view key, std::string_view value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, std::string_view k) { return e.first < k; });
  if (it != entries_.end() && it->first == key) {
    it->second.assign(value);
  } else {
    entries_.emplace(it, std::string(key), std::string(value));
  }
}

bool StringMap::Erase(std::string_view key) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, std::string_view k) { return e.first < k; });
  if (it == entries_.end() || it->first != key) return false;
  entries_.erase(it);
  return true;
}

// ---------------------------------------------------------------------------
// Quantities: k8s::Quantity's exact value. Text without a digit before its
// suffix ("", ".", "-", "Ki"), which Go reads as 0, is no quantity here.

namespace {

std::optional<k8s::Quantity> ParseWithDigits(std::string_view text) {
  const k8s::QuantityParse p = k8s::ParseQuantity(text);
  if (p.outcome != k8s::QuantityParse::Outcome::kOk) return std::nullopt;
  if (p.quantity.nano == 0) {  // only a zero may have been written without a digit
    std::size_t i = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
    while (i < text.size() && text[i] == '.') ++i;
    if (i == text.size() || !internal::IsAsciiDigit(text[i])) return std::nullopt;
  }
  return p.quantity;
}

}  // namespace

std::optional<std::int64_t> QuantityAsInt64(std::string_view quantity) {
  const auto q = ParseWithDigits(quantity);
  return q ? k8s::ExactScaled(*q, 0) : std::nullopt;
}

std::optional<std::int64_t> QuantityValue(std::string_view quantity) {
  const auto q = ParseWithDigits(quantity);
  return q ? k8s::CeilScaled(*q, 0) : std::nullopt;
}

std::optional<std::int64_t> QuantityMilliValue(std::string_view quantity) {
  const auto q = ParseWithDigits(quantity);
  return q ? k8s::CeilScaled(*q, 3) : std::nullopt;
}

std::optional<std::int64_t> QuantityExactMilli(std::string_view quantity) {
  const auto q = ParseWithDigits(quantity);
  return q ? k8s::ExactScaled(*q, 3) : std::nullopt;
}

// ---------------------------------------------------------------------------
// Objects

namespace {

constexpr std::string_view kPodWhat = "pod";
constexpr std::string_view kNodeWhat = "node";
namespace bj = boost::json;

const bj::value* Member(const bj::object& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->value();
}

// An optional object member; null and absent are both "no object".
Status OptionalObject(const bj::object& parent, std::string_view key, std::string_view what,
                      const std::string& path, const bj::object*& out) {
  out = nullptr;
  const bj::value* v = Member(parent, key);
  if (v == nullptr || v->is_null()) return Status();
  if (!v->is_object()) return internal::TypeError(what, path, "an object", *v);
  out = &v->get_object();
  return Status();
}

Status OptionalString(const bj::object& parent, std::string_view key, std::string_view what,
                      const std::string& path, std::string& out) {
  const bj::value* v = Member(parent, key);
  if (v == nullptr) return Status();
  return internal::ReadString(*v, what, path, out);
}

// A map of strings; for resource lists numbers are accepted too and kept as
// their decimal text (clients written by hand often send `"nvidia.com/gpu": 1`).
Status ReadStringMap(const bj::object& parent, std::string_view key, std::string_view what,
                     const std::string& path, bool numbers_ok, StringMap& out) {
  const bj::object* o = nullptr;
  Status s = OptionalObject(parent, key, what, path, o);
  if (!s.ok() || o == nullptr) return s;
  for (const auto& member : *o) {
    const bj::value& v = member.value();
    if (v.is_string()) {
      out.Set(member.key(), v.get_string());
    } else if (numbers_ok && v.is_int64()) {
      out.Set(member.key(), std::to_string(v.get_int64()));
    } else if (numbers_ok && v.is_uint64()) {
      out.Set(member.key(), std::to_string(v.get_uint64()));
    } else if (numbers_ok && v.is_double()) {
      out.Set(member.key(), fmt::format("{}", v.get_double()));
    } else {
      return internal::TypeError(what, fmt::format("{}[{}]", path, internal::Quote(member.key())),
                                 numbers_ok ? "a quantity" : "a string", v);
    }
  }
  return Status();
}

// Each object of an optional array member, given to `read` with its path.
template <typename Read>
Status ForEachObject(const bj::object& parent, std::string_view key, std::string_view what,
                     const std::string& path, Read read) {
  const bj::value* v = Member(parent, key);
  if (v == nullptr || v->is_null()) return Status();
  if (!v->is_array()) return internal::TypeError(what, path, "an array", *v);
  const auto& array = v->get_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string item = fmt::format("{}[{}]", path, i);
    if (!array[i].is_object()) return internal::TypeError(what, item, "an object", array[i]);
    if (Status s = read(array[i].get_object(), item); !s.ok()) return s;
  }
  return Status();
}

// The string members `keys` of `o` into `out` (in order), stopping at the
// first error.
Status ReadStrings(const bj::object& o, std::string_view what, const std::string& path,
                   std::initializer_list<std::pair<std::string_view, std::string*>> keys) {
  for (const auto& [key, out] : keys) {
    if (Status s = OptionalString(o, key, what, fmt::format("{}.{}", path, key), *out); !s.ok())
      return s;
  }
  return Status();
}

// A core/v1 NodeSelectorRequirement list (matchExpressions, matchFields).
Status ReadRequirements(const bj::object& term, std::string_view key, const std::string& path,
                        std::vector<NodeSelectorRequirement>& out) {
  return ForEachObject(term, key, kPodWhat, path, [&](const bj::object& r, const std::string& at) {
    NodeSelectorRequirement& req = out.emplace_back();
    Status s = ReadStrings(r, kPodWhat, at, {{"key", &req.key}, {"operator", &req.op}});
    if (!s.ok()) return s;
    const bj::value* values = Member(r, "values");
    if (values == nullptr || values->is_null()) return Status();
    if (!values->is_array())
      return internal::TypeError(kPodWhat, at + ".values", "an array", *values);
    for (std::size_t i = 0; i < values->get_array().size(); ++i) {
      s = internal::ReadString(values->get_array()[i], kPodWhat,
                               fmt::format("{}.values[{}]", at, i), req.values.emplace_back());
      if (!s.ok()) return s;
    }
    return Status();
  });
}

// spec.nodeSelector, spec.tolerations and the required node affinity.
Status ReadPodPlacement(const bj::object& spec, Pod& pod) {
  Status s =
      ReadStringMap(spec, "nodeSelector", kPodWhat, "spec.nodeSelector", false, pod.node_selector);
  if (!s.ok()) return s;
  s = ForEachObject(spec, "tolerations", kPodWhat, "spec.tolerations",
                    [&](const bj::object& t, const std::string& at) {
                      Toleration& tol = pod.tolerations.emplace_back();
                      return ReadStrings(t, kPodWhat, at,
                                         {{"key", &tol.key},
                                          {"operator", &tol.op},
                                          {"value", &tol.value},
                                          {"effect", &tol.effect}});
                    });
  if (!s.ok()) return s;
  const bj::object* affinity = nullptr;
  const bj::object* node_affinity = nullptr;
  const bj::object* required = nullptr;
  s = OptionalObject(spec, "affinity", kPodWhat, "spec.affinity", affinity);
  if (s.ok() && affinity != nullptr)
    s = OptionalObject(*affinity, "nodeAffinity", kPodWhat, "spec.affinity.nodeAffinity",
                       node_affinity);
  const std::string path =
      "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  if (s.ok() && node_affinity != nullptr)
    s = OptionalObject(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", kPodWhat,
                       path, required);
  if (!s.ok() || required == nullptr) return s;
  NodeSelector& selector = pod.required_node_affinity.emplace();
  return ForEachObject(
      *required, "nodeSelectorTerms", kPodWhat, path + ".nodeSelectorTerms",
      [&](const bj::object& t, const std::string& at) {
        NodeSelectorTerm& term = selector.terms.emplace_back();
        Status r = ReadRequirements(t, "matchExpressions", at + ".matchExpressions",
                                    term.match_expressions);
        if (r.ok()) r = ReadRequirements(t, "matchFields", at + ".matchFields", term.match_fields);
        return r;
      });
}

// spec.resourceClaims, spec.schedulingGates and status.resourceClaimStatuses.
Status ReadPodClaims(const bj::object* spec, const bj::object* status, Pod& pod) {
  if (spec != nullptr) {
    Status s = ForEachObject(
        *spec, "resourceClaims", kPodWhat, "spec.resourceClaims",
        [&](const bj::object& c, const std::string& item) {
          PodResourceClaim& claim = pod.resource_claims.emplace_back();
          Status r = OptionalString(c, "name", kPodWhat, item + ".name", claim.name);
          if (r.ok())
            r = OptionalString(c, "resourceClaimName", kPodWhat, item + ".resourceClaimName",
                               claim.resource_claim_name);
          if (r.ok())
            r = OptionalString(c, "resourceClaimTemplateName", kPodWhat,
                               item + ".resourceClaimTemplateName",
                               claim.resource_claim_template_name);
          if (r.ok() && claim.name.empty())
            return Status::Malformed(fmt::format("pod: {}.name is missing", item), item + ".name");
          if (r.ok() &&
              claim.resource_claim_name.empty() == claim.resource_claim_template_name.empty())
            return Status::Malformed(
                fmt::format("pod: {} needs exactly one of resourceClaimName and "
                            "resourceClaimTemplateName",
                            item),
                item);
          return r;
        });
    if (!s.ok()) return s;
    s = ForEachObject(*spec, "schedulingGates", kPodWhat, "spec.schedulingGates",
                      [&](const bj::object& g, const std::string& item) {
                        return OptionalString(g, "name", kPodWhat, item + ".name",
                                              pod.scheduling_gates.emplace_back());
                      });
    if (!s.ok()) return s;
  }
  if (status == nullptr) return Status();
  return ForEachObject(*status, "resourceClaimStatuses", kPodWhat, "status.resourceClaimStatuses",
                       [&](const bj::object& c, const std::string& item) {
                         std::string name, generated;
                         Status r = OptionalString(c, "name", kPodWhat, item + ".name", name);
                         if (r.ok())
                           r = OptionalString(c, "resourceClaimName", kPodWhat,
                                              item + ".resourceClaimName", generated);
                         if (!r.ok()) return r;
                         for (PodResourceClaim& claim : pod.resource_claims) {
                           if (claim.name == name) claim.generated_claim_name = generated;
                         }
                         return Status();
                       });
}

Status ReadContainers(const bj::object& spec, std::string_view key, const std::string& path,
                      std::vector<Container>& out) {
  const bj::value* v = Member(spec, key);
  if (v == nullptr || v->is_null()) return Status();
  if (!v->is_array()) return internal::TypeError(kPodWhat, path, "an array", *v);
  const auto& array = v->get_array();
  out.resize(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string item = fmt::format("{}[{}]", path, i);
    if (!array[i].is_object()) return internal::TypeError(kPodWhat, item, "an object", array[i]);
    const bj::object& c = array[i].get_object();
    Container& container = out[i];
    Status s = OptionalString(c, "name", kPodWhat, item + ".name", container.name);
    if (!s.ok()) return s;
    const bj::object* resources = nullptr;
    s = OptionalObject(c, "resources", kPodWhat, item + ".resources", resources);
    if (!s.ok()) return s;
    if (resources != nullptr) {
      s = ReadStringMap(*resources, "limits", kPodWhat, item + ".resources.limits", true,
                        container.limits);
      if (!s.ok()) return s;
      s = ReadStringMap(*resources, "requests", kPodWhat, item + ".resources.requests", true,
                        container.requests);
      if (!s.ok()) return s;
    }
    const bj::object* security = nullptr;
    s = OptionalObject(c, "securityContext", kPodWhat, item + ".securityContext", security);
    if (!s.ok()) return s;
    if (security != nullptr) {
      if (const bj::value* p = Member(*security, "privileged")) {
        s = internal::ReadBool(*p, kPodWhat, item + ".securityContext.privileged",
                               container.privileged);
        if (!s.ok()) return s;
      }
    }
  }
  return Status();
}

// Effective pod request of `resource`: max(sum over containers, max over
// init containers), as the kube-scheduler computes it.
std::int64_t EffectiveRequest(const Pod& pod, std::string_view resource, int scale) {
  auto value = [&](const Container& c) -> std::int64_t {
    const std::string* q = c.requests.Find(resource);
    if (q == nullptr) return 0;
    auto v = scale == 3 ? QuantityMilliValue(*q) : QuantityValue(*q);
    return v.value_or(0);
  };
  std::int64_t app = 0;
  for (const Container& c : pod.containers) app += value(c);
  std::int64_t init = 0;
  for (const Container& c : pod.init_containers) init = std::max(init, value(c));
  return std::max(app, init);
}

Result<bj::value> ParseObject(std::string_view json, std::string_view what,
                              bj::monotonic_resource& arena) {
  Result<bj::value> doc = internal::ParseJson(json, what, bj::storage_ptr(&arena));
  if (!doc.ok()) return doc;
  if (!doc->is_object()) return internal::TypeError(what, "value", "an object", *doc);
  return doc;
}

}  // namespace

Result<Pod> DecodePod(std::string_view json) {
  bj::monotonic_resource arena;
  Result<bj::value> doc = ParseObject(json, kPodWhat, arena);
  if (!doc.ok()) return doc.status();
  return DecodePod(doc->get_object());
}

Result<Pod> DecodePod(const bj::object& root) {
  Pod pod;
  const bj::object* metadata = nullptr;
  const bj::object* spec = nullptr;
  const bj::object* status = nullptr;
  Status s = OptionalObject(root, "metadata", kPodWhat, "metadata", metadata);
  if (s.ok()) s = OptionalObject(root, "spec", kPodWhat, "spec", spec);
  if (s.ok()) s = OptionalObject(root, "status", kPodWhat, "status", status);
  if (!s.ok()) return s;
  if (metadata != nullptr) {
    if (!(s = OptionalString(*metadata, "namespace", kPodWhat, "metadata.namespace",
                             pod.pod_namespace))
             .ok() ||
        !(s = OptionalString(*metadata, "name", kPodWhat, "metadata.name", pod.name)).ok() ||
        !(s = OptionalString(*metadata, "uid", kPodWhat, "metadata.uid", pod.uid)).ok() ||
        !(s = ReadStringMap(*metadata, "annotations", kPodWhat, "metadata.annotations", false,
                            pod.annotations))
             .ok() ||
        !(s = ReadStringMap(*metadata, "labels", kPodWhat, "metadata.labels", false, pod.labels))
             .ok()) {
      return s;
    }
    const bj::value* deletion = Member(*metadata, "deletionTimestamp");
    pod.terminating = deletion != nullptr && !deletion->is_null();
  }
  if (spec != nullptr) {
    if (!(s = OptionalString(*spec, "schedulerName", kPodWhat, "spec.schedulerName",
                             pod.scheduler_name))
             .ok() ||
        !(s = OptionalString(*spec, "nodeName", kPodWhat, "spec.nodeName", pod.node_name)).ok() ||
        !(s = ReadContainers(*spec, "initContainers", "spec.initContainers", pod.init_containers))
             .ok() ||
        !(s = ReadContainers(*spec, "containers", "spec.containers", pod.containers)).ok()) {
      return s;
    }
    if (s = ReadPodPlacement(*spec, pod); !s.ok()) return s;
    if (const bj::value* priority = Member(*spec, "priority")) {
      s = internal::ReadInt(*priority, std::numeric_limits<std::int32_t>::min(),
                            std::numeric_limits<std::int32_t>::max(), kPodWhat, "spec.priority",
                            pod.priority);
      if (!s.ok()) return s;
    }
  }
  if (status != nullptr) {
    s = OptionalString(*status, "phase", kPodWhat, "status.phase", pod.phase);
    if (!s.ok()) return s;
    const bj::value* statuses = Member(*status, "initContainerStatuses");
    if (statuses != nullptr && statuses->is_array() && !pod.init_containers.empty()) {
      std::size_t done = 0;
      for (const bj::value& st : statuses->get_array()) {
        const bj::value* exit_code = nullptr;
        if (const auto* o = st.if_object()) {
          if (const auto* state = Member(*o, "state"); state && state->is_object()) {
            if (const auto* t = Member(state->get_object(), "terminated"); t && t->is_object()) {
              exit_code = Member(t->get_object(), "exitCode");
            }
          }
        }
        if (exit_code != nullptr && exit_code->is_int64() && exit_code->get_int64() == 0) ++done;
      }
      pod.init_containers_done = done == pod.init_containers.size();
    }
  }
  if (s = ReadPodClaims(spec, status, pod); !s.ok()) return s;
  pod.cpu_milli = EffectiveRequest(pod, "cpu", 3);
  pod.memory_bytes = EffectiveRequest(pod, "memory", 0);
  return pod;
}

Result<Node> DecodeNode(std::string_view json) {
  bj::monotonic_resource arena;
  Result<bj::value> doc = ParseObject(json, kNodeWhat, arena);
  if (!doc.ok()) return doc.status();
  return DecodeNode(doc->get_object());
}

Result<Node> DecodeNode(const bj::object& root) {
  Node node;
  const bj::object* metadata = nullptr;
  const bj::object* spec = nullptr;
  const bj::object* status = nullptr;
  Status s = OptionalObject(root, "metadata", kNodeWhat, "metadata", metadata);
  if (s.ok()) s = OptionalObject(root, "spec", kNodeWhat, "spec", spec);
  if (s.ok()) s = OptionalObject(root, "status", kNodeWhat, "status", status);
  if (!s.ok()) return s;
  if (spec != nullptr) {
    s = ForEachObject(
        *spec, "taints", kNodeWhat, "spec.taints", [&](const bj::object& t, const std::string& at) {
          Taint& taint = node.taints.emplace_back();
          return ReadStrings(
              t, kNodeWhat, at,
              {{"key", &taint.key}, {"value", &taint.value}, {"effect", &taint.effect}});
        });
    if (!s.ok()) return s;
    if (const bj::value* cordoned = Member(*spec, "unschedulable");
        cordoned != nullptr && !cordoned->is_null()) {
      s = internal::ReadBool(*cordoned, kNodeWhat, "spec.unschedulable", node.unschedulable);
      if (!s.ok()) return s;
    }
  }
  if (metadata != nullptr) {
    if (!(s = OptionalString(*metadata, "name", kNodeWhat, "metadata.name", node.name)).ok() ||
        !(s = OptionalString(*metadata, "uid", kNodeWhat, "metadata.uid", node.uid)).ok() ||
        !(s = OptionalString(*metadata, "resourceVersion", kNodeWhat, "metadata.resourceVersion",
                             node.resource_version))
             .ok() ||
        !(s = ReadStringMap(*metadata, "annotations", kNodeWhat, "metadata.annotations", false,
                            node.annotations))
             .ok() ||
        !(s = ReadStringMap(*metadata, "labels", kNodeWhat, "metadata.labels", false, node.labels))
             .ok()) {
      return s;
    }
  }
  if (status != nullptr) {
    if (!(s = ReadStringMap(*status, "allocatable", kNodeWhat, "status.allocatable", true,
                            node.allocatable))
             .ok() ||
        !(s = ReadStringMap(*status, "capacity", kNodeWhat, "status.capacity", true, node.capacity))
             .ok()) {
      return s;
    }
  }
  if (node.name.empty())
    return Status::Malformed("node: metadata.name is missing", "metadata.name");
  return node;
}

namespace {

bool RequirementMatches(const NodeSelectorRequirement& r, const std::string* value) {
  auto listed = [&] {
    return value != nullptr &&
           std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  };
  if (r.op == "In") return listed();
  if (r.op == "NotIn") return !listed();
  if (r.op == "Exists") return value != nullptr;
  if (r.op == "DoesNotExist") return value == nullptr;
  if (r.op == "Gt" || r.op == "Lt") {
    if (value == nullptr || r.values.size() != 1) return false;
    const auto have = internal::ParseGoInt(*value, 64);
    const auto bound = internal::ParseGoInt(r.values[0], 64);
    if (!have || !bound) return false;
    return r.op == "Gt" ? *have > *bound : *have < *bound;
  }
  return false;
}

}  // namespace

bool NodeSelectorMatches(const NodeSelector& selector, const Node& node) {
  for (const NodeSelectorTerm& term : selector.terms) {
    // A term without requirements selects nothing (core/v1 semantics).
    if (term.match_expressions.empty() && term.match_fields.empty()) continue;
    bool all = true;
    for (const NodeSelectorRequirement& r : term.match_expressions) {
      all = all && RequirementMatches(r, node.labels.Find(r.key));
    }
    for (const NodeSelectorRequirement& r : term.match_fields) {
      all = all && r.key == "metadata.name" && RequirementMatches(r, &node.name);
    }
    if (all) return true;
  }
  return false;
}

bool Tolerates(const Toleration& toleration, const Taint& taint) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  if (toleration.op == "Exists") return true;
  return (toleration.op.empty() || toleration.op == "Equal") && toleration.value == taint.value;
}

std::optional<std::string> NodeExcludes(const Pod& pod, const Node& node) {
  auto tolerated = [&](const Taint& taint) {
    return std::any_of(pod.tolerations.begin(), pod.tolerations.end(),
                       [&](const Toleration& t) { return Tolerates(t, taint); });
  };
  if (node.unschedulable && !tolerated(Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"}))
    return std::string("the node is unschedulable (cordoned)");
  for (const Taint& taint : node.taints) {
    if ((taint.effect == "NoSchedule" || taint.effect == "NoExecute") && !tolerated(taint))
      return fmt::format("taint {}={}:{} is not tolerated", taint.key, taint.value, taint.effect);
  }
  for (const auto& [key, value] : pod.node_selector.entries()) {
    const std::string* label = node.labels.Find(key);
    if (label == nullptr || *label != value)
      return fmt::format("node selector {}={} does not match", key, value);
  }
  if (pod.required_node_affinity && !NodeSelectorMatches(*pod.required_node_affinity, node))
    return std::string("the required node affinity does not match");
  return std::nullopt;
}

}  // namespace devshare
