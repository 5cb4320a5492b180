// The DRA part of ClusterSnapshot (devshare/snapshot.hpp, dra_state.hpp).
#include "state/dra_state.hpp"

#include <fmt/format.h>

#include <utility>

#include "devshare/snapshot.hpp"
#include "state/snapshot_state.hpp"

namespace devshare::internal {

namespace {

DraState::PoolKey KeyOf(const dra::ResourceSlice& slice) { return {slice.driver, slice.pool.name}; }

void Unindex(DraState& s, const dra::ResourceSlice& slice) {
  if (slice.node_scope.node_name.empty()) {
    s.unpinned_slices.erase(slice.name);
  } else if (auto on = s.slices_by_node.find(slice.node_scope.node_name);
             on != s.slices_by_node.end()) {
    on->second.erase(slice.name);
    if (on->second.empty()) s.slices_by_node.erase(on);
  }
  if (auto of = s.slices_by_pool.find(KeyOf(slice)); of != s.slices_by_pool.end()) {
    of->second.erase(slice.name);
    if (of->second.empty()) s.slices_by_pool.erase(of);
  }
}

void Index(DraState& s, const dra::ResourceSlice& slice) {
  if (slice.node_scope.node_name.empty()) {
    s.unpinned_slices.insert(slice.name);
  } else {
    s.slices_by_node[slice.node_scope.node_name].insert(slice.name);
  }
  s.slices_by_pool[KeyOf(slice)].insert(slice.name);
}

void Regather(SnapshotState& s, const std::set<std::string>& nodes) {
  for (const std::string& name : nodes) {
    if (const NodeState* node = s.FindNode(name)) RegatherPools(s.dra, node->object);
  }
}

// Takes `node` out of nodes_by_pool for the pools it looked at.
void ForgetCandidatePools(DraState& s, const std::string& node, const DraNode& view) {
  for (const DraState::PoolKey& key : view.candidate_pools) {
    auto seen = s.nodes_by_pool.find(key);
    if (seen == s.nodes_by_pool.end()) continue;
    seen->second.erase(node);
    if (seen->second.empty()) s.nodes_by_pool.erase(seen);
  }
}

void TouchAll(DraState& s) {
  for (auto& [name, node] : s.nodes) node.version = s.next_version++;
}

}  // namespace

void RegatherPools(DraState& s, const Node& node) {
  std::vector<const dra::ResourceSlice*> candidates;
  auto add = [&](const std::set<std::string>& names) {
    for (const std::string& name : names) candidates.push_back(&s.slices.find(name)->second);
  };
  if (auto on = s.slices_by_node.find(node.name); on != s.slices_by_node.end()) add(on->second);
  add(s.unpinned_slices);
  DraNode& view = s.nodes[node.name];
  ForgetCandidatePools(s, node.name, view);
  view.pools =
      dra::GatherPools(candidates, node, [&](std::string_view driver, std::string_view pool) {
        std::vector<const dra::ResourceSlice*> of_pool;
        auto names = s.slices_by_pool.find({std::string(driver), std::string(pool)});
        if (names == s.slices_by_pool.end()) return of_pool;
        for (const std::string& name : names->second)
          of_pool.push_back(&s.slices.find(name)->second);
        return of_pool;
      });
  view.candidate_pools.clear();
  for (const dra::ResourceSlice* slice : candidates) view.candidate_pools.insert(KeyOf(*slice));
  for (const DraState::PoolKey& key : view.candidate_pools) s.nodes_by_pool[key].insert(node.name);
  view.version = s.next_version++;
}

void DropNode(DraState& s, std::string_view node) {
  auto view = s.nodes.find(node);
  if (view == s.nodes.end()) return;
  ForgetCandidatePools(s, view->first, view->second);
  s.nodes.erase(view);
}

std::set<std::string> NodesOfSlice(const DraState& s, const dra::ResourceSlice& slice) {
  std::set<std::string> nodes;
  if (slice.node_scope.node_name.empty()) {
    for (const auto& [name, view] : s.nodes) nodes.insert(name);
    return nodes;
  }
  nodes.insert(slice.node_scope.node_name);
  if (auto seen = s.nodes_by_pool.find(KeyOf(slice)); seen != s.nodes_by_pool.end())
    nodes.insert(seen->second.begin(), seen->second.end());
  return nodes;
}

void TouchAllocation(DraState& s, const dra::Allocation& allocation) {
  for (const dra::AllocatedDevice& device : allocation.devices) {
    auto seen = s.nodes_by_pool.find({device.driver, device.pool});
    if (seen == s.nodes_by_pool.end()) continue;
    for (const std::string& name : seen->second) {
      if (auto view = s.nodes.find(name); view != s.nodes.end())
        view->second.version = s.next_version++;
    }
  }
}

void RebuildPools(SnapshotState& s) {
  s.dra.nodes_by_pool.clear();
  for (auto& [name, view] : s.dra.nodes) {
    view.pools.clear();
    view.candidate_pools.clear();
  }
  for (auto& [name, view] : s.dra.nodes) {
    if (const NodeState* node = s.FindNode(name)) RegatherPools(s.dra, node->object);
  }
}

}  // namespace devshare::internal

namespace devshare {

using internal::DraState;

void ClusterSnapshot::AddResourceSlice(dra::ResourceSlice slice) {
  internal::SnapshotState& s = *state_;
  std::set<std::string> affected;
  if (auto old = s.dra.slices.find(slice.name); old != s.dra.slices.end()) {
    affected = internal::NodesOfSlice(s.dra, old->second);
    internal::Unindex(s.dra, old->second);
    s.dra.slices.erase(old);
  }
  std::string name = slice.name;
  const dra::ResourceSlice& stored = s.dra.slices.emplace(name, std::move(slice)).first->second;
  internal::Index(s.dra, stored);
  affected.merge(internal::NodesOfSlice(s.dra, stored));
  internal::Regather(s, affected);
}

bool ClusterSnapshot::RemoveResourceSlice(std::string_view name) {
  internal::SnapshotState& s = *state_;
  auto old = s.dra.slices.find(name);
  if (old == s.dra.slices.end()) return false;
  std::set<std::string> affected = internal::NodesOfSlice(s.dra, old->second);
  internal::Unindex(s.dra, old->second);
  s.dra.slices.erase(old);
  internal::Regather(s, affected);
  return true;
}

void ClusterSnapshot::AddDeviceClass(dra::DeviceClass device_class) {
  std::string name = device_class.name;
  state_->dra.classes.insert_or_assign(std::move(name), std::move(device_class));
  internal::TouchAll(state_->dra);
}

bool ClusterSnapshot::RemoveDeviceClass(std::string_view name) {
  auto it = state_->dra.classes.find(name);
  if (it == state_->dra.classes.end()) return false;
  state_->dra.classes.erase(it);
  internal::TouchAll(state_->dra);
  return true;
}

void ClusterSnapshot::AddResourceClaim(dra::ResourceClaim claim) {
  DraState& s = state_->dra;
  auto [it, inserted] = s.claims.try_emplace({claim.claim_namespace, claim.name});
  if (!inserted && it->second.allocation) {
    s.allocated.Remove(*it->second.allocation);
    internal::TouchAllocation(s, *it->second.allocation);
  }
  it->second = std::move(claim);
  if (it->second.allocation) {
    s.allocated.Add(*it->second.allocation);
    internal::TouchAllocation(s, *it->second.allocation);
  }
}

bool ClusterSnapshot::RemoveResourceClaim(std::string_view claim_namespace, std::string_view name) {
  DraState& s = state_->dra;
  auto it = s.claims.find({std::string(claim_namespace), std::string(name)});
  if (it == s.claims.end()) return false;
  if (it->second.allocation) {
    s.allocated.Remove(*it->second.allocation);
    internal::TouchAllocation(s, *it->second.allocation);
  }
  s.claims.erase(it);
  return true;
}

void ClusterSnapshot::AddResourceClaimTemplate(dra::ResourceClaimTemplate claim_template) {
  std::pair key{claim_template.template_namespace, claim_template.name};
  state_->dra.templates.insert_or_assign(std::move(key), std::move(claim_template));
}

bool ClusterSnapshot::RemoveResourceClaimTemplate(std::string_view template_namespace,
                                                  std::string_view name) {
  return state_->dra.templates.erase({std::string(template_namespace), std::string(name)}) > 0;
}

std::size_t ClusterSnapshot::resource_slice_count() const { return state_->dra.slices.size(); }
std::size_t ClusterSnapshot::resource_claim_count() const { return state_->dra.claims.size(); }
const dra::DeviceClasses& ClusterSnapshot::device_classes() const { return state_->dra.classes; }
const dra::AllocatedState& ClusterSnapshot::dra_allocated() const { return state_->dra.allocated; }

const dra::ResourceClaim* ClusterSnapshot::FindResourceClaim(std::string_view claim_namespace,
                                                             std::string_view name) const {
  auto it = state_->dra.claims.find({std::string(claim_namespace), std::string(name)});
  return it == state_->dra.claims.end() ? nullptr : &it->second;
}

std::vector<const dra::ResourceClaim*> ClusterSnapshot::ResourceClaims() const {
  std::vector<const dra::ResourceClaim*> claims;
  claims.reserve(state_->dra.claims.size());
  for (const auto& [key, claim] : state_->dra.claims) claims.push_back(&claim);
  return claims;
}

const dra::ResourceClaimTemplate* ClusterSnapshot::FindResourceClaimTemplate(
    std::string_view template_namespace, std::string_view name) const {
  auto it = state_->dra.templates.find({std::string(template_namespace), std::string(name)});
  return it == state_->dra.templates.end() ? nullptr : &it->second;
}

Result<const std::vector<dra::GatheredPool>*> ClusterSnapshot::DraPools(
    std::string_view node) const {
  auto view = state_->dra.nodes.find(node);
  if (view == state_->dra.nodes.end() || state_->FindNode(node) == nullptr)
    return Status::NotFound(fmt::format("node {} is not in the snapshot", node));
  return &view->second.pools;
}

Result<std::optional<std::vector<dra::Allocation>>> ClusterSnapshot::AllocateClaims(
    const std::vector<dra::ResourceClaim>& claims, std::string_view node,
    const dra::AllocatorOptions& options) const {
  Result<const std::vector<dra::GatheredPool>*> pools = DraPools(node);
  if (!pools.ok()) return pools.status();
  return dra::Allocate(claims, state_->FindNode(node)->object, **pools, state_->dra.classes,
                       state_->dra.allocated, options);
}

Result<dra::NodeExplanation> ClusterSnapshot::ExplainClaim(
    const dra::ResourceClaim& claim, std::string_view node,
    const dra::AllocatorOptions& options) const {
  Result<const std::vector<dra::GatheredPool>*> pools = DraPools(node);
  if (!pools.ok()) return pools.status();
  return dra::ExplainNode(claim, state_->FindNode(node)->object, **pools, state_->dra.classes,
                          state_->dra.allocated, options);
}

}  // namespace devshare
