// devshare/objects.hpp — the parts of Kubernetes Pods and Nodes the scheduler
// reads, decoded from the JSON the API server serves, and resource quantities.
//
// Only the fields scheduling needs are kept: names, annotations, labels,
// container resources, scheduler name, node name, phase, deletion, init
// container termination (for the init-container shrink), and node
// allocatable/capacity. Unknown fields are ignored, as a Kubernetes client
// ignores them; a known field of the wrong type is an error.
//
// Thread-safety: value types and pure functions.
#ifndef DEVSHARE_OBJECTS_HPP_
#define DEVSHARE_OBJECTS_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devshare/export.hpp"
#include "devshare/status.hpp"

namespace devshare {

// A string map kept sorted by key (annotations, labels, resource lists), so
// iteration order is deterministic and lookup is a binary search.
class DEVSHARE_EXPORT StringMap {
 public:
  using Entry = std::pair<std::string, std::string>;
  StringMap() = default;
  StringMap(std::initializer_list<Entry> entries);

  // The value of `key`, or nullptr.
  const std::string* Find(std::string_view key) const;
  bool Contains(std::string_view key) const { return Find(key) != nullptr; }
  // Inserts or replaces.
  void Set(std::string_view key, std::string_view value);
  bool Erase(std::string_view key);
  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  friend bool operator==(const StringMap&, const StringMap&) = default;

 private:
  std::vector<Entry> entries_;
};

struct Container {
  std::string name;
  StringMap limits;  // resource name -> quantity text, e.g. "nvidia.com/gpu": "2"
  StringMap requests;
  bool privileged = false;
  friend bool operator==(const Container&, const Container&) = default;
};

// A label or field requirement of a core/v1 NodeSelector.
struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};
// A metav1.LabelSelector: every matchLabels pair and every matchExpressions
// requirement (In, NotIn, Exists, DoesNotExist) must hold.
struct LabelSelector {
  StringMap match_labels;
  std::vector<NodeSelectorRequirement> match_expressions;
  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // on labels
  std::vector<NodeSelectorRequirement> match_fields;       // metadata.name only
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};
// Terms are ORed, a term's requirements ANDed; no terms select no node.
struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;
  friend bool operator==(const NodeSelector&, const NodeSelector&) = default;
};

// A node's taint (spec.taints[]) and a pod's toleration (spec.tolerations[]).
struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  friend bool operator==(const Taint&, const Taint&) = default;
};
struct Toleration {
  std::string key;  // empty: every key (with op Exists)
  std::string op;   // Equal (also when empty) or Exists
  std::string value;
  std::string effect;  // empty: every effect
  friend bool operator==(const Toleration&, const Toleration&) = default;
};

// A DRA claim of a pod (spec.resourceClaims[]): the name its containers use
// and either a ResourceClaim of the pod's namespace or the template the
// resourceclaim controller makes one from (its name, once made, from
// status.resourceClaimStatuses; empty until then).
struct PodResourceClaim {
  std::string name;
  std::string resource_claim_name;
  std::string resource_claim_template_name;
  std::string generated_claim_name;
  friend bool operator==(const PodResourceClaim&, const PodResourceClaim&) = default;
};

struct Pod {
  std::string pod_namespace;
  std::string name;
  std::string uid;
  StringMap annotations;
  StringMap labels;
  std::string scheduler_name;
  std::string node_name;
  std::string phase;         // "Pending", "Running", "Succeeded", "Failed", ...
  bool terminating = false;  // metadata.deletionTimestamp is set
  std::int64_t priority = 0;
  std::string preemption_policy;  // spec.preemptionPolicy: "" (PreemptLowerPriority) or "Never"
  std::string start_time;         // status.startTime (RFC 3339, UTC); empty: not started
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  // True when every init container has terminated with exit code 0
  // (status.initContainerStatuses), which lets its usage shrink (spec §4.8).
  bool init_containers_done = false;
  // CPU (millicores) and memory (bytes) the pod requests, for
  // NodeResourcesFit-style checks by the simulator.
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
  std::vector<PodResourceClaim> resource_claims;  // DRA
  std::vector<std::string> scheduling_gates;      // spec.schedulingGates[].name
  // Where it may go: spec.nodeSelector, spec.tolerations, and
  // spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.
  StringMap node_selector;
  std::vector<Toleration> tolerations;
  std::optional<NodeSelector> required_node_affinity;
  friend bool operator==(const Pod&, const Pod&) = default;
};

struct Node {
  std::string name;
  std::string uid;               // metadata.uid: a node re-created under its name has a new one
  std::string resource_version;  // metadata.resourceVersion: the precondition of a lock write
  StringMap annotations;
  StringMap labels;
  StringMap allocatable;  // resource name -> quantity text
  StringMap capacity;
  std::vector<Taint> taints;   // spec.taints
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  friend bool operator==(const Node&, const Node&) = default;
};

// A ResourceQuota (core/v1): the hard limits one quota object sets in its
// namespace. devshare applies the device resources among them
// (ClusterSnapshot::SetQuota).
struct ResourceQuota {
  std::string quota_namespace;   // metadata.namespace
  std::string name;              // metadata.name
  std::string uid;               // metadata.uid
  std::string resource_version;  // metadata.resourceVersion
  StringMap hard;                // spec.hard: resource name -> quantity text
  friend bool operator==(const ResourceQuota&, const ResourceQuota&) = default;
};

// A PodDisruptionBudget (policy/v1), as preemption reads it.
struct PodDisruptionBudget {
  std::string budget_namespace;  // metadata.namespace
  std::string name;              // metadata.name
  // spec.selector. kube-scheduler's preemption counts no pod against a
  // budget whose selector is empty (or absent).
  LabelSelector selector;
  std::int64_t disruptions_allowed = 0;     // status.disruptionsAllowed
  std::vector<std::string> disrupted_pods;  // status.disruptedPods' names: evictions under way
  friend bool operator==(const PodDisruptionBudget&, const PodDisruptionBudget&) = default;
};

// Whether `node` is selected, as core/v1's NodeSelector semantics define
// it. A requirement with an unknown operator, or Gt/Lt with a value that is
// not an integer, selects nothing (the API server refuses both).
DEVSHARE_EXPORT bool NodeSelectorMatches(const NodeSelector& selector, const Node& node);

// Whether `labels` are selected by `selector`. An empty selector (no
// labels, no expressions) selects everything; callers for which it selects
// nothing (a PodDisruptionBudget) check `selector == LabelSelector{}` first.
DEVSHARE_EXPORT bool LabelSelectorMatches(const LabelSelector& selector, const StringMap& labels);

// Whether `toleration` tolerates `taint` (core/v1's ToleratesTaint).
DEVSHARE_EXPORT bool Tolerates(const Toleration& toleration, const Taint& taint);

// Why `pod` may not go to `node`, as kube-scheduler's NodeUnschedulable,
// TaintToleration (NoSchedule and NoExecute taints) and NodeAffinity
// (nodeSelector and required node affinity) filters decide; nullopt when it
// may.
DEVSHARE_EXPORT std::optional<std::string> NodeExcludes(const Pod& pod, const Node& node);

// Decodes a Pod / Node object as served by the API server (JSON).
// Errors: kMalformed naming the JSON path (for example
// `spec.containers[1].resources.limits`).
DEVSHARE_EXPORT Result<Pod> DecodePod(std::string_view json);
DEVSHARE_EXPORT Result<Node> DecodeNode(std::string_view json);
// Decodes a ResourceQuota object (JSON). spec.hard's values are kept as the
// text given (numbers as their decimal text); what they mean is the
// snapshot's to judge. Errors: kMalformed naming the JSON path; a quota
// without metadata.namespace or metadata.name.
DEVSHARE_EXPORT Result<ResourceQuota> DecodeResourceQuota(std::string_view json);
// Decodes a PodDisruptionBudget object (JSON). Errors: kMalformed naming
// the JSON path; a budget without metadata.namespace or metadata.name.
DEVSHARE_EXPORT Result<PodDisruptionBudget> DecodePodDisruptionBudget(std::string_view json);

// A Kubernetes resource quantity ("2", "16Gi", "1500m", "1e3") as an exact
// int64 when it is a whole number that fits (Quantity.AsInt64 in Go);
// nullopt for fractions ("1.5", "100m"), overflow, and text that is not a
// quantity.
DEVSHARE_EXPORT std::optional<std::int64_t> QuantityAsInt64(std::string_view quantity);

// The quantity rounded up to a whole number (Quantity.Value), or nullopt
// when it is not a quantity or overflows.
DEVSHARE_EXPORT std::optional<std::int64_t> QuantityValue(std::string_view quantity);

// The quantity scaled by 1000 and rounded up (Quantity.MilliValue), or
// nullopt when it is not a quantity or overflows.
DEVSHARE_EXPORT std::optional<std::int64_t> QuantityMilliValue(std::string_view quantity);

// The quantity in thousandths when that is exact ("1.5" is 1500, "16Gi"
// 17179869184000); nullopt when it is finer than 1m, is not a quantity or
// overflows.
DEVSHARE_EXPORT std::optional<std::int64_t> QuantityExactMilli(std::string_view quantity);

}  // namespace devshare

#endif  // DEVSHARE_OBJECTS_HPP_
