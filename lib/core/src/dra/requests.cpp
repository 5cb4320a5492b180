// The claims' requests and constraints, validated (dra/requests.hpp).
#include "dra/requests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "dra/capacity.hpp"
#include "dra/device_match.hpp"

namespace devshare::dra::allocator {

namespace {

// validateDeviceRequest: `selection` of request `key` (`name`, and
// `parent` for a subrequest) of `claim`.
Result<RequestData> Validate(const ResourceClaim& claim, const RequestKey& key,
                             const DeviceSelection& selection, const std::string& name,
                             const std::string& parent, const std::vector<GatheredPool>& pools,
                             const DeviceClasses& classes, bool fractional,
                             DeviceMatcher& matcher) {
  RequestData data;
  data.selection = &selection;
  data.name = name;
  data.parent_name = parent;
  data.has_subrequests = !parent.empty();
  auto found = classes.find(selection.device_class_name);
  if (found == classes.end()) {
    return Status::NotFound(
        fmt::format("claim {}/{}, request {}: could not retrieve device class {}: not found",
                    claim.claim_namespace, claim.name, name, selection.device_class_name));
  }
  data.device_class = &found->second;
  if (selection.allocation_mode == AllocationMode::kExactCount) {
    data.num_devices = static_cast<std::size_t>(selection.count);
    return data;
  }
  for (const GatheredPool& pool : pools) {
    if (pool.incomplete || pool.invalid) {
      return Status::InvalidArgument(fmt::format(
          "claim {}/{}, request {}: asks for all devices, but resource pool {}/{} is currently "
          "{}",
          claim.claim_namespace, claim.name, name, pool.driver, pool.pool,
          pool.incomplete ? "being updated" : "invalid"));
    }
    for (const ResourceSlice* slice : pool.device_slices) {
      for (std::size_t i = 0; i < slice->devices.size(); ++i) {
        CandidateDevice candidate{
            &pool, slice, i, DeviceId{slice->driver, slice->pool.name, slice->devices[i].name}};
        Result<bool> selectable = matcher.Selectable(key, data, candidate);
        if (!selectable.ok()) return selectable.status();
        if (!*selectable) continue;
        Result<bool> fits = RequestFitsCapacity({}, selection.capacity_requests, candidate.device(),
                                                nullptr, fractional);
        if (!fits.ok()) {
          return Status::InvalidArgument(fmt::format(
              "claim {}/{}, request {}: checking capacity for device {}: {}", claim.claim_namespace,
              claim.name, name, candidate.device().name, fits.status().message()));
        }
        if (*fits) data.all_devices.push_back(std::move(candidate));
      }
    }
  }
  data.num_devices = data.all_devices.size();
  return data;
}

}  // namespace

Result<PreparedClaims> PrepareClaims(const std::vector<ResourceClaim>& claims,
                                     const std::vector<GatheredPool>& pools,
                                     const DeviceClasses& classes, bool fractional_capacity_range,
                                     DeviceMatcher& matcher) {
  PreparedClaims out;
  out.constraints.resize(claims.size());
  auto validate = [&](const ResourceClaim& claim, const RequestKey& key,
                      const DeviceSelection& selection, const std::string& name,
                      const std::string& parent) {
    return Validate(claim, key, selection, name, parent, pools, classes, fractional_capacity_range,
                    matcher);
  };
  for (std::size_t c = 0; c < claims.size(); ++c) {
    const ResourceClaim& claim = claims[c];
    std::size_t min_devices_per_claim = 0;
    for (std::size_t r = 0; r < claim.spec.requests.size(); ++r) {
      const DeviceRequest& request = claim.spec.requests[r];
      std::size_t min_devices = 0;
      if (!request.first_available.empty()) {
        min_devices = std::numeric_limits<std::size_t>::max();
        for (std::size_t s = 0; s < request.first_available.size(); ++s) {
          const DeviceSubRequest& sub = request.first_available[s];
          Result<RequestData> data =
              validate(claim, RequestKey{c, r, s}, sub.selection, sub.name, request.name);
          if (!data.ok()) return data.status();
          min_devices = std::min(min_devices, data->num_devices);
          out.requests[RequestKey{c, r, s}] = std::move(*data);
        }
      } else if (request.exactly) {
        Result<RequestData> data =
            validate(claim, RequestKey{c, r, 0}, *request.exactly, request.name, "");
        if (!data.ok()) return data.status();
        min_devices = data->num_devices;
        out.requests[RequestKey{c, r, 0}] = std::move(*data);
      }
      if (min_devices > kAllocationResultsMaxSize - min_devices_per_claim) {
        return Status::InvalidArgument(fmt::format(
            "claim {}/{}, request {}: adding {} devices exceeds the claim limit of {}, with {} "
            "already accounted for",
            claim.claim_namespace, claim.name, request.name, min_devices, kAllocationResultsMaxSize,
            min_devices_per_claim));
      }
      min_devices_per_claim += min_devices;
    }
    for (const DeviceConstraint& constraint : claim.spec.constraints) {
      if (constraint.match_attribute) {
        out.constraints[c].emplace_back(constraint.requests, *constraint.match_attribute, false);
      } else if (constraint.distinct_attribute) {
        out.constraints[c].emplace_back(constraint.requests, *constraint.distinct_attribute, true);
      } else {
        return Status::InvalidArgument(
            fmt::format("claim {}/{}, constraint #{}: empty constraint (unsupported constraint "
                        "type?)",
                        claim.claim_namespace, claim.name, out.constraints[c].size()));
      }
    }
  }
  return out;
}

}  // namespace devshare::dra::allocator
