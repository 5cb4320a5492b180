// Allocation on one node as kube-scheduler v1.37's structured allocator
// does it ("upstream"): first fit in pool, slice and device order, shared
// GPUs by consumable capacity, counters, constraints with backtracking,
// firstAvailable, All, taints, selectors, and the errors upstream reports.
#include "devshare/dra_allocate.hpp"

#include <doctest/doctest.h>

#include <string>

#include "dra_fixtures.hpp"

using namespace devshare;
using namespace devshare::dra;
using namespace devshare::dra::testing;

TEST_CASE("dra allocate: shared GPUs take the first device with capacity left") {
  const std::vector<ResourceSlice> slices = {NodeSlice("node-a", {SharedGpu(0), SharedGpu(1)})};
  DeviceSelection half = Select("gpu");
  half.capacity_requests = {{"cores", Q(50)}, {"memory", Q(20 * kGi)}};
  AllocatedState held;
  std::vector<std::string> devices;
  for (int i = 0; i < 5; ++i) {
    const ResourceClaim claim = Claim("c" + std::to_string(i), {Exactly("gpu", half)});
    auto r = Allocate({claim}, NamedNode("node-a"), slices, Classes(), held);
    REQUIRE(r.ok());
    if (!r->has_value()) {
      devices.push_back("none");
      continue;
    }
    const Allocation& a = (**r)[0];
    REQUIRE(a.devices.size() == 1);
    devices.push_back(a.devices[0].device);
    CHECK(a.devices[0].share_id.has_value());
    CHECK(a.devices[0].consumed_capacity ==
          std::map<std::string, Quantity>{{"cores", Q(50)}, {"memory", Q(20 * kGi)}});
    REQUIRE(a.node_selector);
    CHECK(a.node_selector->terms[0].match_fields[0].values == Strings{"node-a"});
    held.Add(a);
  }
  CHECK(devices == Strings{"gpu-0", "gpu-0", "gpu-1", "gpu-1", "none"});
}

TEST_CASE("dra allocate: requests are rounded by the capacity's request policy") {
  const std::vector<ResourceSlice> slices = {NodeSlice("node-a", {SharedGpu(0)})};
  struct Row {
    Quantity cores, memory;
    std::optional<std::map<std::string, Quantity>> consumed;
  };
  const Row rows[] = {
      {Q(30), Quantity{1500 * kMi}, {{{"cores", Q(30)}, {"memory", Q(2 * kMi)}}}},  // 1.5Mi
      {Q(30), Q(1), {{{"cores", Q(30)}, {"memory", Q(kMi)}}}},              // under the minimum
      {Quantity{30500}, Q(kMi), {{{"cores", Q(31)}, {"memory", Q(kMi)}}}},  // 30.5 cores
      {Q(150), Q(kMi), std::nullopt},                                       // over max
      {Q(30), Q(41 * kGi), std::nullopt},                                   // over the GPU
  };
  for (const Row& row : rows) {
    CAPTURE(row.cores.milli);
    CAPTURE(row.memory.milli);
    DeviceSelection s = Select("gpu");
    s.capacity_requests = {{"cores", row.cores}, {"memory", row.memory}};
    auto r =
        Allocate({Claim("c", {Exactly("gpu", s)})}, NamedNode("node-a"), slices, Classes(), {});
    REQUIRE(r.ok());
    REQUIRE(r->has_value() == row.consumed.has_value());
    if (row.consumed) CHECK((**r)[0].devices[0].consumed_capacity == *row.consumed);
  }
  SUBCASE("a capacity the device does not have never fits") {
    DeviceSelection s = Select("gpu");
    s.capacity_requests = {{"bandwidth", Q(1)}};
    auto r =
        Allocate({Claim("c", {Exactly("gpu", s)})}, NamedNode("node-a"), slices, Classes(), {});
    REQUIRE(r.ok());
    CHECK_FALSE(r->has_value());
  }
}

TEST_CASE("dra allocate: whole devices in order, skipping the ones held, filtered by the class") {
  const std::vector<ResourceSlice> slices = {
      NodeSlice("node-a", {WholeGpu(0), WholeGpu(1, "t4"), WholeGpu(2), WholeGpu(3)})};
  AllocatedState held;
  held.devices.insert(DeviceId{std::string(kDriver), "node-a", "gpu-0"});
  auto two = Allocate({Claim("c", {Exactly("gpu", Select("a100", 2))})}, NamedNode("node-a"),
                      slices, Classes(), held);
  CHECK(Chosen(two) == Strings{"gpu:gpu-2", "gpu:gpu-3"});
  auto three = Allocate({Claim("c", {Exactly("gpu", Select("a100", 3))})}, NamedNode("node-a"),
                        slices, Classes(), held);
  REQUIRE(three.ok());
  CHECK_FALSE(three->has_value());
  SUBCASE("two claims at once do not share a device") {
    auto r = Allocate(
        {Claim("x", {Exactly("gpu", Select("gpu"))}), Claim("y", {Exactly("gpu", Select("gpu"))})},
        NamedNode("node-a"), slices, Classes(), held);
    REQUIRE(r.ok());
    REQUIRE(r->has_value());
    CHECK((**r)[0].devices[0].device == "gpu-1");
    CHECK((**r)[1].devices[0].device == "gpu-2");
  }
  SUBCASE("another node's slice is not seen") {
    auto r = Allocate({Claim("c", {Exactly("gpu", Select("gpu"))})}, NamedNode("node-b"), slices,
                      Classes(), {});
    REQUIRE(r.ok());
    CHECK_FALSE(r->has_value());
  }
}

TEST_CASE("dra allocate: constraints backtrack to a device that satisfies them") {
  const std::vector<ResourceSlice> slices = {
      NodeSlice("node-a", {WholeGpu(0), WholeGpu(1), WholeGpu(2), WholeGpu(3)})};
  const std::vector<DeviceRequest> requests = {Exactly("first", Select("gpu")),
                                               Exactly("second", Select("gpu"))};
  auto same = Allocate(
      {Claim("c", requests, {DeviceConstraint{{}, "resource.kubernetes.io/pcieRoot", {}}})},
      NamedNode("node-a"), slices, Classes(), {});
  CHECK(Chosen(same) == Strings{"first:gpu-0", "second:gpu-1"});
  auto distinct = Allocate(
      {Claim("c", requests, {DeviceConstraint{{}, {}, "resource.kubernetes.io/pcieRoot"}})},
      NamedNode("node-a"), slices, Classes(), {});
  CHECK(Chosen(distinct) == Strings{"first:gpu-0", "second:gpu-2"});
  SUBCASE("the driver's own attributes by their qualified name") {
    auto by_model = Allocate(
        {Claim("c", requests, {DeviceConstraint{{"second"}, "gpu.example.com/model", {}}})},
        NamedNode("node-a"), slices, Classes(), {});
    CHECK(Chosen(by_model) == Strings{"first:gpu-0", "second:gpu-1"});
  }
  SUBCASE("an attribute no device has: no allocation") {
    auto none = Allocate({Claim("c", requests, {DeviceConstraint{{}, "example.com/rack", {}}})},
                         NamedNode("node-a"), slices, Classes(), {});
    REQUIRE(none.ok());
    CHECK_FALSE(none->has_value());
  }
}

TEST_CASE("dra allocate: firstAvailable takes the first alternative that fits") {
  const std::vector<ResourceSlice> slices = {NodeSlice("node-a", {WholeGpu(0), WholeGpu(1)})};
  DeviceRequest request{
      "gpu",
      std::nullopt,
      {DeviceSubRequest{"four", Select("gpu", 4)}, DeviceSubRequest{"two", Select("gpu", 2)},
       DeviceSubRequest{"one", Select("gpu", 1)}}};
  auto r = Allocate({Claim("c", {request})}, NamedNode("node-a"), slices, Classes(), {});
  CHECK(Chosen(r) == Strings{"gpu/two:gpu-0", "gpu/two:gpu-1"});
}

TEST_CASE("dra allocate: All takes every matching device, and refuses an incomplete pool") {
  std::vector<ResourceSlice> slices = {
      NodeSlice("node-a", {WholeGpu(0), WholeGpu(1, "t4"), WholeGpu(2)})};
  DeviceSelection all = Select("a100");
  all.allocation_mode = AllocationMode::kAll;
  all.count = 0;
  auto r =
      Allocate({Claim("c", {Exactly("gpu", all)})}, NamedNode("node-a"), slices, Classes(), {});
  CHECK(Chosen(r) == Strings{"gpu:gpu-0", "gpu:gpu-2"});
  slices.push_back(NodeSlice("node-a", {WholeGpu(5)}, "split"));
  slices.back().pool.resource_slice_count = 2;
  auto incomplete =
      Allocate({Claim("c", {Exactly("gpu", all)})}, NamedNode("node-a"), slices, Classes(), {});
  REQUIRE_FALSE(incomplete.ok());
  CHECK(std::string(incomplete.status().message()).find("is currently being updated") !=
        std::string::npos);
}

TEST_CASE("dra allocate: taints keep devices out unless tolerated") {
  std::vector<ResourceSlice> slices = {NodeSlice("node-a", {WholeGpu(0), WholeGpu(1)})};
  slices[0].devices[0].taints = {DeviceTaint{"maintenance", "", "NoSchedule"}};
  slices[0].devices[1].taints = {DeviceTaint{"note", "", "None"}};
  auto r = Allocate({Claim("c", {Exactly("gpu", Select("gpu"))})}, NamedNode("node-a"), slices,
                    Classes(), {});
  CHECK(Chosen(r) == Strings{"gpu:gpu-1"});
  DeviceSelection tolerant = Select("gpu");
  tolerant.tolerations = {DeviceToleration{"maintenance", "Exists", "", "", std::nullopt}};
  auto t = Allocate({Claim("c", {Exactly("gpu", tolerant)})}, NamedNode("node-a"), slices,
                    Classes(), {});
  CHECK(Chosen(t) == Strings{"gpu:gpu-0"});
  CHECK((**t)[0].devices[0].tolerations == tolerant.tolerations);
}

TEST_CASE("dra allocate: partitions share their GPU's counters") {
  ResourceSlice counters = NodeSlice("node-a", {}, "node-a");
  counters.name = "counters";
  counters.pool.resource_slice_count = 2;
  counters.shared_counters = {CounterSet{"gpu-0", {{"memory", Q(80)}}}};
  ResourceSlice partitions = NodeSlice("node-a", {}, "node-a");
  partitions.pool.resource_slice_count = 2;
  for (const char* name : {"mig-a", "mig-b", "mig-c"}) {
    Device d;
    d.name = name;
    d.consumes_counters = {CounterConsumption{"gpu-0", {{"memory", Q(40)}}, {}}};
    partitions.devices.push_back(d);
  }
  const std::vector<ResourceSlice> slices = {counters, partitions};
  auto two = Allocate({Claim("c", {Exactly("mig", Select("gpu", 2))})}, NamedNode("node-a"), slices,
                      Classes(), {});
  CHECK(Chosen(two) == Strings{"mig:mig-a", "mig:mig-b"});
  auto three = Allocate({Claim("c", {Exactly("mig", Select("gpu", 3))})}, NamedNode("node-a"),
                        slices, Classes(), {});
  REQUIRE(three.ok());
  CHECK_FALSE(three->has_value());
  AllocatedState held;
  held.devices.insert(DeviceId{std::string(kDriver), "node-a", "mig-b"});
  auto after = Allocate({Claim("c", {Exactly("mig", Select("gpu", 2))})}, NamedNode("node-a"),
                        slices, Classes(), held);
  REQUIRE(after.ok());
  CHECK_FALSE(after->has_value());  // mig-b holds 40 of 80: one more partition fits, not two
  auto one = Allocate({Claim("c", {Exactly("mig", Select("gpu", 1))})}, NamedNode("node-a"), slices,
                      Classes(), held);
  CHECK(Chosen(one) == Strings{"mig:mig-a"});
}

TEST_CASE("dra allocate: what upstream reports as an error") {
  const std::vector<ResourceSlice> slices = {NodeSlice("node-a", {WholeGpu(0)})};
  auto missing = Allocate({Claim("c", {Exactly("gpu", Select("fpga"))})}, NamedNode("node-a"),
                          slices, Classes(), {});
  REQUIRE_FALSE(missing.ok());
  CHECK(std::string(missing.status().message()).find("could not retrieve device class fpga") !=
        std::string::npos);
  DeviceSelection bad = Select("gpu");
  bad.selectors = {"device.attributes['gpu.example.com'].memory > 1"};  // no such attribute
  auto runtime =
      Allocate({Claim("c", {Exactly("gpu", bad)})}, NamedNode("node-a"), slices, Classes(), {});
  REQUIRE_FALSE(runtime.ok());
  CHECK(std::string(runtime.status().message()).find("CEL runtime error") != std::string::npos);
  DeviceSelection too_many = Select("gpu", 33);
  auto over = Allocate({Claim("c", {Exactly("gpu", too_many)})}, NamedNode("node-a"), slices,
                       Classes(), {});
  REQUIRE_FALSE(over.ok());
  CHECK(std::string(over.status().message()).find("exceeds the claim limit of 32") !=
        std::string::npos);
}

TEST_CASE("dra allocate: what was allocated is gathered as kube-scheduler gathers it") {
  Allocation a;
  a.devices = {
      AllocatedDevice{"r", "d", "p", "whole", false, {}, {}, {}, std::nullopt, {}},
      AllocatedDevice{"r", "d", "p", "admin", true, {}, {}, {}, std::nullopt, {}},
      AllocatedDevice{"r", "d", "p", "shared", false, {}, {}, {}, "s1", {{"cores", Q(30)}}}};
  AllocatedState state;
  state.Add(a);
  state.Add(a);
  CHECK(state.devices == std::set<DeviceId>{DeviceId{"d", "p", "whole"}});
  CHECK(state.Shared(DeviceId{"d", "p", "shared"}));
  CHECK(state.consumed_capacity.at(DeviceId{"d", "p", "shared"}).at("cores") == Q(60));
  CHECK_FALSE(state.Holds(DeviceId{"d", "p", "admin"}));
}

TEST_CASE("dra allocate: devshare's device orders choose other devices, never another verdict") {
  const std::vector<ResourceSlice> slices = {
      NodeSlice("node-a", {SharedGpu(0), SharedGpu(1), SharedGpu(2)})};
  AllocatedState held;
  held.shares.emplace(DeviceId{std::string(kDriver), "node-a", "gpu-1"}, "s1");
  held.consumed_capacity[DeviceId{std::string(kDriver), "node-a", "gpu-1"}] = {
      {"cores", Q(60)}, {"memory", Q(10 * kGi)}};
  held.shares.emplace(DeviceId{std::string(kDriver), "node-a", "gpu-2"}, "s2");
  held.consumed_capacity[DeviceId{std::string(kDriver), "node-a", "gpu-2"}] = {
      {"cores", Q(20)}, {"memory", Q(30 * kGi)}};  // 75% of its memory
  auto device_for = [&](std::int64_t cores, DeviceOrder order) -> std::string {
    DeviceSelection s = Select("gpu");
    s.capacity_requests = {{"cores", Q(cores)}, {"memory", Q(kGi)}};
    AllocatorOptions options;
    options.device_order = order;
    auto r = Allocate({Claim("c", {Exactly("gpu", s)})}, NamedNode("node-a"), slices, Classes(),
                      held, options);
    REQUIRE(r.ok());
    return r->has_value() ? (**r)[0].devices[0].device : "none";
  };
  CHECK(device_for(30, DeviceOrder::kUpstream) == "gpu-0");
  CHECK(device_for(30, DeviceOrder::kMostUsedFirst) == "gpu-2");   // 75% used: the fullest
  CHECK(device_for(30, DeviceOrder::kLeastUsedFirst) == "gpu-0");  // unused
  CHECK(device_for(50, DeviceOrder::kMostUsedFirst) == "gpu-2");
  CHECK(device_for(90, DeviceOrder::kMostUsedFirst) == "gpu-0");  // only the free GPU has 90 cores
  for (std::int64_t cores : {10, 40, 80, 100}) {
    CAPTURE(cores);
    const bool fits = device_for(cores, DeviceOrder::kUpstream) != "none";
    CHECK((device_for(cores, DeviceOrder::kMostUsedFirst) != "none") == fits);
    CHECK((device_for(cores, DeviceOrder::kLeastUsedFirst) != "none") == fits);
  }
}

TEST_CASE("dra allocate: a node explained, device by device") {
  SUBCASE("shared GPUs: the capacity short, in words") {
    const std::vector<ResourceSlice> slices = {NodeSlice("node-a", {SharedGpu(0), SharedGpu(1)})};
    AllocatedState held;
    held.shares.emplace(DeviceId{std::string(kDriver), "node-a", "gpu-0"}, "s1");
    held.consumed_capacity[DeviceId{std::string(kDriver), "node-a", "gpu-0"}] = {
        {"cores", Q(90)}, {"memory", Q(kGi)}};
    DeviceSelection s = Select("gpu");
    s.capacity_requests = {{"cores", Q(50)}, {"memory", Q(kGi)}};
    auto e =
        ExplainNode(Claim("c", {Exactly("gpu", s)}), NamedNode("node-a"), slices, Classes(), held);
    REQUIRE(e.ok());
    REQUIRE(e->devices.size() == 2);
    CHECK(e->devices[0].request == "gpu");
    CHECK_FALSE(e->devices[0].fits);
    CHECK(e->devices[0].reason == "cores: needs 50, 10 of 100 free");
    CHECK(e->devices[1].fits);
    CHECK(e->devices[1].reason.empty());
    s.capacity_requests = {{"bandwidth", Q(1)}};
    auto missing =
        ExplainNode(Claim("c", {Exactly("gpu", s)}), NamedNode("node-a"), slices, Classes(), held);
    REQUIRE(missing.ok());
    CHECK(missing->devices[1].reason == "no capacity bandwidth");
  }
  SUBCASE("whole GPUs: held, not selected, tainted; an incomplete pool named") {
    std::vector<ResourceSlice> slices = {
        NodeSlice("node-a", {WholeGpu(0), WholeGpu(1, "t4"), WholeGpu(2), WholeGpu(3)})};
    slices[0].devices[2].taints = {DeviceTaint{"maintenance", "", "NoSchedule"}};
    slices.push_back(NodeSlice("node-a", {WholeGpu(9)}, "split"));
    slices.back().pool.resource_slice_count = 2;
    AllocatedState held;
    held.devices.insert(DeviceId{std::string(kDriver), "node-a", "gpu-0"});
    auto e = ExplainNode(Claim("c", {Exactly("gpu", Select("a100"))}), NamedNode("node-a"), slices,
                         Classes(), held);
    REQUIRE(e.ok());
    std::vector<std::string> reasons;
    for (const DeviceVerdict& v : e->devices) reasons.push_back(v.device.device + ": " + v.reason);
    CHECK(reasons == Strings{"gpu-0: held by an allocated claim",
                             "gpu-1: not selected by the class's or the request's selectors",
                             "gpu-2: taint maintenance=:NoSchedule not tolerated", "gpu-3: "});
    CHECK(e->pools ==
          Strings{"gpu.example.com/split: incomplete (its slices are being published)"});
  }
  SUBCASE("the errors Allocate reports") {
    auto e = ExplainNode(Claim("c", {Exactly("gpu", Select("fpga"))}), NamedNode("node-a"),
                         {NodeSlice("node-a", {WholeGpu(0)})}, Classes(), {});
    REQUIRE_FALSE(e.ok());
    CHECK(e.status().code() == StatusCode::kNotFound);
  }
}
