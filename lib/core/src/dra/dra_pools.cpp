// The pools a node can allocate from (devshare/dra_pools.hpp).
#include "devshare/dra_pools.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

namespace devshare::dra {

namespace {

bool UsesCompatibilityGroups(const ResourceSlice& slice) {
  for (const Device& device : slice.devices) {
    for (const CounterConsumption& c : device.consumes_counters) {
      if (!c.compatibility_groups.empty()) return true;
    }
  }
  return false;
}

// Whether the slice is for `node` at all: by its own scope, or (per-device
// node selection) by the scope of any of its devices. Slices with neither
// (counter-set slices) never are.
bool SliceSelects(const ResourceSlice& slice, const Node& node) {
  const NodeScope& scope = slice.node_scope;
  if (!scope.node_name.empty() || scope.all_nodes || scope.node_selector)
    return ScopeSelects(scope, node);
  if (!slice.per_device_node_selection) return false;
  return std::any_of(slice.devices.begin(), slice.devices.end(), [&](const Device& d) {
    return d.node_scope && ScopeSelects(*d.node_scope, node);
  });
}

using PoolKey = std::pair<std::string_view, std::string_view>;  // driver, pool

// The reason the pool's devices cannot be trusted, or empty.
std::string Invalidity(const std::vector<const ResourceSlice*>& device_slices,
                       const std::vector<const ResourceSlice*>& elsewhere,
                       const std::map<std::string, const CounterSet*>& counter_sets,
                       const std::string& duplicate_set) {
  std::set<std::string_view> names;
  for (const ResourceSlice* slice : device_slices) {
    for (const Device& device : slice->devices) {
      if (!names.insert(device.name).second)
        return fmt::format("duplicate device name {}", device.name);
    }
  }
  if (!duplicate_set.empty()) return fmt::format("duplicate counter set name {}", duplicate_set);
  for (const auto* group : {&device_slices, &elsewhere}) {
    for (const ResourceSlice* slice : *group) {
      for (const Device& device : slice->devices) {
        for (const CounterConsumption& c : device.consumes_counters) {
          auto set = counter_sets.find(c.counter_set);
          if (set == counter_sets.end())
            return fmt::format("counter set {} not found", c.counter_set);
          for (const auto& [counter, quantity] : c.counters) {
            if (!set->second->counters.contains(counter))
              return fmt::format("counter {} not found in counter set {}", counter,
                                 set->second->name);
          }
        }
      }
    }
  }
  return {};
}

// A complete pool from its slices for the node (`mine`) and, when some of
// its slices are not for the node, all of its slices (`all`).
GatheredPool Build(PoolKey key, std::vector<const ResourceSlice*> mine,
                   const std::vector<const ResourceSlice*>& all) {
  auto by_name = [](const ResourceSlice* a, const ResourceSlice* b) { return a->name < b->name; };
  std::sort(mine.begin(), mine.end(), by_name);
  GatheredPool pool;
  pool.driver = std::string(key.first);
  pool.pool = std::string(key.second);
  std::vector<const ResourceSlice*> counter_slices;
  for (const ResourceSlice* slice : mine) {
    (slice->shared_counters.empty() ? pool.device_slices : counter_slices).push_back(slice);
  }
  if (mine.size() < all.size()) {
    std::set<std::string_view> mine_names;
    for (const ResourceSlice* slice : mine) mine_names.insert(slice->name);
    for (const ResourceSlice* slice : all) {
      if (mine_names.contains(slice->name)) continue;
      (slice->shared_counters.empty() ? pool.device_slices_elsewhere : counter_slices)
          .push_back(slice);
    }
  }
  std::string duplicate_set;
  for (const ResourceSlice* slice : counter_slices) {
    for (const CounterSet& set : slice->shared_counters) {
      if (!pool.counter_sets.emplace(set.name, &set).second && duplicate_set.empty())
        duplicate_set = set.name;
    }
  }
  pool.invalid_reason = Invalidity(pool.device_slices, pool.device_slices_elsewhere,
                                   pool.counter_sets, duplicate_set);
  pool.invalid = !pool.invalid_reason.empty();
  if (pool.invalid) {
    pool.device_slices.clear();
    pool.device_slices_elsewhere.clear();
    pool.counter_sets.clear();
  }
  return pool;
}

bool HasBindingConditions(const GatheredPool& pool) {
  for (const ResourceSlice* slice : pool.device_slices) {
    for (const Device& device : slice->devices) {
      if (!device.binding_conditions.empty()) return true;
    }
  }
  return false;
}

}  // namespace

bool ScopeSelects(const NodeScope& scope, const Node& node) {
  if (!scope.node_name.empty()) return node.name == scope.node_name;
  if (scope.all_nodes) return true;
  if (scope.node_selector) return NodeSelectorMatches(*scope.node_selector, node);
  return false;
}

std::vector<GatheredPool> GatherPools(const std::vector<ResourceSlice>& slices, const Node& node) {
  std::vector<const ResourceSlice*> all(slices.size());
  for (std::size_t i = 0; i < slices.size(); ++i) all[i] = &slices[i];
  return GatherPools(all, node, [&](std::string_view driver, std::string_view pool) {
    std::vector<const ResourceSlice*> of_pool;
    for (const ResourceSlice* slice : all) {
      if (slice->driver == driver && slice->pool.name == pool) of_pool.push_back(slice);
    }
    return of_pool;
  });
}

std::vector<GatheredPool> GatherPools(std::span<const ResourceSlice* const> candidates,
                                      const Node& node, const PoolSlices& pool_slices) {
  // The newest generation of each pool among the node's slices, taken in
  // name order (a pool's first slice gives its slice count).
  std::vector<const ResourceSlice*> ordered(candidates.begin(), candidates.end());
  std::stable_sort(
      ordered.begin(), ordered.end(),
      [](const ResourceSlice* a, const ResourceSlice* b) { return a->name < b->name; });
  std::map<PoolKey, std::vector<const ResourceSlice*>> mine;
  for (const ResourceSlice* candidate : ordered) {
    const ResourceSlice& slice = *candidate;
    if (!slice.node_scope.node_name.empty() && slice.node_scope.node_name != node.name) continue;
    if (UsesCompatibilityGroups(slice) || !SliceSelects(slice, node)) continue;
    std::vector<const ResourceSlice*>& pool = mine[{slice.driver, slice.pool.name}];
    if (!pool.empty() && slice.pool.generation < pool[0]->pool.generation) continue;
    if (!pool.empty() && slice.pool.generation > pool[0]->pool.generation) pool.clear();
    pool.push_back(&slice);
  }
  std::vector<GatheredPool> result, with_binding_conditions;
  for (auto& [key, node_slices] : mine) {
    const Pool& pool = node_slices[0]->pool;
    GatheredPool gathered;
    if (static_cast<std::int64_t>(node_slices.size()) == pool.resource_slice_count) {
      gathered = Build(key, node_slices, {});
    } else {
      // Some slices are not for this node: the pool counts if all of its
      // newest generation are there, and no slice is newer still.
      std::vector<const ResourceSlice*> all;
      bool obsolete = false;
      for (const ResourceSlice* slice : pool_slices(key.first, key.second)) {
        if (slice->pool.generation > pool.generation) obsolete = true;
        if (slice->pool.generation == pool.generation && !UsesCompatibilityGroups(*slice))
          all.push_back(slice);
      }
      if (obsolete) continue;
      if (static_cast<std::int64_t>(all.size()) != pool.resource_slice_count) {
        gathered.driver = std::string(key.first);
        gathered.pool = std::string(key.second);
        gathered.incomplete = true;
        result.push_back(std::move(gathered));
        continue;
      }
      gathered = Build(key, node_slices, all);
    }
    (HasBindingConditions(gathered) ? with_binding_conditions : result)
        .push_back(std::move(gathered));
  }
  // `mine` is ordered by (driver, pool): both groups are sorted already.
  for (GatheredPool& pool : with_binding_conditions) result.push_back(std::move(pool));
  return result;
}

}  // namespace devshare::dra
