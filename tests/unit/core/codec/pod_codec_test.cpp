// Pod annotations: PodSingleDevice encoding (spec/hami-behaviour.md §1.2) and
// MIG reservations.
#include "devshare/pod_codec.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "testutil.hpp"

using namespace devshare;
using devshare::testing::Gen;

namespace {
ContainerDevice Dev(std::string uuid, std::int32_t mem = 1000, std::int32_t cores = 30) {
  return ContainerDevice{std::move(uuid), "NVIDIA", mem, cores};
}
PodSingleDevice MustDecode(std::string_view value) {
  Result<PodSingleDevice> r = DecodePodDevices(value);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}
}  // namespace

TEST_CASE("pod devices: the spec's examples") {
  struct Row {
    PodSingleDevice pod;
    std::string_view encoded;
  };
  const Row rows[] = {
      {{{Dev("GPU-a")}}, "GPU-a,NVIDIA,1000,30:;"},
      {{{Dev("GPU-a"), Dev("GPU-b")}}, "GPU-a,NVIDIA,1000,30:GPU-b,NVIDIA,1000,30:;"},
      {{{}, {Dev("GPU-a")}, {}}, ";GPU-a,NVIDIA,1000,30:;;"},
      {{}, ""},
  };
  for (const Row& row : rows) {
    CAPTURE(row.encoded);
    CHECK(EncodePodDevices(row.pod) == row.encoded);
    // Decoding keeps the empty piece after the last ';': N containers give
    // N+1 entries, exactly as HAMi's DecodePodDevices.
    PodSingleDevice expected = row.pod;
    expected.emplace_back();
    CHECK(MustDecode(row.encoded) == expected);
  }
}

TEST_CASE("pod devices: decoding details") {
  CHECK(MustDecode("") == PodSingleDevice{{}});
  CHECK(MustDecode("GPU-a,NVIDIA,1,2") == PodSingleDevice{{Dev("GPU-a", 1, 2)}});
  CHECK(MustDecode("::GPU-a,NVIDIA,1,2::;") == PodSingleDevice{{Dev("GPU-a", 1, 2)}, {}});
  // Another vendor's word is just a type.
  auto pod = MustDecode("DCU-1,DCU,2048,50:;");
  CHECK(pod[0][0].type == "DCU");
}

TEST_CASE("pod devices: malformed values name container, device and field") {
  struct Row {
    std::string_view value;
    std::string_view field;
    std::size_t offset;
    std::string_view message;
  };
  const Row rows[] = {
      {"GPU-a,NVIDIA,1000:;", "container[0].device[0]", 0, "want 4 fields"},
      {"GPU-a,NVIDIA,1000,30,extra:;", "container[0].device[0]", 0, "got 5"},
      {"GPU-a:;", "container[0].device[0]", 0, "got 1"},
      {";GPU-a,NVIDIA,x,30:;", "container[1].device[0].usedmem", 14,
       "not a non-negative int32: \"x\""},
      {"GPU-a,NVIDIA,1,2:GPU-b,NVIDIA,1,y:;", "container[0].device[1].usedcores", 32, "\"y\""},
      {"GPU-a,NVIDIA,-1,30:;", "container[0].device[0].usedmem", 13, "non-negative"},
      {"GPU-a,NVIDIA,2147483648,30:;", "container[0].device[0].usedmem", 13, "int32"},
      {",NVIDIA,1,30:;", "container[0].device[0].uuid", 0, "empty device UUID"},
      {"GPU-a,,1,30:;", "container[0].device[0].type", 6, "empty device type"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    Result<PodSingleDevice> r = DecodePodDevices(row.value);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kMalformed);
    CHECK(r.status().field() == row.field);
    CHECK(r.status().offset() == row.offset);
    CHECK(r.status().message().find(row.message) != std::string_view::npos);
  }
}

TEST_CASE("pod devices: container and per-type helpers") {
  ContainerDevices c = {Dev("GPU-a"), ContainerDevice{"DCU-1", "DCU", 5, 6}, Dev("GPU-b")};
  CHECK(EncodeContainerDevices(c) == "GPU-a,NVIDIA,1000,30:DCU-1,DCU,5,6:GPU-b,NVIDIA,1000,30:");
  CHECK(EncodeContainerDeviceType(c, "NVIDIA") == "GPU-a,NVIDIA,1000,30:GPU-b,NVIDIA,1000,30");
  CHECK(EncodeContainerDeviceType(c, "DCU") == "DCU-1,DCU,5,6");
  CHECK(EncodeContainerDeviceType(c, "MLU").empty());
}

TEST_CASE("pod devices: decode(encode(x)) == x plus one empty entry (property)") {
  Gen gen(7);
  for (int round = 0; round < 500; ++round) {
    PodSingleDevice pod(static_cast<std::size_t>(gen.Int(0, 6)));
    for (ContainerDevices& c : pod) {
      for (auto n = gen.Int(0, 4); n > 0; --n) {
        c.push_back(ContainerDevice{gen.Text("GPU-abcdef0123456789", 1, 40),
                                    gen.Text("NVIDIADCUMLU", 1, 8),
                                    static_cast<std::int32_t>(gen.Int(0, 2147483647)),
                                    static_cast<std::int32_t>(gen.Int(0, 100))});
      }
    }
    PodSingleDevice expected = pod;
    expected.emplace_back();
    CAPTURE(round);
    CHECK(MustDecode(EncodePodDevices(pod)) == expected);
  }
}

TEST_CASE("MIG allocations: wire format and runtime identity") {
  constexpr std::string_view kScheduled =
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"2g.10gb","placement":{"start":0,"size":2}}])";
  constexpr std::string_view kRealised =
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-a","profile":"2g.10gb","placement":{"start":0,"size":2},)"
      R"("migUUID":"MIG-1","gpuInstanceID":0,"computeInstanceID":0}])";
  Result<std::vector<MigAllocation>> scheduled = DecodeMigAllocations(kScheduled);
  REQUIRE(scheduled.ok());
  REQUIRE(scheduled->size() == 1);
  CHECK((*scheduled)[0].placement == MigPlacement{0, 2});
  CHECK_FALSE((*scheduled)[0].gpu_instance_id.has_value());
  CHECK(EncodeMigAllocations(*scheduled) == kScheduled);

  Result<std::vector<MigAllocation>> realised = DecodeMigAllocations(kRealised);
  REQUIRE(realised.ok());
  // Zero instance IDs are kept, not mistaken for absent.
  CHECK((*realised)[0].gpu_instance_id == 0u);
  CHECK((*realised)[0].compute_instance_id == 0u);
  CHECK(EncodeMigAllocations(*realised) == kRealised);

  CHECK(DecodeMigAllocations("")->empty());
  CHECK(DecodeMigAllocations("null")->empty());
  CHECK(EncodeMigAllocations({}).empty());
}

TEST_CASE("MIG allocations: invalid reservations are rejected") {
  struct Row {
    std::string_view value;
    std::string_view message;
  };
  const Row rows[] = {
      {R"({"containerIndex":0})", "expected an array"},
      {R"([{"containerIndex":-1,"deviceIndex":0,"gpuUUID":"G","profile":"1g","placement":{"start":0,"size":1}}])",
       "incomplete"},
      {R"([{"containerIndex":0,"deviceIndex":0,"profile":"1g","placement":{"start":0,"size":1}}])",
       "incomplete"},
      {R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","placement":{"start":0,"size":1}}])",
       "incomplete"},
      {R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"1g","placement":{"start":3,"size":0}}])",
       "incomplete"},
      {R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"1g","placement":{"start":0,"size":1},"migUUID":"M"}])",
       "partial runtime identity"},
      {R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"G","profile":"1g","placement":{"start":0,"size":1},"gpuInstanceID":1,"computeInstanceID":0}])",
       "partial runtime identity"},
      {R"([{"containerIndex":0,"deviceIndex":1,"gpuUUID":"G","profile":"1g","placement":{"start":0,"size":1}},)"
       R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"G","profile":"1g","placement":{"start":1,"size":1}}])",
       "duplicate allocation for container 0 device 1"},
      {R"([{"containerIndex":"0"}])", "allocation[0].containerIndex: expected an integer"},
      {R"([{"placement":{"size":-2}}])", "allocation[0].placement.size"},
      {R"([{"gpuInstanceID":4294967296}])", "out of range"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    auto r = DecodeMigAllocations(row.value);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(row.message) != std::string_view::npos);
  }
}

TEST_CASE("pod devices: decoding into a reused value") {
  PodSingleDevice pod;
  REQUIRE(DecodePodDevicesInto("GPU-a,NVIDIA,1,2:GPU-b,NVIDIA,3,4:;GPU-c,NVIDIA,5,6:;", pod).ok());
  CHECK(pod == PodSingleDevice{{Dev("GPU-a", 1, 2), Dev("GPU-b", 3, 4)}, {Dev("GPU-c", 5, 6)}, {}});
  // A smaller value shrinks it exactly.
  REQUIRE(DecodePodDevicesInto(";GPU-d,NVIDIA,7,8:", pod).ok());
  CHECK(pod == PodSingleDevice{{}, {Dev("GPU-d", 7, 8)}});
  // An error leaves nothing half-decoded.
  CHECK_FALSE(DecodePodDevicesInto("GPU-a,NVIDIA,1,2:;GPU-b,NVIDIA,x,4:;", pod).ok());
  CHECK(pod.empty());
}
