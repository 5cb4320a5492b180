// The allocator's depth-first search (dra/search.hpp).
#include "dra/search.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "devshare/dra_allocate.hpp"
#include "k8s/tolerations.hpp"

namespace devshare::dra::allocator {

Result<Outcome> Search::Run() { return AllocateOne(RequestKey{}, 0, false, 0); }

void Search::Rollback(const RequestKey& key, const CandidateDevice& candidate,
                      const std::string& base, const std::string& sub, const Undo& undo) {
  if (undo.result_added) results_[key.claim].resize(undo.previous_results);
  if (undo.capacity_inserted)
    usage_.ReleaseCapacity(candidate.id, undo.consumed_capacity, undo.capacity_entry_existed);
  if (undo.device_marked) usage_.ReleaseWhole(candidate.id, key.claim);
  for (std::size_t i = undo.constraints_added; i-- > 0;)
    prepared_.constraints[key.claim][i].Remove(base, sub);
  if (undo.counters_reserved) usage_.ReleaseCounters(candidate);
}

// allocateDevice: false when the device cannot be taken; `undo` then
// describes what to roll back once the search moves on.
Result<bool> Search::AllocateDevice(const RequestKey& key, const CandidateDevice& candidate,
                                    bool must, Undo& undo) {
  const ResourceClaim& claim = claims_[key.claim];
  const RequestData& data = prepared_.requests.at(key);
  const DeviceSelection& selection = *data.selection;
  const Device& device = candidate.device();
  const bool multiple = device.allow_multiple_allocations;
  if (!multiple && selection.admin_access && usage_.AllocatingForClaim(candidate.id, key.claim))
    return false;
  if (!selection.admin_access && usage_.InUse(candidate.id)) return false;
  const bool skip_counters = multiple && usage_.CapacityInUse(candidate.id);
  if (!skip_counters && !device.consumes_counters.empty()) {
    if (!usage_.ReserveCounters(candidate)) return false;
    undo.counters_reserved = true;
  }
  const std::string base = data.has_subrequests ? data.parent_name : data.name;
  const std::string sub = data.has_subrequests ? data.name : std::string();
  undo.previous_results = results_[key.claim].size();
  if (std::any_of(device.taints.begin(), device.taints.end(), [&](const DeviceTaint& taint) {
        return devshare::internal::TaintRepels(taint, selection.tolerations);
      })) {
    Rollback(key, candidate, base, sub, undo);
    return false;
  }
  for (Constraint& constraint : prepared_.constraints[key.claim]) {
    if (!constraint.Add(base, sub, device, candidate.id)) {
      Rollback(key, candidate, base, sub, undo);
      if (must) {
        return Status::InvalidArgument(fmt::format(
            "claim {}/{}, request {}: cannot add device {}/{}/{} because a claim constraint "
            "would not be satisfied",
            claim.claim_namespace, claim.name, data.name, candidate.id.driver, candidate.id.pool,
            candidate.id.device));
      }
      return false;
    }
    ++undo.constraints_added;
  }
  if (!multiple) {
    usage_.TakeWhole(candidate.id, key.claim);
    undo.device_marked = true;
  }
  DeviceResult result{data.FullName(), candidate,    selection.admin_access,
                      &selection,      std::nullopt, {}};
  Result<bool> fits = usage_.FitsCapacity(data.selection->capacity_requests, candidate);
  if (!fits.ok() || !*fits) {
    Rollback(key, candidate, base, sub, undo);
    if (!fits.ok()) {
      return Status::InvalidArgument(
          fmt::format("claim {}/{}, request {}: rechecking capacity for device {}/{}/{}: {}",
                      claim.claim_namespace, claim.name, data.name, candidate.id.driver,
                      candidate.id.pool, candidate.id.device, fits.status().message()));
    }
    return false;
  }
  if (multiple) {
    Result<Capacities> consumed =
        ConsumedCapacity(selection.capacity_requests, device, usage_.fractional_capacity_range());
    if (!consumed.ok()) {
      Rollback(key, candidate, base, sub, undo);
      return Status::InvalidArgument(fmt::format(
          "claim {}/{}, request {}: computing consumed capacity for device {}/{}/{}: {}",
          claim.claim_namespace, claim.name, data.name, candidate.id.driver, candidate.id.pool,
          candidate.id.device, consumed.status().message()));
    }
    result.share_id = ShareId(claim, results_[key.claim].size());
    undo.capacity_entry_existed = usage_.TakeCapacity(candidate.id, *consumed);
    undo.capacity_inserted = true;
    undo.consumed_capacity = *consumed;
    result.consumed_capacity = std::move(*consumed);
  }
  results_[key.claim].push_back(std::move(result));
  undo.result_added = true;
  return true;
}

// allocateOne: device `device` of request `key`, trying candidates from
// index `from` on (a request's later devices come after its earlier ones).
Result<Outcome> Search::AllocateOne(RequestKey key, std::size_t device, bool in_subrequest,
                                    std::size_t from) {
  if (key.claim >= claims_.size()) return Outcome::kDone;
  const ResourceClaim& claim = claims_[key.claim];
  if (key.request >= claim.spec.requests.size()) {
    Result<Outcome> done = AllocateOne(RequestKey{key.claim + 1, 0, 0}, 0, false, 0);
    if (done.ok() && *done == Outcome::kOverLimit) return Outcome::kFailed;
    return done;
  }
  const RequestData& data = prepared_.requests.at(key);
  if (!in_subrequest && data.has_subrequests) {
    bool all_over_limit = true;
    for (std::size_t s = 0; prepared_.requests.contains(RequestKey{key.claim, key.request, s});
         ++s) {
      Result<Outcome> done = AllocateOne(RequestKey{key.claim, key.request, s}, device, true, 0);
      if (done.ok() && *done == Outcome::kOverLimit) continue;
      all_over_limit = false;
      if (!done.ok() || *done == Outcome::kDone) return done;
    }
    return all_over_limit ? Outcome::kOverLimit : Outcome::kFailed;
  }
  const DeviceSelection& selection = *data.selection;
  const bool all = selection.allocation_mode == AllocationMode::kAll;
  if (all && data.all_devices.empty()) return Outcome::kFailed;
  if (device >= data.num_devices)
    return AllocateOne(RequestKey{key.claim, key.request + 1, 0}, 0, false, 0);
  const std::size_t remaining = data.num_devices - device;
  const std::size_t available = kAllocationResultsMaxSize - results_[key.claim].size();
  if (remaining > available) return Outcome::kOverLimit;

  const std::string base = data.has_subrequests ? data.parent_name : data.name;
  const std::string sub = data.has_subrequests ? data.name : std::string();
  if (all) {
    const CandidateDevice candidate = data.all_devices[device];
    Undo undo;
    Result<bool> taken = AllocateDevice(key, candidate, true, undo);
    if (!taken.ok()) return taken.status();
    if (!*taken) return Outcome::kFailed;
    Result<Outcome> done = AllocateOne(key, device + 1, in_subrequest, 0);
    if (!done.ok() || *done != Outcome::kDone) Rollback(key, candidate, base, sub, undo);
    return done;
  }
  for (std::size_t i = from; i < candidates_.size(); ++i) {
    const CandidateDevice& candidate = candidates_[i];
    if (selection.admin_access && usage_.AllocatingForClaim(candidate.id, key.claim)) continue;
    if (!selection.admin_access && usage_.InUse(candidate.id)) continue;
    Result<bool> selectable = matcher_.Selectable(key, data, candidate);
    if (!selectable.ok()) return selectable.status();
    if (!*selectable) continue;
    Result<bool> fits = usage_.FitsCapacity(data.selection->capacity_requests, candidate);
    if (!fits.ok()) {
      return Status::InvalidArgument(
          fmt::format("claim {}/{}, request {}: checking capacity for device {}/{}/{}: {}",
                      claim.claim_namespace, claim.name, data.name, candidate.id.driver,
                      candidate.id.pool, candidate.id.device, fits.status().message()));
    }
    if (!*fits) continue;
    Undo undo;
    Result<bool> taken = AllocateDevice(key, candidate, false, undo);
    if (!taken.ok()) return taken.status();
    if (!*taken) continue;
    Result<Outcome> done = AllocateOne(key, device + 1, in_subrequest, i + 1);
    if (done.ok() && *done == Outcome::kDone) return done;
    Rollback(key, candidate, base, sub, undo);
    if (!done.ok() || *done == Outcome::kOverLimit) return done;
  }
  return Outcome::kFailed;
}

}  // namespace devshare::dra::allocator
