// Snapshots for the DRA state and placement tests: labelled nodes with
// shared GPUs, and claims for a share of one.
#ifndef DEVSHARE_TESTS_UNIT_DRA_SNAPSHOT_FIXTURES_HPP_
#define DEVSHARE_TESTS_UNIT_DRA_SNAPSHOT_FIXTURES_HPP_

#include <doctest/doctest.h>

#include <string>

#include "devshare/snapshot.hpp"
#include "dra_fixtures.hpp"

namespace devshare::dra::testing {

// A node labelled zone=`zone`, with 8 CPUs and 64 GiB of memory.
inline Node LabelledNode(std::string name, std::string zone) {
  Node n = NamedNode(std::move(name));
  n.labels.Set("zone", std::move(zone));
  n.allocatable.Set("cpu", "8");
  n.allocatable.Set("memory", "64Gi");
  return n;
}

// A claim for one shared GPU's `cores` cores and 1 GiB of its memory.
inline ResourceClaim Share(std::string name, std::int64_t cores) {
  DeviceSelection s = Select("gpu");
  s.capacity_requests = {{"cores", Q(cores)}, {"memory", Q(kGi)}};
  return Claim(std::move(name), {Exactly("gpu", s)});
}

// node-a and node-b in zone z1, each with two shared GPUs.
inline ClusterSnapshot TwoNodes() {
  ClusterSnapshot snapshot;
  snapshot.AddDeviceClass(Classes().at("gpu"));
  for (const char* name : {"node-a", "node-b"}) {
    REQUIRE(snapshot.AddNode(LabelledNode(name, "z1")).ok());
    snapshot.AddResourceSlice(NodeSlice(name, {SharedGpu(0), SharedGpu(1)}));
  }
  return snapshot;
}

}  // namespace devshare::dra::testing

#endif  // DEVSHARE_TESTS_UNIT_DRA_SNAPSHOT_FIXTURES_HPP_
