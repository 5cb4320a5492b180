// The allocation results (dra/allocation_result.hpp).
#include "dra/allocation_result.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string_view>

namespace devshare::dra::allocator {

std::string ShareId(const ResourceClaim& claim, std::size_t index) {
  std::uint64_t h1 = 1469598103934665603ULL;
  std::uint64_t h2 = 1099511628211ULL;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h1 = (h1 ^ c) * 1099511628211ULL;
      h2 = (h2 + c) * 6364136223846793005ULL + 1442695040888963407ULL;
    }
  };
  mix(claim.uid.empty() ? claim.claim_namespace + "/" + claim.name : claim.uid);
  mix(fmt::format("/{}", index));
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", static_cast<std::uint32_t>(h1 >> 32),
                     static_cast<std::uint16_t>(h1 >> 16), static_cast<std::uint16_t>(h1) & 0xfff,
                     (static_cast<std::uint16_t>(h2 >> 48) & 0x3fff) | 0x8000,
                     h2 & 0xffffffffffffULL);
}

Result<std::optional<NodeSelector>> NodeSelectorFor(const std::vector<DeviceResult>& results,
                                                    const Node& node) {
  NodeSelectorTerm term;
  auto add = [](const std::vector<NodeSelectorRequirement>& from,
                std::vector<NodeSelectorRequirement>& to) {
    for (const NodeSelectorRequirement& r : from) {
      const std::set<std::string> values(r.values.begin(), r.values.end());
      const bool present = std::any_of(to.begin(), to.end(), [&](const auto& e) {
        return e.key == r.key && e.op == r.op &&
               std::set<std::string>(e.values.begin(), e.values.end()) == values;
      });
      if (!present) to.push_back(r);
    }
  };
  for (const DeviceResult& r : results) {
    const ResourceSlice& slice = *r.candidate.slice;
    const NodeScope* scope = &slice.node_scope;
    if (slice.per_device_node_selection) {
      const std::optional<NodeScope>& own = r.candidate.device().node_scope;
      static const NodeScope kNone;
      scope = own ? &*own : &kNone;
    }
    if (!scope->node_name.empty() || r.candidate.device().binds_to_node) {
      return std::optional<NodeSelector>(NodeSelector{
          {NodeSelectorTerm{{}, {NodeSelectorRequirement{"metadata.name", "In", {node.name}}}}}});
    }
    if (scope->node_selector) {
      if (scope->node_selector->terms.size() > 1) {
        return Status::InvalidArgument(
            fmt::format("unsupported ResourceSlice.NodeSelector with {} terms",
                        scope->node_selector->terms.size()));
      }
      if (scope->node_selector->terms.size() == 1) {
        add(scope->node_selector->terms[0].match_fields, term.match_fields);
        add(scope->node_selector->terms[0].match_expressions, term.match_expressions);
      }
    }
  }
  if (term.match_fields.empty() && term.match_expressions.empty())
    return std::optional<NodeSelector>();
  return std::optional<NodeSelector>(NodeSelector{{std::move(term)}});
}

Result<std::vector<Allocation>> BuildAllocations(
    const std::vector<std::vector<DeviceResult>>& results, const Node& node) {
  std::vector<Allocation> allocations(results.size());
  for (std::size_t c = 0; c < results.size(); ++c) {
    for (const DeviceResult& r : results[c]) {
      AllocatedDevice& d = allocations[c].devices.emplace_back();
      d.request = r.request;
      d.driver = r.candidate.id.driver;
      d.pool = r.candidate.id.pool;
      d.device = r.candidate.id.device;
      d.admin_access = r.admin_access;
      d.tolerations = r.selection->tolerations;
      d.binding_conditions = r.candidate.device().binding_conditions;
      d.binding_failure_conditions = r.candidate.device().binding_failure_conditions;
      d.share_id = r.share_id;
      d.consumed_capacity = r.consumed_capacity;
    }
    Result<std::optional<NodeSelector>> selector = NodeSelectorFor(results[c], node);
    if (!selector.ok()) return selector.status();
    allocations[c].node_selector = *selector;
  }
  return allocations;
}

}  // namespace devshare::dra::allocator
