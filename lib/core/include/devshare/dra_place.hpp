// devshare/dra_place.hpp — choosing a node and devices for a pod's
// ResourceClaims from a ClusterSnapshot's DRA state, by policy.
//
// A node fits when the pod's CPU and memory fit what it has left
// (NodeResourcesFit; a node reporting none is unlimited) and the claims
// can be allocated there (dra::Allocate, exhaustive, in the policy's
// device order). Policies:
//   kUpstream  kube-scheduler's allocator on each node (dra::Allocate's
//              kUpstream order). kube-scheduler, not the allocator, picks the
//              node — by its own scores and at random among ties — so Place
//              refuses it and Fit is exact per node only.
//   kBinpack   the node whose DRA devices are most used once the claims are
//              placed (mean used share), the most used devices first.
//   kSpread    the least used node, the least used devices first.
//   kFgd       fgd (Weng et al., ATC '23) on DRA devices, scored as the
//              annotation path scores it: 100 x sigmoid(the decrease in the
//              node's fragmentation for the workload), rounded down; on the
//              node, the devices whose taking grows it least first.
// A device's used share is the largest share of any capacity its claims
// consume (1 when held whole, 0 when free); its free share, 1 less that.
// Every device of a node's usable pools counts as one GPU in fgd's
// measure. Other ties go to the first node by name, so the result is a
// function of the snapshot.
//
// Cost: Fit is one allocation on one node, O(the node's devices x
// selectors) plus O(devices x workload shapes) under kFgd; Place is Score
// on every node — a lookup where the node is unchanged — and one Fit.
//
// Thread-safety: a Placer keeps compiled selectors and fgd's tables; use
// one per thread.
#ifndef DEVSHARE_DRA_PLACE_HPP_
#define DEVSHARE_DRA_PLACE_HPP_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_allocate.hpp"
#include "devshare/enum_names.hpp"
#include "devshare/export.hpp"
#include "devshare/filter.hpp"
#include "devshare/snapshot.hpp"
#include "devshare/status.hpp"
#include "devshare/workload.hpp"

namespace devshare::dra {

enum class Policy { kUpstream, kBinpack, kSpread, kFgd };

// The names scenario files, the CLI and Python give the policies.
inline constexpr auto kPolicyNames = MakeEnumNames<Policy>({{"upstream", Policy::kUpstream},
                                                            {"binpack", Policy::kBinpack},
                                                            {"spread", Policy::kSpread},
                                                            {"fgd", Policy::kFgd}});

// The order a policy tries a node's devices in (kFgd's, kLowestCostFirst,
// needs the costs Placer gives it).
constexpr DeviceOrder DeviceOrderOf(Policy policy) {
  switch (policy) {
    case Policy::kBinpack:
      return DeviceOrder::kMostUsedFirst;
    case Policy::kSpread:
      return DeviceOrder::kLeastUsedFirst;
    case Policy::kFgd:
      return DeviceOrder::kLowestCostFirst;
    case Policy::kUpstream:
      break;
  }
  return DeviceOrder::kUpstream;
}

// The CPU and memory the pod asks beside its claims.
struct PodResources {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
};

struct PlacerOptions {
  Policy policy = Policy::kUpstream;
  // kFgd: the workload fragmentation is measured for (empty: the default
  // mix of FilterOptions::workload).
  std::vector<WorkloadClass> workload;
  bool fractional_capacity_range = false;  // see AllocatorOptions
};

struct NodeFit {
  std::string node;
  std::vector<Allocation> allocations;  // one per claim, in order
  double score = 0;                     // higher is better; 0 under kUpstream
  double free_gpus = 0;  // Σ free share of the node's devices before; 0 under kUpstream
};

// Score's answer for a node that fits.
struct FitScore {
  double score = 0;
  double free_gpus = 0;
};

struct Placement {
  std::optional<NodeFit> chosen;  // nullopt: no node fits
  std::uint64_t feasible = 0;     // nodes that fit
  std::uint64_t excluded = 0;     // nodes the pod may not go to (NodeExcludes)
  std::uint64_t short_of_cpu_or_memory = 0;
  std::uint64_t short_of_devices = 0;
};

class DEVSHARE_EXPORT Placer {
 public:
  // Errors: kInvalidArgument for a workload class fgd refuses.
  static Result<Placer> Make(PlacerOptions options);
  ~Placer();
  Placer(Placer&&) noexcept;
  Placer& operator=(Placer&&) noexcept;

  const PlacerOptions& options() const;

  // `claims` (unallocated) and `pod` on `node`, or nullopt when they do not
  // fit there. Errors: dra::Allocate's (kUnsupported for a selector devshare
  // does not evaluate), NotFound for an unknown node.
  Result<std::optional<NodeFit>> Fit(const ClusterSnapshot& snapshot,
                                     const std::vector<ResourceClaim>& claims,
                                     const PodResources& pod, std::string_view node);
  // Fit's score, or nullopt when the claims do not fit. Remembered per
  // node until the node's pools or what claims hold on them change, for
  // claims with the same requests and constraints (names aside) and, under
  // kFgd, the same workload classes fitting the node's CPU and memory: a
  // call that finds it costs a lookup (whether the pod's CPU and memory fit
  // the node is looked at afresh each call).
  // Snapshot identity: the memory is for one snapshot object at a time,
  // known by its address; a call with a snapshot at another address forgets
  // it. Between calls the snapshot must stay that object, changed only
  // through its own methods: they advance a node's DRA version when its
  // pools or claims change, which drops the node's memory. REQUIRES: a
  // snapshot that takes another's place at the same address (assigned over,
  // or built where one was destroyed) is not given to a Placer that scored
  // the other (its versions may repeat the other's): use a new Placer.
  Result<std::optional<FitScore>> Score(const ClusterSnapshot& snapshot,
                                        const std::vector<ResourceClaim>& claims,
                                        const PodResources& pod, std::string_view node);
  // Score on every node `constraints` may go to (its node selector,
  // required node affinity and tolerations: NodeExcludes; nullptr: every
  // node), then Fit on the best; the best score wins, and a pod without
  // claims goes, among equal scores, to the node with the fewest free GPUs
  // (where its CPU and memory strand the least later, as Filter places such
  // a pod). Errors: Fit's, the first by node name; kInvalidArgument under
  // kUpstream. `among` (ascending names, nullptr: every node) limits the
  // nodes looked at, as though the others did not fit: the engine judges a
  // pod that fitted nowhere again only on the nodes that gained room since,
  // for the same answer in O(those nodes); unknown names are passed over and
  // the counts are of the nodes looked at.
  Result<Placement> Place(const ClusterSnapshot& snapshot, const std::vector<ResourceClaim>& claims,
                          const PodResources& pod, const Pod* constraints = nullptr,
                          const std::vector<std::string>* among = nullptr);
  // fgd's measure of every node's DRA devices for the placer's workload,
  // with each node's free CPU and memory deciding which classes fit it.
  ClusterFragmentation MeasureFragmentation(const ClusterSnapshot& snapshot);

 private:
  struct Impl;
  explicit Placer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_PLACE_HPP_
