// Consumable capacity: what a request consumes of a device's capacities
// and whether it fits (dra/capacity.hpp).
#include "dra/capacity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "devshare/dra_allocate.hpp"

namespace devshare::dra {

namespace allocator {

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
__extension__ using i128 = __int128;

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

}  // namespace

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

}  // namespace allocator

using allocator::Capacities;
using allocator::ConsumedBy;
using allocator::FindRequest;

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

}  // namespace devshare::dra
