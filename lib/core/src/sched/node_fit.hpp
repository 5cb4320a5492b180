// node_fit.hpp — one candidate node for a pod (spec §4.5, §5.1): its devices
// loaded as working copies, a one-request pod checked without choosing
// devices, or every container fitted in turn (container_fit.hpp), the node
// scored under the node policy. Private to the core; Filter drives it node
// by node.
#ifndef DEVSHARE_SRC_NODE_FIT_HPP_
#define DEVSHARE_SRC_NODE_FIT_HPP_

#include <string>
#include <vector>

#include "sched/filter_plan.hpp"

namespace devshare::internal {

struct NodeVerdict {
  bool fits = false;
  double score = 0;
  double free_gpus = 0;  // fgd: the node's free GPU share before the placement
  std::string reason;
};

// Whether `plan`'s pod fits on `node`, and its score there. With
// `need_devices`, scratch.placement holds the devices chosen per container
// and vendor; without, a one-request pod may be decided without choosing.
NodeVerdict EvaluateNode(const SnapshotState& s, const PodPlan& plan, const NodeState& node,
                         Scratch& scratch, bool need_devices);

// Loads `node`'s devices as working copies, the pod's own reservation
// released (spec §4.2 step 4).
void LoadNode(const SnapshotState& s, const NodeState& node, const PodPlan& plan,
              std::vector<WorkDevice>& out);

// Fills NodeScore::normalized (see filter.hpp) over the feasible nodes, whose
// raw scores lie in [min, max].
void NormalizeScores(std::vector<NodeScore>& scores, double min, double max, bool lower_is_better);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_NODE_FIT_HPP_
