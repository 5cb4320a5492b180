// dra_state.hpp — the DRA part of the snapshot (ClusterSnapshot's
// ResourceSlices, DeviceClasses and ResourceClaims): slices indexed by node
// and by pool, each node's pools gathered when something they depend on
// changes (never per allocation call), and what allocated claims hold,
// changed claim by claim. Private to the core.
#ifndef DEVSHARE_SRC_DRA_STATE_HPP_
#define DEVSHARE_SRC_DRA_STATE_HPP_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devshare/dra.hpp"
#include "devshare/dra_allocate.hpp"
#include "devshare/dra_pools.hpp"
#include "devshare/objects.hpp"

namespace devshare::internal {

// A node's view of the DRA objects: the pools it can allocate from (their
// slices point into DraState::slices) and a version that changes whenever
// they or what claims hold on their devices change.
struct DraNode {
  std::vector<dra::GatheredPool> pools;
  // The pools of every slice gathering looked at (whether or not it
  // selects the node): a change to any of their slices may change `pools`.
  std::set<std::pair<std::string, std::string>> candidate_pools;
  std::uint64_t version = 0;
};

struct DraState {
  using PoolKey = std::pair<std::string, std::string>;            // driver, pool name
  std::map<std::string, dra::ResourceSlice, std::less<>> slices;  // by name; stable addresses
  std::map<std::string, std::set<std::string>, std::less<>> slices_by_node;  // spec.nodeName
  std::set<std::string> unpinned_slices;  // no spec.nodeName: selectors, all nodes, per device
  std::map<PoolKey, std::set<std::string>> slices_by_pool;
  std::map<PoolKey, std::set<std::string>> nodes_by_pool;  // nodes with it in candidate_pools
  dra::DeviceClasses classes;
  std::map<std::pair<std::string, std::string>, dra::ResourceClaim> claims;  // namespace, name
  std::map<std::pair<std::string, std::string>, dra::ResourceClaimTemplate> templates;
  dra::AllocatedState allocated;
  std::map<std::string, DraNode, std::less<>> nodes;  // every registered node
  std::uint64_t next_version = 1;
};

struct SnapshotState;

// Gathers `node`'s pools anew (after the node or one of its slices changed).
void RegatherPools(DraState& s, const Node& node);
// Forgets a removed node.
void DropNode(DraState& s, std::string_view node);
// The nodes whose pools a change to `slice` may change: its own node, the
// nodes that see its pool, and every node for a slice without spec.nodeName.
std::set<std::string> NodesOfSlice(const DraState& s, const dra::ResourceSlice& slice);
// Gathers every node's pools anew: a copied snapshot's pools must point
// into its own slices.
void RebuildPools(SnapshotState& s);
// Marks the nodes that see the devices of `allocation` as changed.
void TouchAllocation(DraState& s, const dra::Allocation& allocation);

}  // namespace devshare::internal

#endif  // DEVSHARE_SRC_DRA_STATE_HPP_
