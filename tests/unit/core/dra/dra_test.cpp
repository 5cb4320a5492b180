// DRA objects: decoded from the JSON the API server serves (shaped as HAMi's
// DRA driver publishes its GPUs), encoded back without loss, and every
// malformed input refused by the field that is wrong.
#include "devshare/dra.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <string>

#include "devshare/dra_json.hpp"

using namespace devshare;
using namespace devshare::dra;

namespace {

// A GPU as github.com/Project-HAMi/k8s-dra-driver publishes it: consumable
// cores and memory, shared by several allocations.
constexpr std::string_view kHamiSlice = R"({
  "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
  "metadata": {"name": "node-a-hami-core-gpu.project-hami.io-x7k2p", "resourceVersion": "812"},
  "spec": {
    "driver": "hami-core-gpu.project-hami.io",
    "nodeName": "node-a",
    "pool": {"name": "node-a", "generation": 3, "resourceSliceCount": 1},
    "devices": [{
      "name": "hami-gpu-0",
      "attributes": {
        "type": {"string": "hami-gpu"},
        "minor": {"int": 0},
        "cudaComputeCapability": {"version": "8.0.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"}
      },
      "capacity": {
        "cores": {"value": "100", "requestPolicy": {"default": "100",
                  "validRange": {"min": "0", "max": "100", "step": "1"}}},
        "memory": {"value": "40Gi", "requestPolicy": {"default": "40Gi",
                   "validRange": {"min": "1Mi", "max": "40Gi", "step": "1Mi"}}}
      },
      "allowMultipleAllocations": true
    }]
  }
})";

constexpr std::int64_t kGi = 1024LL * 1024 * 1024;

Quantity Q(std::int64_t whole) { return Quantity{whole * 1000}; }

ResourceClaim SampleClaim() {
  ResourceClaim c;
  c.claim_namespace = "team-a";
  c.name = "trainer-gpu";
  c.uid = "7f0c";
  c.resource_version = "99";
  DeviceSelection half;
  half.device_class_name = "hami-core-gpu.project-hami.io";
  half.selectors = {"device.attributes['hami-core-gpu.project-hami.io'].minor == 0"};
  half.capacity_requests = {{"cores", Q(50)}, {"memory", Q(20 * kGi)}};
  half.tolerations = {DeviceToleration{"maintenance", "Exists", "", "NoSchedule", 300}};
  DeviceSelection all;
  all.device_class_name = "hami-core-gpu.project-hami.io";
  all.allocation_mode = AllocationMode::kAll;
  all.count = 0;
  c.spec.requests = {DeviceRequest{"gpu", half, {}},
                     DeviceRequest{"fallback", std::nullopt, {DeviceSubRequest{"any", all}}}};
  c.spec.constraints = {
      DeviceConstraint{{"gpu", "fallback"}, "resource.kubernetes.io/pcieRoot", std::nullopt}};
  AllocatedDevice d;
  d.request = "gpu";
  d.driver = "hami-core-gpu.project-hami.io";
  d.pool = "node-a";
  d.device = "hami-gpu-0";
  d.share_id = "a1b2";
  d.consumed_capacity = {{"cores", Q(50)}, {"memory", Q(20 * kGi)}};
  Allocation allocation;
  allocation.devices = {d};
  allocation.node_selector = NodeSelector{
      {NodeSelectorTerm{{}, {NodeSelectorRequirement{"metadata.name", "In", {"node-a"}}}}}};
  c.allocation = allocation;
  c.reserved_for = {ClaimConsumer{"", "pods", "trainer-0", "u-1"}};
  return c;
}

}  // namespace

TEST_CASE("dra: a ResourceSlice as HAMi's DRA driver publishes it") {
  auto slice = DecodeResourceSlice(kHamiSlice);
  REQUIRE(slice.ok());
  CHECK(slice->name == "node-a-hami-core-gpu.project-hami.io-x7k2p");
  CHECK(slice->resource_version == "812");
  CHECK(slice->driver == "hami-core-gpu.project-hami.io");
  CHECK(slice->pool == Pool{"node-a", 3, 1});
  CHECK(slice->node_scope.node_name == "node-a");
  REQUIRE(slice->devices.size() == 1);
  const Device& gpu = slice->devices[0];
  CHECK(gpu.name == "hami-gpu-0");
  CHECK(gpu.allow_multiple_allocations);
  CHECK(std::get<std::string>(gpu.attributes.at("type")) == "hami-gpu");
  CHECK(std::get<std::int64_t>(gpu.attributes.at("minor")) == 0);
  CHECK(std::get<Version>(gpu.attributes.at("cudaComputeCapability")).text == "8.0.0");
  const Capacity& memory = gpu.capacity.at("memory");
  CHECK(memory.value == Q(40 * kGi));
  REQUIRE(memory.request_policy);
  CHECK(memory.request_policy->default_value == Q(40 * kGi));
  CHECK(memory.request_policy->valid_range->min == Q(1024 * 1024));
  CHECK(memory.request_policy->valid_range->step == Q(1024 * 1024));
  CHECK(gpu.capacity.at("cores").request_policy->valid_range->max == Q(100));
  CHECK_FALSE(gpu.node_scope);  // only with perDeviceNodeSelection

  auto again = DecodeResourceSlice(EncodeResourceSlice(*slice));
  REQUIRE(again.ok());
  CHECK(*again == *slice);
}

TEST_CASE("dra: each kind decodes from a value already parsed as from its text") {
  namespace bj = boost::json;
  const ResourceClaim claim = SampleClaim();
  const std::string claim_json = EncodeResourceClaim(claim);
  auto claim_from_value = DecodeResourceClaim(bj::parse(claim_json).get_object());
  REQUIRE(claim_from_value.ok());
  CHECK(*claim_from_value == claim);
  auto slice = DecodeResourceSlice(bj::parse(kHamiSlice).get_object());
  REQUIRE(slice.ok());
  CHECK(*slice == *DecodeResourceSlice(kHamiSlice));
  const DeviceClass device_class{"gpu", "7", {"device.driver == 'd'"}, "nvidia.com/gpu"};
  auto class_from_value =
      DecodeDeviceClass(bj::parse(EncodeDeviceClass(device_class)).get_object());
  REQUIRE(class_from_value.ok());
  CHECK(*class_from_value == device_class);
  const ResourceClaimTemplate t{"team-a", "trainer", claim.spec};
  auto template_from_value =
      DecodeResourceClaimTemplate(bj::parse(EncodeResourceClaimTemplate(t)).get_object());
  REQUIRE(template_from_value.ok());
  CHECK(*template_from_value == t);
  // Errors name the field as the text overload's do.
  auto bad = DecodeResourceSlice(bj::parse(R"({"metadata":{"name":"s"}})").get_object());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().field() == "spec");
}

TEST_CASE("dra: qualified names split as CEL sees them") {
  QualifiedName own = SplitQualifiedName("minor", "hami-core-gpu.project-hami.io");
  CHECK(own.domain == "hami-core-gpu.project-hami.io");
  CHECK(own.name == "minor");
  QualifiedName other = SplitQualifiedName("resource.kubernetes.io/pcieRoot", "gpu.nvidia.com");
  CHECK(other.domain == "resource.kubernetes.io");
  CHECK(other.name == "pcieRoot");
}

TEST_CASE("dra: quantities are exact thousandths") {
  struct Row {
    std::string_view text;
    std::optional<std::int64_t> milli;
  };
  for (const Row& row :
       {Row{"100", 100000}, Row{"40Gi", 40 * kGi * 1000}, Row{"1.5", 1500}, Row{"500m", 500},
        Row{"2k", 2000000}, Row{"1e3", 1000000}, Row{"-3", -3000}, Row{"1n", std::nullopt},
        Row{"0.0001", std::nullopt}, Row{"9Ei", std::nullopt}, Row{"", std::nullopt},
        Row{"ten", std::nullopt}, Row{"5Gb", std::nullopt}}) {
    CAPTURE(row.text);
    std::optional<Quantity> q = ParseQuantity(row.text);
    CHECK(q.has_value() == row.milli.has_value());
    if (q && row.milli) CHECK(q->milli == *row.milli);
  }
  CHECK(FormatQuantity(Q(12)) == "12");
  CHECK(FormatQuantity(Quantity{1500}) == "1500m");
  CHECK(FormatQuantity(Quantity{-250}) == "-250m");
  CHECK(ParseQuantity(FormatQuantity(Quantity{-250}))->milli == -250);
}

TEST_CASE("dra: a ResourceClaim with requests, constraints and its allocation round-trips") {
  const ResourceClaim claim = SampleClaim();
  const std::string json = EncodeResourceClaim(claim);
  CHECK(json.find(R"("apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim")") !=
        std::string::npos);
  CHECK(json.find(R"("consumedCapacity":{"cores":"50","memory":"21474836480"})") !=
        std::string::npos);
  auto decoded = DecodeResourceClaim(json);
  REQUIRE(decoded.ok());
  CHECK(*decoded == claim);

  ResourceClaimTemplate t{"team-a", "trainer", claim.spec};
  auto decoded_template = DecodeResourceClaimTemplate(EncodeResourceClaimTemplate(t));
  REQUIRE(decoded_template.ok());
  CHECK(*decoded_template == t);

  auto allocation = EncodeAllocation(*claim.allocation);
  CHECK(allocation.rfind(R"({"devices":{"results":[{"request":"gpu","driver":)", 0) == 0);
  CHECK(allocation.find("allocationTimestamp") == std::string::npos);  // unknown: left out

  ResourceClaim stamped = claim;
  stamped.allocation->allocated_unix_seconds = 1787300439;
  const std::string stamped_json = EncodeResourceClaim(stamped);
  CHECK(stamped_json.find(R"("allocationTimestamp":"2026-08-21T08:20:39Z")") != std::string::npos);
  auto decoded_stamped = DecodeResourceClaim(stamped_json);
  REQUIRE(decoded_stamped.ok());
  CHECK(*decoded_stamped == stamped);
}

TEST_CASE("dra: the API server's defaults apply to what a claim leaves out") {
  auto claim = DecodeResourceClaim(R"({"metadata":{"name":"c","namespace":"n"},
    "spec":{"devices":{"requests":[
      {"name":"one","exactly":{"deviceClassName":"gpu"}},
      {"name":"every","exactly":{"deviceClassName":"gpu","allocationMode":"All"}}]}}})");
  REQUIRE(claim.ok());
  const DeviceSelection& one = *claim->spec.requests[0].exactly;
  CHECK(one.allocation_mode == AllocationMode::kExactCount);
  CHECK(one.count == 1);
  const DeviceSelection& every = *claim->spec.requests[1].exactly;
  CHECK(every.allocation_mode == AllocationMode::kAll);
  CHECK(every.count == 0);
  CHECK_FALSE(claim->allocation);
}

TEST_CASE("dra: a DeviceClass keeps its selectors and extended resource name") {
  auto c = DecodeDeviceClass(R"({"metadata":{"name":"hami-core-gpu.project-hami.io"},
    "spec":{"selectors":[{"cel":{"expression":"device.driver == 'hami-core-gpu.project-hami.io'"}}],
    "extendedResourceName":"nvidia.com/gpu"}})");
  REQUIRE(c.ok());
  CHECK(c->selectors ==
        std::vector<std::string>{"device.driver == 'hami-core-gpu.project-hami.io'"});
  CHECK(c->extended_resource_name == "nvidia.com/gpu");
  auto again = DecodeDeviceClass(EncodeDeviceClass(*c));
  REQUIRE(again.ok());
  CHECK(*again == *c);
}

TEST_CASE("dra: malformed objects are refused by the field that is wrong") {
  struct Bad {
    std::string_view json;
    std::string_view field;
  };
  const Bad slices[] = {
      {"[]", "value"},
      {R"({"spec":{"driver":"d","pool":{"name":"p","resourceSliceCount":1}}})", "metadata.name"},
      {R"({"metadata":{"name":"s"}})", "spec"},
      {R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p"}}})",
       "spec.pool.resourceSliceCount"},
      {R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","generation":"1",)"
       R"("resourceSliceCount":1}}})",
       "spec.pool.generation"},
      {R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","resourceSliceCount":1},)"
       R"("devices":[{"name":"g","attributes":{"a":{"int":1,"string":"x"}}}]}})",
       "spec.devices[0].attributes[\"a\"]"},
      {R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","resourceSliceCount":1},)"
       R"("devices":[{"name":"g","attributes":{"a":{}}}]}})",
       "spec.devices[0].attributes[\"a\"]"},
      {R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","resourceSliceCount":1},)"
       R"("devices":[{"name":"g","capacity":{"memory":{"value":"1n"}}}]}})",
       "spec.devices[0].capacity[\"memory\"].value"},
      {R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","resourceSliceCount":1},)"
       R"("devices":[{"name":"g","capacity":{"memory":{"value":"1Gi","requestPolicy":)"
       R"({"validRange":{"step":true}}}}}]}})",
       "spec.devices[0].capacity[\"memory\"].requestPolicy.validRange.step"},
      {R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","resourceSliceCount":1},)"
       R"("devices":[{"name":"g"},{"attributes":{}}]}})",
       "spec.devices[1].name"},
  };
  for (const Bad& bad : slices) {
    CAPTURE(bad.json);
    auto r = DecodeResourceSlice(bad.json);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kMalformed);
    CHECK(r.status().field() == bad.field);
  }
  const Bad claims[] = {
      {"{", ""},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"r"}]}}})",
       "spec.devices.requests[0]"},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"r",)"
       R"("exactly":{"deviceClassName":"g"},"firstAvailable":[{"name":"s","deviceClassName":"g"}]}]}}})",
       "spec.devices.requests[0]"},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"r",)"
       R"("exactly":{"deviceClassName":"g","allocationMode":"Some"}}]}}})",
       "spec.devices.requests[0].exactly.allocationMode"},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"r",)"
       R"("exactly":{"deviceClassName":"g","count":0}}]}}})",
       "spec.devices.requests[0].exactly.count"},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"r",)"
       R"("exactly":{"deviceClassName":"g","selectors":[{}]}}]}}})",
       "spec.devices.requests[0].exactly.selectors[0]"},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"r",)"
       R"("firstAvailable":[{"name":"s"}]}]}}})",
       "spec.devices.requests[0].firstAvailable[0].deviceClassName"},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[]}},"status":{"allocation":)"
       R"({"devices":{"results":[{"request":"r","consumedCapacity":{"memory":[]}}]}}}})",
       "status.allocation.devices.results[0].consumedCapacity[\"memory\"]"},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[]}},"status":)"
       R"({"reservedFor":[{"resource":"pods","name":7}]}})",
       "status.reservedFor[0].name"},
      {R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[]}},"status":{"allocation":)"
       R"({"devices":{"results":[]},"allocationTimestamp":"yesterday"}}})",
       "status.allocation.allocationTimestamp"},
  };
  for (const Bad& bad : claims) {
    CAPTURE(bad.json);
    auto r = DecodeResourceClaim(bad.json);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kMalformed);
    CHECK(r.status().field() == bad.field);
  }
  auto t = DecodeResourceClaimTemplate(R"({"metadata":{"name":"t"},"spec":{}})");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().field() == "spec.spec");
}

TEST_CASE("dra: node selectors select as core/v1 defines") {
  Node node;
  node.name = "node-a";
  node.labels.Set("gpu", "a100");
  node.labels.Set("slots", "8");
  auto term = [](std::vector<NodeSelectorRequirement> expressions,
                 std::vector<NodeSelectorRequirement> fields = {}) {
    return NodeSelector{{NodeSelectorTerm{std::move(expressions), std::move(fields)}}};
  };
  struct Row {
    NodeSelector selector;
    bool selected;
  };
  const Row rows[] = {
      {term({{"gpu", "In", {"h100", "a100"}}}), true},
      {term({{"gpu", "NotIn", {"a100"}}}), false},
      {term({{"zone", "NotIn", {"x"}}}), true},
      {term({{"gpu", "Exists", {}}, {"zone", "DoesNotExist", {}}}), true},
      {term({{"gpu", "Exists", {}}, {"zone", "Exists", {}}}), false},
      {term({{"slots", "Gt", {"4"}}}), true},
      {term({{"slots", "Lt", {"4"}}}), false},
      {term({{"slots", "Gt", {"four"}}}), false},
      {term({{"gpu", "Near", {"a100"}}}), false},
      {term({}, {{"metadata.name", "In", {"node-a"}}}), true},
      {term({}, {{"metadata.name", "NotIn", {"node-a"}}}), false},
      {term({}, {{"spec.unschedulable", "In", {"false"}}}), false},
      {NodeSelector{{NodeSelectorTerm{}, NodeSelectorTerm{{{"gpu", "In", {"a100"}}}, {}}}}, true},
      {NodeSelector{{NodeSelectorTerm{}}}, false},
      {NodeSelector{}, false},
  };
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    CAPTURE(i);
    CHECK(NodeSelectorMatches(rows[i].selector, node) == rows[i].selected);
  }
}

TEST_CASE("dra: a claim's status patch sets or removes its allocation and reservedFor") {
  Allocation a;
  AllocatedDevice d;
  d.request = "gpu";
  d.driver = "gpu.example.com";
  d.pool = "n1";
  d.device = "gpu-0";
  a.devices = {d};
  const auto set = boost::json::parse(
      EncodeClaimStatusPatch(a, {ClaimConsumer{"", "pods", "p", "uid-p"}}, "42"));
  CHECK(set.at("metadata").at("resourceVersion") == "42");
  CHECK(set.at("status").at("allocation").at("devices").at("results").at(0).at("device") ==
        "gpu-0");
  CHECK(set.at("status").at("reservedFor") ==
        boost::json::parse(R"([{"resource":"pods","name":"p","uid":"uid-p"}])"));
  const auto cleared = boost::json::parse(EncodeClaimStatusPatch(std::nullopt, {}, "43"));
  CHECK(cleared.at("status") == boost::json::parse(R"({"allocation":null,"reservedFor":null})"));
}
