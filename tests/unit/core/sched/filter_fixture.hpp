// Filter's test fixture: one fixed clock, a Filter that must succeed, and
// existing load on a device (filter_test.cpp, fgd_test.cpp).
#ifndef DEVSHARE_TESTS_UNIT_CORE_SCHED_FILTER_FIXTURE_HPP_
#define DEVSHARE_TESTS_UNIT_CORE_SCHED_FILTER_FIXTURE_HPP_

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "devshare/filter.hpp"
#include "testutil.hpp"

namespace devshare::testing {

inline constexpr std::int64_t kNow = 1787300439;

inline FilterResult MustFilter(const ClusterSnapshot& s, const Pod& pod,
                               const FilterOptions& o = {},
                               std::vector<std::string> candidates = {}) {
  Result<FilterResult> r = Filter(s, pod, candidates, kNow, o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

// The UUIDs the result gives to container `c` of the NVIDIA vendor.
inline std::vector<std::string> Uuids(const FilterResult& r, std::size_t c) {
  std::vector<std::string> out;
  for (const auto& [vendor, containers] : r.devices) {
    if (vendor != "NVIDIA") continue;
    for (const ContainerDevice& d : containers.at(c)) out.push_back(d.uuid);
  }
  return out;
}

// Existing load: `pods` pods on one device, the first holding mem/cores.
inline void Load(ClusterSnapshot& s, const std::string& uuid, const std::string& node, int pods,
                 int mem, int cores) {
  for (int i = 0; i < pods; ++i) {
    const std::string value = i == 0 ? fmt::format("{},NVIDIA,{},{}:;", uuid, mem, cores)
                                     : fmt::format("{},NVIDIA,0,0:;", uuid);
    REQUIRE(s.AddPod(MakePod(fmt::format("load-{}-{}", uuid, i)).Container(1).Holding(node, value))
                .ok());
  }
}
}  // namespace devshare::testing

#endif  // DEVSHARE_TESTS_UNIT_CORE_SCHED_FILTER_FIXTURE_HPP_
