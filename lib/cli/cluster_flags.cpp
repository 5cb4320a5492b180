#include "cluster_flags.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "read_file.hpp"

namespace devshare::cli {

void AddClusterFlags(CLI::App* command, ClusterFlags& flags) {
  command->add_option("--kubeconfig", flags.kubeconfig,
                      "kubeconfig file (default: $KUBECONFIG's files merged, in-cluster, "
                      "~/.kube/config)");
  command->add_option("--context", flags.context, "kubeconfig context (default: current-context)");
}

Result<kube::ClusterAccess> FindAccess(const ClusterFlags& flags) {
  return kube::FindClusterAccess(
      flags.kubeconfig, flags.context, [](const char* name) { return std::getenv(name); },
      ReadFile);
}

Result<kube::ClusterObjects> ReadClusterWithProgress(kube::ClusterReader& reader,
                                                     std::string_view command) {
  const bool terminal = isatty(STDERR_FILENO) != 0;
  bool shown = false;
  std::string last;
  Result<kube::ClusterObjects> objects =
      reader.ReadCluster([&](std::string_view what, std::size_t so_far) {
        if (so_far <= 500 && !shown) return;  // one page: no progress to show
        shown = true;
        const std::string line = fmt::format("devshare {}: reading {}: {}", command, what, so_far);
        if (terminal) {
          std::cerr << "\r" << line << std::flush;
        } else if (std::string(what) != last) {
          std::cerr << line << "\n";
        }
        last = std::string(what);
      });
  if (shown && terminal) std::cerr << "\r\033[K" << std::flush;
  if (objects.ok()) {
    for (const std::string& why : objects->undecodable)
      std::cerr << fmt::format("devshare {}: warning: {} (left out)\n", command, why);
  }
  return objects;
}

SnapshotErrors FillSnapshot(const kube::ClusterObjects& objects, std::string_view except,
                            ClusterSnapshot& snapshot) {
  SnapshotErrors errors;
  for (const Node& node : objects.nodes) {
    if (Status s = snapshot.AddNode(node); !s.ok()) errors.nodes[node.name] = s.message();
  }
  for (const Pod& pod : objects.pods) {
    if (pod.uid == except) continue;
    if (Status s = snapshot.AddPod(pod); !s.ok()) errors.pods.emplace_back(s.message());
  }
  for (const ResourceQuota& quota : objects.quotas) {
    if (Status s = snapshot.SetQuota(quota.quota_namespace, quota.name, quota.hard); !s.ok())
      errors.quotas.emplace_back(s.message());
  }
  return errors;
}

}  // namespace devshare::cli
