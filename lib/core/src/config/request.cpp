#include "devshare/request.hpp"

#include <algorithm>
#include <limits>

namespace devshare {

namespace {

// limits, else requests (HAMi reads both maps this way).
const std::string* LimitElseRequest(const Container& c, const std::string& resource) {
  if (resource.empty()) return nullptr;
  if (const std::string* v = c.limits.Find(resource)) return v;
  return c.requests.Find(resource);
}

}  // namespace

ContainerRequest GenerateRequest(const Container& container, const VendorSpec& vendor) {
  ContainerRequest none;
  const std::string* count_text = LimitElseRequest(container, vendor.count_resource);
  if (count_text == nullptr) return none;
  const std::optional<std::int64_t> count = QuantityAsInt64(*count_text);
  if (!count || *count <= 0 || *count > std::numeric_limits<std::int32_t>::max()) return none;

  ContainerRequest r;
  r.nums = static_cast<std::int32_t>(*count);
  r.vendor = vendor.common_word;
  const std::int32_t factor = std::max<std::int32_t>(vendor.memory_factor, 1);
  if (const std::string* mem = LimitElseRequest(container, vendor.memory_resource)) {
    const std::optional<std::int64_t> v = QuantityAsInt64(*mem);
    if (!v || *v < 0 || *v > std::numeric_limits<std::int32_t>::max() / factor) return none;
    r.memreq = static_cast<std::int32_t>(*v * factor);
  }
  if (const std::string* pct = LimitElseRequest(container, vendor.memory_percentage_resource)) {
    if (const std::optional<std::int64_t> v = QuantityAsInt64(*pct)) {
      if (*v > 100) {
        r.mem_percentage = 100;
      } else if (*v >= 1) {
        r.mem_percentage = static_cast<std::int32_t>(*v);
      }
    }
  }
  if (r.mem_percentage == ContainerRequest::kPercentageUnset && r.memreq == 0) {
    if (vendor.default_memory != 0) {
      r.memreq = vendor.default_memory;
    } else {
      r.mem_percentage = 100;
    }
  }
  r.coresreq = vendor.default_cores;
  if (const std::string* cores = LimitElseRequest(container, vendor.core_resource)) {
    if (const std::optional<std::int64_t> v = QuantityAsInt64(*cores);
        v && *v >= std::numeric_limits<std::int32_t>::min() &&
        *v <= std::numeric_limits<std::int32_t>::max()) {
      r.coresreq = static_cast<std::int32_t>(*v);
    }
  }
  return r;
}

std::vector<ContainerRequests> PodRequests(const Pod& pod, const DeviceConfig& config) {
  std::vector<ContainerRequests> out;
  out.reserve(pod.init_containers.size() + pod.containers.size());
  auto add = [&](const Container& c) {
    ContainerRequests& requests = out.emplace_back();
    for (const VendorSpec& vendor : config.vendors) {
      ContainerRequest r = GenerateRequest(c, vendor);
      if (r.nums > 0) requests.push_back(std::move(r));
    }
  };
  for (const Container& c : pod.init_containers) add(c);
  for (const Container& c : pod.containers) add(c);
  return out;
}

bool HasRequests(const std::vector<ContainerRequests>& requests) {
  return std::any_of(requests.begin(), requests.end(),
                     [](const ContainerRequests& c) { return !c.empty(); });
}

}  // namespace devshare
