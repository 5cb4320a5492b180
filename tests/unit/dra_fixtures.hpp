// Builders for the DRA unit tests: GPUs as HAMi's DRA driver and whole-GPU
// drivers publish them, slices, classes, claims.
#ifndef DEVSHARE_TESTS_UNIT_DRA_FIXTURES_HPP_
#define DEVSHARE_TESTS_UNIT_DRA_FIXTURES_HPP_

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "devshare/dra_allocate.hpp"

namespace devshare::dra::testing {

inline constexpr std::string_view kDriver = "gpu.example.com";
inline constexpr std::int64_t kMi = 1024LL * 1024;
inline constexpr std::int64_t kGi = 1024 * kMi;

inline Quantity Q(std::int64_t whole) { return Quantity{whole * 1000}; }

// A GPU shared by consumable capacity, as HAMi's DRA driver publishes it.
inline Device SharedGpu(int minor, std::int64_t memory = 40 * kGi) {
  Device d;
  d.name = "gpu-" + std::to_string(minor);
  d.attributes["minor"] = std::int64_t{minor};
  d.attributes["resource.kubernetes.io/pcieRoot"] = std::string(minor < 2 ? "root-a" : "root-b");
  d.capacity["cores"] =
      Capacity{Q(100), CapacityRequestPolicy{Q(100), {}, CapacityRange{Q(0), Q(100), Q(1)}}};
  d.capacity["memory"] = Capacity{
      Q(memory), CapacityRequestPolicy{Q(memory), {}, CapacityRange{Q(kMi), Q(memory), Q(kMi)}}};
  d.allow_multiple_allocations = true;
  return d;
}

inline Device WholeGpu(int minor, std::string model = "a100") {
  Device d;
  d.name = "gpu-" + std::to_string(minor);
  d.attributes["model"] = std::move(model);
  d.attributes["resource.kubernetes.io/pcieRoot"] = std::string(minor < 2 ? "root-a" : "root-b");
  return d;
}

inline ResourceSlice NodeSlice(std::string node, std::vector<Device> devices,
                               std::string pool = "") {
  ResourceSlice s;
  s.name = node + "-slice";
  s.driver = std::string(kDriver);
  s.pool = Pool{pool.empty() ? node : pool, 1, 1};
  s.node_scope.node_name = std::move(node);
  s.devices = std::move(devices);
  return s;
}

inline Node NamedNode(std::string name) {
  Node n;
  n.name = std::move(name);
  return n;
}

inline DeviceClasses Classes() {
  DeviceClasses classes;
  classes["gpu"] = DeviceClass{"gpu", "", {"device.driver == 'gpu.example.com'"}, std::nullopt};
  classes["a100"] = DeviceClass{
      "a100", "", {"device.attributes['gpu.example.com'].model == 'a100'"}, std::nullopt};
  return classes;
}

inline DeviceSelection Select(std::string device_class, std::int64_t count = 1) {
  DeviceSelection s;
  s.device_class_name = std::move(device_class);
  s.count = count;
  return s;
}

inline ResourceClaim Claim(std::string name, std::vector<DeviceRequest> requests,
                           std::vector<DeviceConstraint> constraints = {}) {
  ResourceClaim c;
  c.claim_namespace = "default";
  c.name = name;
  c.uid = "uid-" + name;
  c.spec.requests = std::move(requests);
  c.spec.constraints = std::move(constraints);
  return c;
}

inline DeviceRequest Exactly(std::string name, DeviceSelection selection) {
  return DeviceRequest{std::move(name), std::move(selection), {}};
}

// The devices chosen for the single claim, as "request:device".
inline std::vector<std::string> Chosen(const Result<std::optional<std::vector<Allocation>>>& r) {
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  std::vector<std::string> chosen;
  for (const AllocatedDevice& d : (**r)[0].devices) chosen.push_back(d.request + ":" + d.device);
  return chosen;
}

using Strings = std::vector<std::string>;

}  // namespace devshare::dra::testing

#endif  // DEVSHARE_TESTS_UNIT_DRA_FIXTURES_HPP_
