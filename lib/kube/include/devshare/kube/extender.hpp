// devshare/kube/extender.hpp — the scheduler-extender wire format
// (k8s.io/kube-scheduler/extender/v1, spec/kubernetes-wire.md §1) to and
// from the engine's types.
//
// The JSON keys are Go field names in CapitalCase (the types have no json
// tags); kube-scheduler reads them case-insensitively, devshare writes them
// exactly. With nodeCacheCapable the request carries NodeNames and the
// reply answers NodeNames; without, both carry full Node objects, and the
// reply echoes the kept ones. Every candidate not kept is listed in
// FailedNodes — a node left out of both would count as unresolvable and
// never be a preemption candidate.
//
// Thread-safety: pure functions.
#ifndef DEVSHARE_KUBE_EXTENDER_HPP_
#define DEVSHARE_KUBE_EXTENDER_HPP_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/engine/engine.hpp"
#include "devshare/filter.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"

namespace devshare::kube {

// ExtenderArgs of /filter and /prioritize.
struct ExtenderArgs {
  Pod pod;
  std::vector<std::string> nodes;       // candidate names, in the request's order
  bool node_names = true;               // the request carried NodeNames (nodeCacheCapable)
  std::vector<std::string> node_items;  // without NodeNames: each Node object's JSON, by `nodes`
};

// Errors: kMalformed naming what is wrong (not JSON, no Pod, neither
// NodeNames nor Nodes, a name that is not a string, a Pod that does not
// decode).
Result<ExtenderArgs> DecodeExtenderArgs(std::string_view json);

// ExtenderFilterResult: the kept nodes (NodeNames or Nodes, as asked), the
// failures the reply names in FailedNodes with their reasons and, when no
// node is kept, every other candidate there too ("does not fit"), and Error.
// The feasible nodes a placed pod did not get are left out of both.
std::string EncodeFilterResult(const ExtenderArgs& args, const engine::FilterReply& reply);

// HostPriorityList: every scored node with its normalized score (0..100)
// mapped to the extender's 0..10, rounded.
std::string EncodeHostPriorities(const std::vector<NodeScore>& scores);

// ExtenderPreemptionArgs of /preempt: the pod and, per node, the victims
// kube-scheduler chose there (their UIDs: NodeNameToMetaVictims with
// nodeCacheCapable, else the Pods of NodeNameToVictims; a node may have
// none) and their budget violations.
struct PreemptionArgs {
  Pod pod;
  std::map<std::string, engine::NodeVictims> victims;
};

// Errors: kMalformed naming what is wrong (not JSON, no Pod, a node's
// entry or a victim without a UID, a count that is not a whole number).
Result<PreemptionArgs> DecodePreemptionArgs(std::string_view json);

// ExtenderPreemptionResult: NodeNameToMetaVictims, by node name.
std::string EncodePreemptionResult(const std::map<std::string, engine::NodeVictims>& victims);

struct BindArgs {
  std::string pod_name, pod_namespace, pod_uid, node;
  friend bool operator==(const BindArgs&, const BindArgs&) = default;
};

// ExtenderBindingArgs. Errors: kMalformed naming the missing field.
Result<BindArgs> DecodeBindArgs(std::string_view json);

// ExtenderBindingResult: {"Error": error}.
std::string EncodeBindResult(std::string_view error);

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_EXTENDER_HPP_
