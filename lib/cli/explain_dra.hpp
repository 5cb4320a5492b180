// `devshare explain` for Kubernetes DRA: where a pod's ResourceClaims can be
// allocated, node by node, under a policy.
#ifndef DEVSHARE_CLI_EXPLAIN_DRA_HPP_
#define DEVSHARE_CLI_EXPLAIN_DRA_HPP_

#include <string>
#include <vector>

#include "devshare/workload.hpp"
#include "objects_file.hpp"

namespace devshare::cli {

// Places `pod.claims` (unallocated; with `pod`'s one Pod, if any, for its
// CPU and memory) on every node of `cluster` (its nodes, pods, slices,
// classes and claims, the allocated ones holding their devices) under
// `policy` (upstream | binpack | spread | fgd, fgd for `workload`), and
// prints each node's verdict: the allocation it would get and its score, or
// why not; and the chosen node (not under upstream, where kube-scheduler
// chooses). Returns the exit code: 0 when the inputs were read, 1 otherwise
// (the message on stderr).
int ExplainClaims(const ObjectsFile& cluster, const ObjectsFile& pod, const std::string& policy,
                  const std::vector<WorkloadClass>& workload, bool json);

// The same for a pod of the live cluster with DRA claims: its claims found
// among `cluster.claims` (by name, or the one made from a template); those
// allocated already are said and left out, the others placed. A claim not
// made yet, or not found, is an error (exit 1).
int ExplainPodClaims(const ObjectsFile& cluster, const Pod& pod, const std::string& policy,
                     const std::vector<WorkloadClass>& workload, bool json);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_EXPLAIN_DRA_HPP_
