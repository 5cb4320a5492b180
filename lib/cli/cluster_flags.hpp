// The flags and helpers of the subcommands that talk to a live cluster
// (serve, explain --pod NAMESPACE/NAME, top): where the cluster is, as
// kubectl finds it, and a progress line while a big cluster is read.
#ifndef DEVSHARE_CLI_CLUSTER_FLAGS_HPP_
#define DEVSHARE_CLI_CLUSTER_FLAGS_HPP_

#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/kube/cluster_access.hpp"
#include "devshare/kube/cluster_read.hpp"
#include "devshare/snapshot.hpp"

namespace devshare::cli {

struct ClusterFlags {
  std::string kubeconfig;
  std::string context;
};

// --kubeconfig and --context.
void AddClusterFlags(CLI::App* command, ClusterFlags& flags);

// kube::FindClusterAccess with this process's environment and files.
Result<kube::ClusterAccess> FindAccess(const ClusterFlags& flags);

// Reads the cluster, saying on stderr how far the lists have come once one
// spans more than a page (a line rewritten in place on a terminal, a line
// per list otherwise), and warning of each object that does not decode.
Result<kube::ClusterObjects> ReadClusterWithProgress(kube::ClusterReader& reader,
                                                     std::string_view command);

// Why some objects hold no devices in the snapshot: a node's register
// annotation (by node name) or a pod's allocation that does not decode.
struct SnapshotErrors {
  std::map<std::string, std::string> nodes;
  std::vector<std::string> pods;
  std::vector<std::string> quotas;  // device limits that are not whole numbers
};

// The objects in a snapshot: nodes, pods (but the one whose UID is
// `except`), quotas. Nodes and pods whose annotations do not decode are
// kept out of the devices, as the engine keeps them, and a quota's device
// limit that is not a whole number limits nothing; the errors say which.
SnapshotErrors FillSnapshot(const kube::ClusterObjects& objects, std::string_view except,
                            ClusterSnapshot& snapshot);

}  // namespace devshare::cli

#endif  // DEVSHARE_CLI_CLUSTER_FLAGS_HPP_
