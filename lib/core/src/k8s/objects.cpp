#include "devshare/objects.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/json.hpp"
#include "base/json_reader.hpp"
#include "base/text.hpp"
#include "devshare/objects_json.hpp"
#include "k8s/node_selector.hpp"
#include "k8s/quantity.hpp"
#include "k8s/tolerations.hpp"

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
constexpr std::string_view kQuotaWhat = "resource quota";
constexpr std::string_view kBudgetWhat = "pod disruption budget";
namespace bj = boost::json;

using internal::JsonReader;

// A map of strings; for resource lists numbers are accepted too and kept as
// their decimal text (clients written by hand often send `"nvidia.com/gpu": 1`).
void ReadStringMap(JsonReader& r, const bj::object& parent, std::string_view key,
                   const std::string& path, bool numbers_ok, StringMap& out) {
  r.Members(parent, key, path,
            [&](const std::string& name, const bj::value& v, const std::string& at) {
              if (v.is_string()) {
                out.Set(name, v.get_string());
              } else if (numbers_ok && v.is_int64()) {
                out.Set(name, std::to_string(v.get_int64()));
              } else if (numbers_ok && v.is_uint64()) {
                out.Set(name, std::to_string(v.get_uint64()));
              } else if (numbers_ok && v.is_double()) {
                out.Set(name, fmt::format("{}", v.get_double()));
              } else {
                r.Expect(at, numbers_ok ? "a quantity" : "a string", v);
              }
            });
}

// The string members `keys` of `o` into `out` (in order).
void ReadStrings(JsonReader& r, const bj::object& o, const std::string& path,
                 std::initializer_list<std::pair<std::string_view, std::string*>> keys) {
  for (const auto& [key, out] : keys) r.String(o, key, fmt::format("{}.{}", path, key), *out);
}

// spec.nodeSelector, spec.tolerations and the required node affinity.
void ReadPodPlacement(JsonReader& r, const bj::object& spec, Pod& pod) {
  ReadStringMap(r, spec, "nodeSelector", "spec.nodeSelector", false, pod.node_selector);
  r.EachObject(spec, "tolerations", "spec.tolerations",
               [&](const bj::object& t, const std::string& at) {
                 Toleration& tol = pod.tolerations.emplace_back();
                 ReadStrings(r, t, at,
                             {{"key", &tol.key},
                              {"operator", &tol.op},
                              {"value", &tol.value},
                              {"effect", &tol.effect}});
               });
  const bj::object* affinity = r.Object(spec, "affinity", "spec.affinity");
  const bj::object* node_affinity =
      affinity != nullptr ? r.Object(*affinity, "nodeAffinity", "spec.affinity.nodeAffinity")
                          : nullptr;
  const std::string path =
      "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  const bj::object* required =
      node_affinity != nullptr
          ? r.Object(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", path)
          : nullptr;
  if (required != nullptr)
    internal::ReadNodeSelector(r, *required, path, pod.required_node_affinity.emplace());
}

// spec.resourceClaims, spec.schedulingGates and status.resourceClaimStatuses.
void ReadPodClaims(JsonReader& r, const bj::object* spec, const bj::object* status, Pod& pod) {
  if (spec != nullptr) {
    r.EachObject(
        *spec, "resourceClaims", "spec.resourceClaims",
        [&](const bj::object& c, const std::string& item) {
          PodResourceClaim& claim = pod.resource_claims.emplace_back();
          ReadStrings(r, c, item,
                      {{"name", &claim.name},
                       {"resourceClaimName", &claim.resource_claim_name},
                       {"resourceClaimTemplateName", &claim.resource_claim_template_name}});
          if (!r.ok()) return;
          if (claim.name.empty()) {
            return r.Fail(
                Status::Malformed(fmt::format("pod: {}.name is missing", item), item + ".name"));
          }
          if (claim.resource_claim_name.empty() == claim.resource_claim_template_name.empty()) {
            r.Fail(
                Status::Malformed(fmt::format("pod: {} needs exactly one of resourceClaimName and "
                                              "resourceClaimTemplateName",
                                              item),
                                  item));
          }
        });
    r.EachObject(*spec, "schedulingGates", "spec.schedulingGates",
                 [&](const bj::object& g, const std::string& item) {
                   r.String(g, "name", item + ".name", pod.scheduling_gates.emplace_back());
                 });
  }
  if (status == nullptr) return;
  r.EachObject(*status, "resourceClaimStatuses", "status.resourceClaimStatuses",
               [&](const bj::object& c, const std::string& item) {
                 std::string name, generated;
                 ReadStrings(r, c, item, {{"name", &name}, {"resourceClaimName", &generated}});
                 if (!r.ok()) return;
                 for (PodResourceClaim& claim : pod.resource_claims) {
                   if (claim.name == name) claim.generated_claim_name = generated;
                 }
               });
}

void ReadContainers(JsonReader& r, const bj::object& spec, std::string_view key,
                    const std::string& path, std::vector<Container>& out) {
  r.EachObject(spec, key, path, [&](const bj::object& c, const std::string& item) {
    Container& container = out.emplace_back();
    r.String(c, "name", item + ".name", container.name);
    if (const bj::object* resources = r.Object(c, "resources", item + ".resources")) {
      ReadStringMap(r, *resources, "limits", item + ".resources.limits", true, container.limits);
      ReadStringMap(r, *resources, "requests", item + ".resources.requests", true,
                    container.requests);
    }
    if (const bj::object* security = r.Object(c, "securityContext", item + ".securityContext"))
      r.Bool(*security, "privileged", item + ".securityContext.privileged", container.privileged);
  });
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

// Whether every one of `init_containers` has terminated with exit code 0,
// by the entries of status.initContainerStatuses (read leniently: what is
// not understood is not done).
bool InitContainersDone(const bj::array& statuses, std::size_t init_containers) {
  std::size_t done = 0;
  for (const bj::value& st : statuses) {
    const bj::object* o = st.if_object();
    const bj::object* state = o != nullptr ? internal::ObjectMember(*o, "state") : nullptr;
    const bj::object* terminated =
        state != nullptr ? internal::ObjectMember(*state, "terminated") : nullptr;
    const bj::value* exit_code =
        terminated != nullptr ? internal::Member(*terminated, "exitCode") : nullptr;
    if (exit_code != nullptr && exit_code->is_int64() && exit_code->get_int64() == 0) ++done;
  }
  return done == init_containers;
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
  JsonReader r(kPodWhat);
  Pod pod;
  const bj::object* metadata = r.Object(root, "metadata", "metadata");
  const bj::object* spec = r.Object(root, "spec", "spec");
  const bj::object* status = r.Object(root, "status", "status");
  if (metadata != nullptr) {
    r.String(*metadata, "namespace", "metadata.namespace", pod.pod_namespace);
    r.String(*metadata, "name", "metadata.name", pod.name);
    r.String(*metadata, "uid", "metadata.uid", pod.uid);
    ReadStringMap(r, *metadata, "annotations", "metadata.annotations", false, pod.annotations);
    ReadStringMap(r, *metadata, "labels", "metadata.labels", false, pod.labels);
    pod.terminating = internal::Member(*metadata, "deletionTimestamp") != nullptr;
  }
  if (spec != nullptr) {
    r.String(*spec, "schedulerName", "spec.schedulerName", pod.scheduler_name);
    r.String(*spec, "nodeName", "spec.nodeName", pod.node_name);
    ReadContainers(r, *spec, "initContainers", "spec.initContainers", pod.init_containers);
    ReadContainers(r, *spec, "containers", "spec.containers", pod.containers);
    ReadPodPlacement(r, *spec, pod);
    r.Int(*spec, "priority", "spec.priority", pod.priority,
          std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max());
    r.String(*spec, "preemptionPolicy", "spec.preemptionPolicy", pod.preemption_policy);
  }
  if (status != nullptr) {
    r.String(*status, "phase", "status.phase", pod.phase);
    r.String(*status, "startTime", "status.startTime", pod.start_time);
    const bj::value* statuses = internal::Member(*status, "initContainerStatuses");
    if (statuses != nullptr && statuses->is_array() && !pod.init_containers.empty())
      pod.init_containers_done =
          InitContainersDone(statuses->get_array(), pod.init_containers.size());
  }
  ReadPodClaims(r, spec, status, pod);
  if (!r.ok()) return r.status();
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
  JsonReader r(kNodeWhat);
  Node node;
  const bj::object* metadata = r.Object(root, "metadata", "metadata");
  const bj::object* spec = r.Object(root, "spec", "spec");
  const bj::object* status = r.Object(root, "status", "status");
  if (spec != nullptr) {
    r.EachObject(*spec, "taints", "spec.taints", [&](const bj::object& t, const std::string& at) {
      Taint& taint = node.taints.emplace_back();
      ReadStrings(r, t, at,
                  {{"key", &taint.key}, {"value", &taint.value}, {"effect", &taint.effect}});
    });
    r.Bool(*spec, "unschedulable", "spec.unschedulable", node.unschedulable);
  }
  if (metadata != nullptr) {
    r.String(*metadata, "name", "metadata.name", node.name);
    r.String(*metadata, "uid", "metadata.uid", node.uid);
    r.String(*metadata, "resourceVersion", "metadata.resourceVersion", node.resource_version);
    ReadStringMap(r, *metadata, "annotations", "metadata.annotations", false, node.annotations);
    ReadStringMap(r, *metadata, "labels", "metadata.labels", false, node.labels);
  }
  if (status != nullptr) {
    ReadStringMap(r, *status, "allocatable", "status.allocatable", true, node.allocatable);
    ReadStringMap(r, *status, "capacity", "status.capacity", true, node.capacity);
  }
  if (!r.ok()) return r.status();
  if (node.name.empty())
    return Status::Malformed("node: metadata.name is missing", "metadata.name");
  return node;
}

Result<ResourceQuota> DecodeResourceQuota(std::string_view json) {
  bj::monotonic_resource arena;
  Result<bj::value> doc = ParseObject(json, kQuotaWhat, arena);
  if (!doc.ok()) return doc.status();
  return DecodeResourceQuota(doc->get_object());
}

Result<ResourceQuota> DecodeResourceQuota(const bj::object& root) {
  JsonReader r(kQuotaWhat);
  ResourceQuota quota;
  if (const bj::object* metadata = r.Object(root, "metadata", "metadata")) {
    ReadStrings(r, *metadata, "metadata",
                {{"namespace", &quota.quota_namespace},
                 {"name", &quota.name},
                 {"uid", &quota.uid},
                 {"resourceVersion", &quota.resource_version}});
  }
  if (const bj::object* spec = r.Object(root, "spec", "spec"))
    ReadStringMap(r, *spec, "hard", "spec.hard", true, quota.hard);
  if (!r.ok()) return r.status();
  for (auto [value, path] : {std::pair{&quota.quota_namespace, "metadata.namespace"},
                             std::pair{&quota.name, "metadata.name"}}) {
    if (value->empty())
      return Status::Malformed(fmt::format("{}: {} is missing", kQuotaWhat, path), path);
  }
  return quota;
}

Result<PodDisruptionBudget> DecodePodDisruptionBudget(std::string_view json) {
  bj::monotonic_resource arena;
  Result<bj::value> doc = ParseObject(json, kBudgetWhat, arena);
  if (!doc.ok()) return doc.status();
  return DecodePodDisruptionBudget(doc->get_object());
}

Result<PodDisruptionBudget> DecodePodDisruptionBudget(const bj::object& root) {
  JsonReader r(kBudgetWhat);
  PodDisruptionBudget budget;
  if (const bj::object* metadata = r.Object(root, "metadata", "metadata")) {
    ReadStrings(r, *metadata, "metadata",
                {{"namespace", &budget.budget_namespace}, {"name", &budget.name}});
  }
  if (const bj::object* spec = r.Object(root, "spec", "spec")) {
    if (const bj::object* selector = r.Object(*spec, "selector", "spec.selector"))
      internal::ReadLabelSelector(r, *selector, "spec.selector", budget.selector);
  }
  if (const bj::object* status = r.Object(root, "status", "status")) {
    r.Int(*status, "disruptionsAllowed", "status.disruptionsAllowed", budget.disruptions_allowed, 0,
          std::numeric_limits<std::int32_t>::max());
    r.Members(*status, "disruptedPods", "status.disruptedPods",
              [&](const std::string& name, const bj::value&, const std::string&) {
                budget.disrupted_pods.push_back(name);
              });
  }
  if (!r.ok()) return r.status();
  for (auto [value, path] : {std::pair{&budget.budget_namespace, "metadata.namespace"},
                             std::pair{&budget.name, "metadata.name"}}) {
    if (value->empty())
      return Status::Malformed(fmt::format("{}: {} is missing", kBudgetWhat, path), path);
  }
  return budget;
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

bool LabelSelectorMatches(const LabelSelector& selector, const StringMap& labels) {
  for (const auto& [key, value] : selector.match_labels.entries()) {
    const std::string* have = labels.Find(key);
    if (have == nullptr || *have != value) return false;
  }
  return std::ranges::all_of(selector.match_expressions, [&](const NodeSelectorRequirement& r) {
    return r.op != "Gt" && r.op != "Lt" && RequirementMatches(r, labels.Find(r.key));
  });
}

bool Tolerates(const Toleration& toleration, const Taint& taint) {
  return internal::ToleratesTaint(toleration, taint);
}

std::optional<std::string> NodeExcludes(const Pod& pod, const Node& node) {
  if (node.unschedulable &&
      internal::TaintRepels(Taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"},
                            pod.tolerations))
    return std::string("the node is unschedulable (cordoned)");
  for (const Taint& taint : node.taints) {
    if (internal::TaintRepels(taint, pod.tolerations))
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
