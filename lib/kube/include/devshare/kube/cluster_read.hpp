// devshare/kube/cluster_read.hpp — one read of a live cluster, for the
// commands that look at it (`devshare explain --pod`, `devshare top`).
//
// Thread-safety: a ClusterReader runs an event loop of its own on the
// calling thread; use one from one thread.
#ifndef DEVSHARE_KUBE_CLUSTER_READ_HPP_
#define DEVSHARE_KUBE_CLUSTER_READ_HPP_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/kube/cluster_access.hpp"
#include "devshare/objects.hpp"
#include "devshare/status.hpp"

namespace devshare::kube {

// The field selector of the pods a scheduler looks at: those not finished.
inline constexpr std::string_view kUnfinishedPods = "status.phase!=Succeeded,status.phase!=Failed";

// What a read found.
struct ClusterObjects {
  std::vector<Node> nodes;
  std::vector<Pod> pods;  // every pod not Succeeded or Failed
  std::vector<ResourceQuota> quotas;
  // policy/v1; empty where the reader may not list them (403) or the API
  // server does not serve them.
  std::vector<PodDisruptionBudget> budgets;
  // DRA (resource.k8s.io/v1); empty where the API server does not serve it.
  std::vector<dra::ResourceSlice> slices;
  std::vector<dra::DeviceClass> device_classes;
  std::vector<dra::ResourceClaim> claims;
  // Objects the API server returned that do not decode, each with why
  // ("node gpu-3: ..."); they are left out above.
  std::vector<std::string> undecodable;
};

// Called after each page of a list: what is being listed ("nodes", "pods",
// "resourcequotas", "poddisruptionbudgets", "resourceslices", "deviceclasses",
// "resourceclaims") and
// how many of them so far.
using ReadProgress = std::function<void(std::string_view what, std::size_t so_far)>;

// One command's reads of a live cluster, on one API client (so an exec
// credential plugin runs once), at most 50 requests a second.
class ClusterReader {
 public:
  explicit ClusterReader(ClusterAccess access);
  ~ClusterReader();
  ClusterReader(const ClusterReader&) = delete;
  ClusterReader& operator=(const ClusterReader&) = delete;

  // Errors: ApiClient::Start's.
  Status Start();
  // Lists the nodes, the pods that are not finished, the resource quotas, the
  // PodDisruptionBudgets and the DRA objects (500 a page). Errors: kUnavailable naming the list,
  // the server and its status or the transport error.
  Result<ClusterObjects> ReadCluster(const ReadProgress& progress);
  // One pod by namespace and name. Errors: kNotFound when the API server has
  // none; kUnavailable as ReadCluster; kInvalidArgument when it does not decode.
  Result<Pod> ReadPod(std::string_view pod_namespace, std::string_view name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace devshare::kube

#endif  // DEVSHARE_KUBE_CLUSTER_READ_HPP_
