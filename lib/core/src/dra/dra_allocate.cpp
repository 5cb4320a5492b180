// Allocating devices to ResourceClaims on one node as kube-scheduler v1.37
// does (devshare/dra_allocate.hpp). The structure follows the allocator it
// reproduces — validate the requests, then a depth-first search over
// (claim, request, subrequest, device) that takes the first device that
// fits and undoes it when what follows fails — so that each step can be
// checked against it.
#include "devshare/dra_allocate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>

#include "devshare/dra_cel.hpp"
#include "devshare/dra_pools.hpp"

namespace devshare::dra {

// ---------------------------------------------------------------------------
// What allocated claims hold

void AllocatedState::Add(const Allocation& allocation) {
  for (const AllocatedDevice& d : allocation.devices) {
    if (d.admin_access) continue;
    DeviceId id{d.driver, d.pool, d.device};
    if (d.share_id) {
      shares.emplace(id, *d.share_id);
      if (!d.consumed_capacity.empty()) {
        std::map<std::string, Quantity>& consumed = consumed_capacity[id];
        for (const auto& [name, q] : d.consumed_capacity) consumed[name].milli += q.milli;
      }
      continue;
    }
    devices.insert(std::move(id));
  }
}

void AllocatedState::Remove(const Allocation& allocation) {
  for (const AllocatedDevice& d : allocation.devices) {
    if (d.admin_access) continue;
    DeviceId id{d.driver, d.pool, d.device};
    if (!d.share_id) {
      devices.erase(id);
      continue;
    }
    shares.erase({id, *d.share_id});
    auto consumed = consumed_capacity.find(id);
    if (consumed == consumed_capacity.end()) continue;
    for (const auto& [name, q] : d.consumed_capacity) {
      auto c = consumed->second.find(name);
      if (c == consumed->second.end()) continue;
      c->second.milli -= q.milli;
      if (c->second.milli == 0) consumed->second.erase(c);
    }
    if (consumed->second.empty()) consumed_capacity.erase(consumed);
  }
}

const Result<Selector>& SelectorCache::Compile(std::string_view expression) {
  auto compiled = compiled_.find(expression);
  if (compiled == compiled_.end())
    compiled = compiled_.emplace(std::string(expression), CompileSelector(expression)).first;
  return compiled->second;
}

bool AllocatedState::Shared(const DeviceId& id) const {
  if (consumed_capacity.contains(id)) return true;
  auto share = shares.lower_bound({id, std::string()});
  return share != shares.end() && share->first == id;
}

bool AllocatedState::Holds(const DeviceId& id) const { return devices.contains(id) || Shared(id); }

namespace {

constexpr std::size_t kAllocationResultsMaxSize = 32;  // resourceapi.AllocationResultsMaxSize
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
__extension__ using i128 = __int128;

using Capacities = std::map<std::string, Quantity>;

// ---------------------------------------------------------------------------
// Consumable capacity

// Quantity.Value(): whole units, rounded up.
std::int64_t WholeRoundedUp(Quantity q) { return q.milli / 1000 + (q.milli % 1000 > 0 ? 1 : 0); }

bool UseMilli(const CapacityRange& range, bool fractional) {
  return fractional && (!range.step || range.step->milli >= 1);
}

Result<Quantity> NotRepresentable(std::string_view what, Quantity requested) {
  return Status::InvalidArgument(
      fmt::format("capacity request cannot be represented in the device's range arithmetic: {}",
                  fmt::format(fmt::runtime(what), FormatQuantity(requested))));
}

// The request rounded up to the range's next step from its minimum.
Result<Quantity> RoundUpRange(Quantity requested, const CapacityRange& range, bool fractional) {
  const Quantity min = *range.min;
  if (requested < min) return min;
  if (!range.step) return requested;
  if (UseMilli(range, fractional)) {
    const i128 added = static_cast<i128>(requested.milli) - min.milli;
    const std::int64_t step = range.step->milli;
    i128 n = added / step + (added % step != 0 ? 1 : 0);
    if (n > (static_cast<i128>(kInt64Max) - min.milli) / step)
      return NotRepresentable(
          "rounding request {} up to the next step passes the milli-value range", requested);
    return Quantity{static_cast<std::int64_t>(min.milli + step * n)};
  }
  const std::int64_t requested_whole = WholeRoundedUp(requested);
  const std::int64_t step = WholeRoundedUp(*range.step);
  const std::int64_t min_whole = WholeRoundedUp(min);
  if (step <= 0) return Status::InvalidArgument("capacity range step is not positive");
  const i128 added = static_cast<i128>(requested_whole) - min_whole;
  const i128 n = added / step + (added % step != 0 ? 1 : 0);
  if (min_whole >= 0 && n > (kInt64Max - min_whole) / step)
    return NotRepresentable("rounding request {} up to the next step passes MaxInt64", requested);
  const i128 value = static_cast<i128>(min_whole) + step * n;
  if (value > kInt64Max / 1000 || value < std::numeric_limits<std::int64_t>::min() / 1000)
    return NotRepresentable("request {} rounds up beyond what devshare holds exactly", requested);
  return Quantity{static_cast<std::int64_t>(value) * 1000};
}

// What a request of `requested` (nullopt: none named) consumes of a capacity.
Result<Quantity> ConsumedBy(const std::optional<Quantity>& requested, const Capacity& capacity,
                            bool fractional) {
  const std::optional<CapacityRequestPolicy>& policy = capacity.request_policy;
  if (!requested) return policy && policy->default_value ? *policy->default_value : capacity.value;
  if (!policy) return *requested;
  if (policy->valid_range && policy->valid_range->min)
    return RoundUpRange(*requested, *policy->valid_range, fractional);
  for (Quantity valid : policy->valid_values) {
    if (*requested <= valid) return valid;
  }
  return *requested;
}

bool ViolatesPolicy(Quantity value, const std::optional<CapacityRequestPolicy>& policy,
                    bool fractional) {
  if (!policy) return false;
  if (policy->default_value && value == *policy->default_value) return false;
  if (policy->valid_range) {
    const CapacityRange& range = *policy->valid_range;
    if (range.max && value > *range.max) return true;
    if (range.step) {
      const Quantity min = range.min.value_or(Quantity{});
      const bool milli = UseMilli(range, fractional);
      const std::int64_t v = milli ? value.milli : WholeRoundedUp(value);
      const std::int64_t step = milli ? range.step->milli : WholeRoundedUp(*range.step);
      const std::int64_t m = milli ? min.milli : WholeRoundedUp(min);
      if (step == 0) return true;
      if ((static_cast<i128>(v) - m) % step != 0) return true;
    }
    return false;
  }
  if (!policy->valid_values.empty()) {
    return std::find(policy->valid_values.begin(), policy->valid_values.end(), value) ==
           policy->valid_values.end();
  }
  return false;
}

std::optional<Quantity> FindRequest(const Capacities& requests, const std::string& name) {
  auto it = requests.find(name);
  return it == requests.end() ? std::nullopt : std::optional<Quantity>(it->second);
}

}  // namespace

std::map<std::string, Capacities> CountersLeft(const GatheredPool& pool,
                                               const AllocatedState& allocated) {
  std::map<std::string, Capacities> sets;
  for (const auto& [name, set] : pool.counter_sets) sets[name] = set->counters;
  for (const auto* group : {&pool.device_slices, &pool.device_slices_elsewhere}) {
    for (const ResourceSlice* slice : *group) {
      for (const Device& device : slice->devices) {
        if (!allocated.Holds(DeviceId{slice->driver, slice->pool.name, device.name})) continue;
        for (const CounterConsumption& c : device.consumes_counters) {
          Capacities& available = sets[c.counter_set];
          for (const auto& [name, q] : c.counters) {
            auto counter = available.find(name);
            if (counter != available.end()) counter->second.milli -= q.milli;
          }
        }
      }
    }
  }
  return sets;
}

Result<Capacities> ConsumedCapacity(const Capacities& requests, const Device& device,
                                    bool fractional) {
  Capacities consumed;
  for (const auto& [name, capacity] : device.capacity) {
    Result<Quantity> c = ConsumedBy(FindRequest(requests, name), capacity, fractional);
    if (!c.ok())
      return Status::InvalidArgument(
          fmt::format("capacity \"{}\": {}", name, c.status().message()));
    consumed[name] = *c;
  }
  return consumed;
}

double ConsumedShare(const Device& device, const Capacities* consumed, const Capacities* extra) {
  double share = 0;
  for (const auto& [name, capacity] : device.capacity) {
    if (capacity.value.milli <= 0) continue;
    std::int64_t taken = 0;
    for (const Capacities* c : {consumed, extra}) {
      if (c == nullptr) continue;
      if (auto q = c->find(name); q != c->end()) taken += q->second.milli;
    }
    share = std::max(share, static_cast<double>(taken) / static_cast<double>(capacity.value.milli));
  }
  return share;
}

namespace {

// Whether the request fits the device's capacity on top of what is
// consumed already (`current`) and by allocations in progress
// (`allocating`, may be null). Errors name the capacity.
Result<bool> RequestFitsCapacity(const Capacities& current, const Capacities& requests,
                                 const Device& device, const Capacities* allocating,
                                 bool fractional) {
  for (const auto& [name, q] : requests) {
    if (!device.capacity.contains(name)) return false;
  }
  Result<Capacities> consumed = ConsumedCapacity(requests, device, fractional);
  if (!consumed.ok()) return consumed.status();
  for (const auto& [name, c] : *consumed) {
    if (c.milli < 0)
      return Status::InvalidArgument(
          fmt::format("capacity \"{}\": capacity value is negative", name));
  }
  for (const auto& [name, capacity] : device.capacity) {
    const Quantity c = consumed->at(name);
    if (ViolatesPolicy(c, capacity.request_policy, fractional)) return false;
    i128 total = c.milli;
    if (auto it = current.find(name); it != current.end()) total += it->second.milli;
    if (allocating != nullptr) {
      if (auto it = allocating->find(name); it != allocating->end()) total += it->second.milli;
    }
    if (total > capacity.value.milli) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Taints, attributes, constraints

bool Tolerates(const DeviceToleration& t, const DeviceTaint& taint) {
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == taint.value;
  return t.op == "Exists";
}

// Whether the taint keeps the device from a request with `tolerations`
// (NoSchedule and NoExecute do, None does not).
bool TaintPrevents(const DeviceTaint& taint, const std::vector<DeviceToleration>& tolerations) {
  if (taint.effect != "NoExecute" && taint.effect != "NoSchedule") return false;
  return std::none_of(tolerations.begin(), tolerations.end(),
                      [&](const DeviceToleration& t) { return Tolerates(t, taint); });
}

bool TaintPreventsAllocation(const Device& device,
                             const std::vector<DeviceToleration>& tolerations) {
  return std::any_of(device.taints.begin(), device.taints.end(),
                     [&](const DeviceTaint& taint) { return TaintPrevents(taint, tolerations); });
}

// The attribute a constraint names: by its full name, or by the name within
// the device's own driver domain.
const AttributeValue* LookupAttribute(const Device& device, const DeviceId& id,
                                      const std::string& name) {
  if (auto it = device.attributes.find(name); it != device.attributes.end()) return &it->second;
  const std::size_t slash = name.find('/');
  if (slash == std::string::npos || name.compare(0, slash, id.driver) != 0) return nullptr;
  auto it = device.attributes.find(name.substr(slash + 1));
  return it == device.attributes.end() ? nullptr : &it->second;
}

// Whether two attribute values are "the same" for a constraint: a scalar of
// the same kind and value. List values never are.
bool SameScalar(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index() || a.index() > 3) return false;
  return a == b;
}

class Constraint {
 public:
  Constraint(std::vector<std::string> requests, std::string attribute, bool distinct)
      : requests_(requests.begin(), requests.end()),
        attribute_(std::move(attribute)),
        distinct_(distinct) {}

  bool Add(const std::string& request, const std::string& sub, const Device& device,
           const DeviceId& id) {
    if (!AppliesTo(request, sub)) return true;
    const AttributeValue* value = LookupAttribute(device, id, attribute_);
    if (value == nullptr) return false;
    if (distinct_) {
      if (value->index() > 3) return false;  // a list: no distinct scalar to compare
      for (const AttributeValue* seen : values_) {
        if (SameScalar(*value, *seen)) return false;
      }
      values_.push_back(value);
      return true;
    }
    if (matched_ == 0) {
      first_ = value;
      matched_ = 1;
      return true;
    }
    if (!SameScalar(*value, *first_)) return false;
    ++matched_;
    return true;
  }

  void Remove(const std::string& request, const std::string& sub) {
    if (!AppliesTo(request, sub)) return;
    if (distinct_) {
      values_.pop_back();
    } else {
      --matched_;
    }
  }

 private:
  bool AppliesTo(const std::string& request, const std::string& sub) const {
    if (requests_.empty()) return true;
    if (requests_.contains(request)) return true;
    return !sub.empty() && requests_.contains(request + "/" + sub);
  }

  std::set<std::string> requests_;  // empty: every request
  std::string attribute_;
  bool distinct_;
  const AttributeValue* first_ = nullptr;  // matchAttribute
  int matched_ = 0;
  std::vector<const AttributeValue*> values_;  // distinctAttribute
};

// ---------------------------------------------------------------------------
// The search

struct CandidateDevice {
  const GatheredPool* pool;
  const ResourceSlice* slice;
  std::size_t index;
  DeviceId id;
  const Device& device() const { return slice->devices[index]; }
};

struct RequestKey {
  std::size_t claim = 0;
  std::size_t request = 0;
  std::size_t sub = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>
  friend auto operator<=>(const RequestKey&, const RequestKey&) = default;
};

struct RequestData {
  const DeviceSelection* selection = nullptr;
  std::string name;         // the request's, or the subrequest's
  std::string parent_name;  // the request's, for a subrequest
  const DeviceClass* device_class = nullptr;
  std::size_t num_devices = 0;
  std::vector<CandidateDevice> all_devices;  // allocation mode All
  bool has_subrequests = false;
};

struct DeviceResult {
  std::string request;  // full name: "request" or "request/sub"
  CandidateDevice candidate;
  bool admin_access = false;
  const DeviceSelection* selection = nullptr;
  std::optional<std::string> share_id;
  Capacities consumed_capacity;
};

// How a step of the search ends: every claim allocated, no way found, or
// a claim would need more than 32 results (which firstAvailable skips).
enum class Outcome { kFailed, kDone, kOverLimit };

// The share ID of a claim's `index`th result: a UUID-shaped hash of the
// claim's UID, stable across runs.
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

using Allocations = std::optional<std::vector<Allocation>>;

class Search {
 public:
  Search(const std::vector<ResourceClaim>& claims, const Node& node,
         const std::vector<GatheredPool>& pools, const DeviceClasses& classes,
         const AllocatedState& allocated, const AllocatorOptions& options)
      : claims_(claims),
        node_(node),
        classes_(classes),
        allocated_(allocated),
        options_(options),
        selectors_(options.selector_cache != nullptr ? *options.selector_cache : own_selectors_),
        pools_(pools),
        constraints_(claims.size()),
        results_(claims.size()) {}

  Result<Allocations> Run() {
    if (Status s = Prepare(); !s.ok()) return s;
    Order();
    Result<Outcome> done = AllocateOne(RequestKey{}, 0, false, 0);
    if (!done.ok()) return done.status();
    if (*done == Outcome::kOverLimit)
      return Status::InvalidArgument("allocation max size exceeded");
    if (*done == Outcome::kFailed) {
      for (const GatheredPool& pool : pools_) {
        if (pool.invalid) return Status::InvalidArgument("invalid resource pools were encountered");
      }
      return Allocations();
    }
    std::vector<Allocation> allocations(claims_.size());
    for (std::size_t c = 0; c < claims_.size(); ++c) {
      for (const DeviceResult& r : results_[c]) {
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
      Result<std::optional<NodeSelector>> selector = NodeSelectorFor(results_[c]);
      if (!selector.ok()) return selector.status();
      allocations[c].node_selector = *selector;
    }
    return Allocations(std::move(allocations));
  }

  Result<NodeExplanation> Explain() {
    if (Status s = Prepare(); !s.ok()) return s;
    Order();
    NodeExplanation out;
    for (const GatheredPool& pool : pools_) {
      if (pool.incomplete)
        out.pools.push_back(fmt::format("{}/{}: incomplete (its slices are being published)",
                                        pool.driver, pool.pool));
      if (pool.invalid)
        out.pools.push_back(
            fmt::format("{}/{}: invalid: {}", pool.driver, pool.pool, pool.invalid_reason));
    }
    for (const auto& [key, data] : requests_) {
      const std::string request =
          data.has_subrequests ? data.parent_name + "/" + data.name : data.name;
      for (const CandidateDevice& candidate : candidates_) {
        std::string why = WhyNot(key, data, candidate);
        out.devices.push_back(DeviceVerdict{candidate.id, request, why.empty(), std::move(why)});
      }
    }
    return out;
  }

 private:
  // Empty when the device can take the request on its own.
  std::string WhyNot(const RequestKey& key, const RequestData& data,
                     const CandidateDevice& candidate) {
    const DeviceSelection& selection = *data.selection;
    const Device& device = candidate.device();
    if (!selection.admin_access && InUse(candidate.id)) return "held by an allocated claim";
    Result<bool> selectable = Selectable(key, data, candidate);
    if (!selectable.ok()) return std::string(selectable.status().message());
    if (!*selectable) {
      return candidate.slice->per_device_node_selection
                 ? "not selected by the class's or the request's selectors, or not for this node"
                 : "not selected by the class's or the request's selectors";
    }
    Result<bool> fits = FitsCapacity(data, candidate);
    if (!fits.ok()) return std::string(fits.status().message());
    if (!*fits) return CapacityShortfall(selection, candidate);
    for (const DeviceTaint& taint : device.taints) {
      if (TaintPrevents(taint, selection.tolerations))
        return fmt::format("taint {}={}:{} not tolerated", taint.key, taint.value, taint.effect);
    }
    const bool skip_counters = device.allow_multiple_allocations && CapacityInUse(candidate.id);
    if (!skip_counters && !device.consumes_counters.empty()) {
      if (!ReserveCounters(candidate))
        return "its shared counters are used up by the allocated devices of its pool";
      ChangeConsumedCounters(candidate, -1);
    }
    return {};
  }

  // Which capacity the request does not fit, in words.
  std::string CapacityShortfall(const DeviceSelection& selection,
                                const CandidateDevice& candidate) const {
    const Device& device = candidate.device();
    for (const auto& [name, q] : selection.capacity_requests) {
      if (!device.capacity.contains(name)) return fmt::format("no capacity {}", name);
    }
    auto current = allocated_.consumed_capacity.find(candidate.id);
    for (const auto& [name, capacity] : device.capacity) {
      Result<Quantity> c = ConsumedBy(FindRequest(selection.capacity_requests, name), capacity,
                                      options_.fractional_capacity_range);
      if (!c.ok()) return std::string(c.status().message());
      if (ViolatesPolicy(*c, capacity.request_policy, options_.fractional_capacity_range))
        return fmt::format("{}: {} is outside the device's request policy", name,
                           FormatQuantity(*c));
      Quantity used{};
      if (current != allocated_.consumed_capacity.end()) {
        if (auto u = current->second.find(name); u != current->second.end()) used = u->second;
      }
      if (c->milli > capacity.value.milli - used.milli) {
        return fmt::format("{}: needs {}, {} of {} free", name, FormatQuantity(*c),
                           FormatQuantity(Quantity{capacity.value.milli - used.milli}),
                           FormatQuantity(capacity.value));
      }
    }
    return "capacity";
  }

  // validateDeviceRequest for every request, and the claims' constraints.
  Status Prepare() {
    for (std::size_t c = 0; c < claims_.size(); ++c) {
      const ResourceClaim& claim = claims_[c];
      std::size_t min_devices_per_claim = 0;
      for (std::size_t r = 0; r < claim.spec.requests.size(); ++r) {
        const DeviceRequest& request = claim.spec.requests[r];
        std::size_t min_devices = 0;
        if (!request.first_available.empty()) {
          min_devices = std::numeric_limits<std::size_t>::max();
          for (std::size_t s = 0; s < request.first_available.size(); ++s) {
            const DeviceSubRequest& sub = request.first_available[s];
            Result<RequestData> data =
                Validate(RequestKey{c, r, s}, sub.selection, sub.name, request.name);
            if (!data.ok()) return data.status();
            min_devices = std::min(min_devices, data->num_devices);
            requests_[RequestKey{c, r, s}] = std::move(*data);
          }
        } else if (request.exactly) {
          Result<RequestData> data =
              Validate(RequestKey{c, r, 0}, *request.exactly, request.name, "");
          if (!data.ok()) return data.status();
          min_devices = data->num_devices;
          requests_[RequestKey{c, r, 0}] = std::move(*data);
        }
        if (min_devices > kAllocationResultsMaxSize - min_devices_per_claim) {
          return Status::InvalidArgument(fmt::format(
              "claim {}/{}, request {}: adding {} devices exceeds the claim limit of {}, with {} "
              "already accounted for",
              claim.claim_namespace, claim.name, request.name, min_devices,
              kAllocationResultsMaxSize, min_devices_per_claim));
        }
        min_devices_per_claim += min_devices;
      }
      for (const DeviceConstraint& constraint : claim.spec.constraints) {
        if (constraint.match_attribute) {
          constraints_[c].emplace_back(constraint.requests, *constraint.match_attribute, false);
        } else if (constraint.distinct_attribute) {
          constraints_[c].emplace_back(constraint.requests, *constraint.distinct_attribute, true);
        } else {
          return Status::InvalidArgument(
              fmt::format("claim {}/{}, constraint #{}: empty constraint (unsupported constraint "
                          "type?)",
                          claim.claim_namespace, claim.name, constraints_[c].size()));
        }
      }
    }
    return Status();
  }

  Result<RequestData> Validate(const RequestKey& key, const DeviceSelection& selection,
                               const std::string& name, const std::string& parent) {
    const ResourceClaim& claim = claims_[key.claim];
    RequestData data;
    data.selection = &selection;
    data.name = name;
    data.parent_name = parent;
    data.has_subrequests = !parent.empty();
    auto found = classes_.find(selection.device_class_name);
    if (found == classes_.end()) {
      return Status::NotFound(
          fmt::format("claim {}/{}, request {}: could not retrieve device class {}: not found",
                      claim.claim_namespace, claim.name, name, selection.device_class_name));
    }
    data.device_class = &found->second;
    if (selection.allocation_mode == AllocationMode::kExactCount) {
      data.num_devices = static_cast<std::size_t>(selection.count);
      return data;
    }
    for (const GatheredPool& pool : pools_) {
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
          Result<bool> selectable = Selectable(key, data, candidate);
          if (!selectable.ok()) return selectable.status();
          if (!*selectable) continue;
          Result<bool> fits =
              RequestFitsCapacity({}, selection.capacity_requests, candidate.device(), nullptr,
                                  options_.fractional_capacity_range);
          if (!fits.ok()) {
            return Status::InvalidArgument(
                fmt::format("claim {}/{}, request {}: checking capacity for device {}: {}",
                            claim.claim_namespace, claim.name, name, candidate.device().name,
                            fits.status().message()));
          }
          if (*fits) data.all_devices.push_back(std::move(candidate));
        }
      }
    }
    data.num_devices = data.all_devices.size();
    return data;
  }

  // The class's and the request's selectors, and per-device node selection.
  Result<bool> Selectable(const RequestKey& key, const RequestData& data,
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

  Result<bool> SelectorsMatch(const RequestKey& key, const CandidateDevice& candidate,
                              const DeviceClass* device_class,
                              const std::vector<std::string>& selectors) {
    const ResourceClaim& claim = claims_[key.claim];
    // Named in errors only: not formatted on the way that matches.
    auto owner = [&] {
      return device_class != nullptr
                 ? fmt::format("class {}", device_class->name)
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

  bool InUse(const DeviceId& id) const {
    if (allocated_.devices.contains(id)) return true;
    auto it = allocating_.find(id);
    return it != allocating_.end() && !it->second.empty();
  }
  bool AllocatingForClaim(const DeviceId& id, std::size_t claim) const {
    auto it = allocating_.find(id);
    return it != allocating_.end() && it->second.contains(claim);
  }
  bool CapacityInUse(const DeviceId& id) const {
    return allocated_.Shared(id) || allocating_capacity_.contains(id);
  }

  Result<bool> FitsCapacity(const RequestData& data, const CandidateDevice& candidate) const {
    static const Capacities kNone;
    auto current = allocated_.consumed_capacity.find(candidate.id);
    auto allocating = allocating_capacity_.find(candidate.id);
    return RequestFitsCapacity(
        current == allocated_.consumed_capacity.end() ? kNone : current->second,
        data.selection->capacity_requests, candidate.device(),
        allocating == allocating_capacity_.end() ? nullptr : &allocating->second,
        options_.fractional_capacity_range);
  }

  // ---- shared counters (partitionable devices)
  using CounterSets = std::map<std::string, Capacities>;

  const CounterSets& Available(const GatheredPool& pool) {
    const std::pair<std::string, std::string> key{pool.driver, pool.pool};
    auto it = available_.find(key);
    if (it != available_.end()) return it->second;
    return available_.emplace(key, CountersLeft(pool, allocated_)).first->second;
  }

  void ChangeConsumedCounters(const CandidateDevice& candidate, int sign) {
    CounterSets& consumed = consumed_counters_[{candidate.pool->driver, candidate.pool->pool}];
    for (const CounterConsumption& c : candidate.device().consumes_counters) {
      Capacities& set = consumed[c.counter_set];
      for (const auto& [name, q] : c.counters) set[name].milli += sign * q.milli;
    }
  }

  bool ReserveCounters(const CandidateDevice& candidate) {
    const CounterSets& available = Available(*candidate.pool);
    ChangeConsumedCounters(candidate, +1);
    const CounterSets& consumed =
        consumed_counters_[{candidate.pool->driver, candidate.pool->pool}];
    for (const auto& [set_name, counters] : available) {
      auto used = consumed.find(set_name);
      for (const auto& [name, q] : counters) {
        Quantity taken{};
        if (used != consumed.end()) {
          if (auto u = used->second.find(name); u != used->second.end()) taken = u->second;
        }
        if (q < taken) {
          ChangeConsumedCounters(candidate, -1);
          return false;
        }
      }
    }
    return true;
  }

  // ---- one device
  struct Undo {
    bool counters_reserved = false;
    std::size_t constraints_added = 0;
    bool device_marked = false;
    bool capacity_inserted = false;
    bool capacity_entry_existed = false;
    Capacities consumed_capacity;
    bool result_added = false;
    std::size_t previous_results = 0;
  };

  void Rollback(const RequestKey& key, const CandidateDevice& candidate, const std::string& base,
                const std::string& sub, const Undo& undo) {
    if (undo.result_added) results_[key.claim].resize(undo.previous_results);
    if (undo.capacity_inserted) {
      // An entry that existed before stays, empty or not (it marks the
      // device's capacity as in use); a new one goes once it is all zero.
      auto it = allocating_capacity_.find(candidate.id);
      bool empty = true;
      for (const auto& [name, q] : undo.consumed_capacity) it->second[name].milli -= q.milli;
      for (const auto& [name, q] : it->second) empty = empty && q.milli == 0;
      if (empty && !undo.capacity_entry_existed) allocating_capacity_.erase(it);
    }
    if (undo.device_marked) allocating_[candidate.id].erase(key.claim);
    for (std::size_t i = undo.constraints_added; i-- > 0;)
      constraints_[key.claim][i].Remove(base, sub);
    if (undo.counters_reserved) ChangeConsumedCounters(candidate, -1);
  }

  // allocateDevice: false when the device cannot be taken; `undo` then
  // describes what to roll back once the search moves on.
  Result<bool> AllocateDevice(const RequestKey& key, const CandidateDevice& candidate, bool must,
                              Undo& undo) {
    const ResourceClaim& claim = claims_[key.claim];
    const RequestData& data = requests_.at(key);
    const DeviceSelection& selection = *data.selection;
    const Device& device = candidate.device();
    const bool multiple = device.allow_multiple_allocations;
    if (!multiple && selection.admin_access && AllocatingForClaim(candidate.id, key.claim))
      return false;
    if (!selection.admin_access && InUse(candidate.id)) return false;
    const bool skip_counters = multiple && CapacityInUse(candidate.id);
    if (!skip_counters && !device.consumes_counters.empty()) {
      if (!ReserveCounters(candidate)) return false;
      undo.counters_reserved = true;
    }
    const std::string base = data.has_subrequests ? data.parent_name : data.name;
    const std::string sub = data.has_subrequests ? data.name : std::string();
    undo.previous_results = results_[key.claim].size();
    if (TaintPreventsAllocation(device, selection.tolerations)) {
      Rollback(key, candidate, base, sub, undo);
      return false;
    }
    for (Constraint& constraint : constraints_[key.claim]) {
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
      allocating_[candidate.id].insert(key.claim);
      undo.device_marked = true;
    }
    DeviceResult result{data.has_subrequests ? data.parent_name + "/" + data.name : data.name,
                        candidate,
                        selection.admin_access,
                        &selection,
                        std::nullopt,
                        {}};
    Result<bool> fits = FitsCapacity(data, candidate);
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
          ConsumedCapacity(selection.capacity_requests, device, options_.fractional_capacity_range);
      if (!consumed.ok()) {
        Rollback(key, candidate, base, sub, undo);
        return Status::InvalidArgument(fmt::format(
            "claim {}/{}, request {}: computing consumed capacity for device {}/{}/{}: {}",
            claim.claim_namespace, claim.name, data.name, candidate.id.driver, candidate.id.pool,
            candidate.id.device, consumed.status().message()));
      }
      result.share_id = ShareId(claim, results_[key.claim].size());
      undo.capacity_entry_existed = allocating_capacity_.contains(candidate.id);
      Capacities& allocating = allocating_capacity_[candidate.id];
      for (const auto& [name, q] : *consumed) allocating[name].milli += q.milli;
      undo.capacity_inserted = true;
      undo.consumed_capacity = *consumed;
      result.consumed_capacity = std::move(*consumed);
    }
    results_[key.claim].push_back(std::move(result));
    undo.result_added = true;
    return true;
  }

  // The devices a request may take, in the order they are tried: upstream's
  // (pool, slice, device; incomplete and invalid pools left out), or by how
  // much of the device's capacity the allocated claims consume (as the call
  // starts), most first (binpack) or least first (spread), upstream's order
  // breaking ties. Only the order changes: the search stays exhaustive, so
  // whether the claims fit does not depend on it.
  void Order() {
    for (const GatheredPool& pool : pools_) {
      if (pool.incomplete || pool.invalid) continue;
      for (const ResourceSlice* slice : pool.device_slices) {
        for (std::size_t d = 0; d < slice->devices.size(); ++d) {
          candidates_.push_back(CandidateDevice{
              &pool, slice, d, DeviceId{pool.driver, pool.pool, slice->devices[d].name}});
        }
      }
    }
    if (options_.device_order == DeviceOrder::kUpstream) return;
    std::vector<double> used(candidates_.size());
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      switch (options_.device_order) {
        case DeviceOrder::kMostUsedFirst:
          used[i] = UsedShare(candidates_[i]);
          break;
        case DeviceOrder::kLeastUsedFirst:
          used[i] = -UsedShare(candidates_[i]);
          break;
        case DeviceOrder::kLowestCostFirst:
          used[i] = options_.device_cost
                        ? -options_.device_cost(candidates_[i].id, candidates_[i].device())
                        : 0;
          break;
        case DeviceOrder::kUpstream:
          break;
      }
    }
    std::vector<std::size_t> order(candidates_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return used[a] > used[b]; });
    std::vector<CandidateDevice> sorted;
    sorted.reserve(order.size());
    for (std::size_t i : order) sorted.push_back(candidates_[i]);
    candidates_ = std::move(sorted);
  }

  // The largest share of any of the device's capacities that allocated
  // claims consume (0 for a device not shared).
  double UsedShare(const CandidateDevice& candidate) const {
    auto consumed = allocated_.consumed_capacity.find(candidate.id);
    if (consumed == allocated_.consumed_capacity.end()) return 0;
    return ConsumedShare(candidate.device(), &consumed->second);
  }

  // allocateOne: device `device` of request `key`, trying candidates from
  // index `from` on (a request's later devices come after its earlier ones).
  Result<Outcome> AllocateOne(RequestKey key, std::size_t device, bool in_subrequest,
                              std::size_t from) {
    if (key.claim >= claims_.size()) return Outcome::kDone;
    const ResourceClaim& claim = claims_[key.claim];
    if (key.request >= claim.spec.requests.size()) {
      Result<Outcome> done = AllocateOne(RequestKey{key.claim + 1, 0, 0}, 0, false, 0);
      if (done.ok() && *done == Outcome::kOverLimit) return Outcome::kFailed;
      return done;
    }
    RequestData& data = requests_.at(key);
    if (!in_subrequest && data.has_subrequests) {
      bool all_over_limit = true;
      for (std::size_t s = 0; requests_.contains(RequestKey{key.claim, key.request, s}); ++s) {
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
      if (selection.admin_access && AllocatingForClaim(candidate.id, key.claim)) continue;
      if (!selection.admin_access && InUse(candidate.id)) continue;
      Result<bool> selectable = Selectable(key, data, candidate);
      if (!selectable.ok()) return selectable.status();
      if (!*selectable) continue;
      Result<bool> fits = FitsCapacity(data, candidate);
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

  // createNodeSelector: the node itself when a device is local to it, else
  // the union of the single-term selectors of the slices used.
  Result<std::optional<NodeSelector>> NodeSelectorFor(const std::vector<DeviceResult>& results) {
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
        return std::optional<NodeSelector>(NodeSelector{{NodeSelectorTerm{
            {}, {NodeSelectorRequirement{"metadata.name", "In", {node_.name}}}}}});
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

  const std::vector<ResourceClaim>& claims_;
  const Node& node_;
  const DeviceClasses& classes_;
  const AllocatedState& allocated_;
  const AllocatorOptions& options_;
  SelectorCache own_selectors_;
  SelectorCache& selectors_;
  const std::vector<GatheredPool>& pools_;
  std::vector<CandidateDevice> candidates_;  // Order()
  std::vector<std::vector<Constraint>> constraints_;
  std::map<RequestKey, RequestData> requests_;
  std::map<std::pair<DeviceId, RequestKey>, bool> matches_;
  std::map<DeviceId, std::set<std::size_t>> allocating_;  // device -> claims taking it whole
  std::map<DeviceId, Capacities> allocating_capacity_;
  std::map<std::pair<std::string, std::string>, CounterSets> available_;
  std::map<std::pair<std::string, std::string>, CounterSets> consumed_counters_;
  std::vector<std::vector<DeviceResult>> results_;
};

}  // namespace

Result<NodeExplanation> ExplainNode(const ResourceClaim& claim, const Node& node,
                                    const std::vector<ResourceSlice>& slices,
                                    const DeviceClasses& classes, const AllocatedState& allocated,
                                    const AllocatorOptions& options) {
  return ExplainNode(claim, node, GatherPools(slices, node), classes, allocated, options);
}

Result<NodeExplanation> ExplainNode(const ResourceClaim& claim, const Node& node,
                                    const std::vector<GatheredPool>& pools,
                                    const DeviceClasses& classes, const AllocatedState& allocated,
                                    const AllocatorOptions& options) {
  const std::vector<ResourceClaim> claims = {claim};
  return Search(claims, node, pools, classes, allocated, options).Explain();
}

Result<std::optional<std::vector<Allocation>>> Allocate(const std::vector<ResourceClaim>& claims,
                                                        const Node& node,
                                                        const std::vector<ResourceSlice>& slices,
                                                        const DeviceClasses& classes,
                                                        const AllocatedState& allocated,
                                                        const AllocatorOptions& options) {
  return Allocate(claims, node, GatherPools(slices, node), classes, allocated, options);
}

Result<std::optional<std::vector<Allocation>>> Allocate(const std::vector<ResourceClaim>& claims,
                                                        const Node& node,
                                                        const std::vector<GatheredPool>& pools,
                                                        const DeviceClasses& classes,
                                                        const AllocatedState& allocated,
                                                        const AllocatorOptions& options) {
  return Search(claims, node, pools, classes, allocated, options).Run();
}

}  // namespace devshare::dra
