// Selection of devices by CEL selectors and node scope (dra/device_match.hpp).
#include "dra/device_match.hpp"

#include <fmt/format.h>

#include "devshare/dra_cel.hpp"
#include "devshare/dra_pools.hpp"

namespace devshare::dra::allocator {

Result<bool> DeviceMatcher::Selectable(const RequestKey& key, const RequestData& data,
                                       const CandidateDevice& candidate) {
  auto cached = matches_.find({candidate.id, key});
  if (cached != matches_.end()) return cached->second;
  bool match = true;
  if (data.device_class != nullptr) {
    Result<bool> m =
        SelectorsMatch(key, candidate, data.device_class, data.device_class->selectors);
    if (!m.ok()) return m;
    match = *m;
  }
  if (match) {
    Result<bool> m = SelectorsMatch(key, candidate, nullptr, data.selection->selectors);
    if (!m.ok()) return m;
    match = *m;
  }
  if (match && candidate.slice->per_device_node_selection) {
    const std::optional<NodeScope>& scope = candidate.device().node_scope;
    match = scope && ScopeSelects(*scope, node_);
  }
  matches_.emplace(std::make_pair(candidate.id, key), match);
  return match;
}

Result<bool> DeviceMatcher::SelectorsMatch(const RequestKey& key, const CandidateDevice& candidate,
                                           const DeviceClass* device_class,
                                           const std::vector<std::string>& selectors) {
  const ResourceClaim& claim = claims_[key.claim];
  // Named in errors only: not formatted on the way that matches.
  auto owner = [&] {
    return device_class != nullptr ? fmt::format("class {}", device_class->name)
                                   : fmt::format("claim {}/{}", claim.claim_namespace, claim.name);
  };
  for (std::size_t i = 0; i < selectors.size(); ++i) {
    const Result<Selector>& compiled = selectors_.Compile(selectors[i]);
    if (!compiled.ok()) {
      const Status& s = compiled.status();
      std::string message =
          fmt::format("{}: selector #{}: CEL compile error: {}", owner(), i, s.message());
      if (s.code() == StatusCode::kUnsupported) return Status::Unsupported(std::move(message));
      return Status::InvalidArgument(std::move(message));
    }
    Result<bool> m = Matches(*compiled, candidate.id.driver, candidate.device());
    if (!m.ok()) {
      std::string message = fmt::format(
          "{}: selector #{} on device {}/{}/{}: CEL runtime error: {}", owner(), i,
          candidate.id.driver, candidate.id.pool, candidate.id.device, m.status().message());
      if (m.status().code() == StatusCode::kUnsupported)
        return Status::Unsupported(std::move(message));
      return Status::InvalidArgument(std::move(message));
    }
    if (!*m) return false;
  }
  return true;
}

}  // namespace devshare::dra::allocator
