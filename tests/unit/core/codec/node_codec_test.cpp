// Node register annotations (spec/hami-behaviour.md §1.3, §1.4) and Volcano's
// register format (spec/peers-and-pain-points.md §A1).
#include "devshare/node_codec.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "testutil.hpp"

using namespace devshare;
using devshare::testing::Gen;
using devshare::testing::MakeDevice;

namespace {

// The derived example of spec §1.4.
constexpr std::string_view kSpecJson =
    R"([{"id":"GPU-a","count":10,"devmem":32768,"devcore":100,"type":"NVIDIA-Tesla V100-PCIE-32GB","mode":"hami-core","health":true},)"
    R"({"id":"GPU-b","index":1,"count":10,"devmem":32768,"devcore":100,"type":"NVIDIA-Tesla V100-PCIE-32GB","numa":1,"mode":"hami-core","health":true}])";

std::vector<Device> SpecDevices() {
  return {MakeDevice("GPU-a"), MakeDevice("GPU-b").Index(1).Numa(1)};
}

std::vector<Device> MustDecode(std::string_view value, RegisterFormat format) {
  Result<std::vector<Device>> r = DecodeNodeDevices(value, format);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("node JSON: the spec example decodes and encodes byte for byte") {
  CHECK(MustDecode(kSpecJson, RegisterFormat::kJson) == SpecDevices());
  CHECK(MustDecode(kSpecJson, RegisterFormat::kAuto) == SpecDevices());
  CHECK(EncodeNodeDevices(SpecDevices(), RegisterFormat::kJson) == kSpecJson);
}

TEST_CASE("node JSON: Go decoding rules") {
  SUBCASE("a missing health is false; zero fields are omitted on encode") {
    auto d = MustDecode(R"([{"id":"GPU-a","count":2}])", RegisterFormat::kJson);
    REQUIRE(d.size() == 1);
    CHECK_FALSE(d[0].health);
    CHECK(d[0].index == 0);
    CHECK(d[0].numa == 0);
    CHECK(EncodeNodeDevices(d, RegisterFormat::kJson) == R"([{"id":"GPU-a","count":2}])");
  }
  SUBCASE("keys match case-insensitively, unknown keys are ignored") {
    auto d = MustDecode(
        R"([{"ID":"GPU-a","DevMem":100,"HEALTH":true,"future":{"x":[1,2]},"custominfo":{"a":1}}])",
        RegisterFormat::kJson);
    REQUIRE(d.size() == 1);
    CHECK(d[0].id == "GPU-a");
    CHECK(d[0].devmem == 100);
    CHECK(d[0].health);
  }
  SUBCASE("null leaves a field at zero; a repeated key: the last one wins") {
    auto d =
        MustDecode(R"([{"id":"GPU-a","devmem":null,"count":1,"count":3}])", RegisterFormat::kJson);
    CHECK(d[0].devmem == 0);
    CHECK(d[0].count == 3);
  }
  SUBCASE("devicevendor is read but never written") {
    auto d = MustDecode(R"([{"id":"GPU-a","devicevendor":"NVIDIA"}])", RegisterFormat::kJson);
    CHECK(d[0].vendor == "NVIDIA");
    CHECK(EncodeNodeDevices(d, RegisterFormat::kJson) == R"([{"id":"GPU-a"}])");
  }
  SUBCASE("an empty array and null are an empty list") {
    CHECK(MustDecode("[]", RegisterFormat::kJson).empty());
    CHECK(MustDecode("null", RegisterFormat::kJson).empty());
    CHECK(MustDecode(" [ ] ", RegisterFormat::kAuto).empty());
    CHECK(EncodeNodeDevices({}, RegisterFormat::kJson) == "[]");
  }
  SUBCASE("strings are escaped as Go's encoding/json escapes them") {
    Device d = MakeDevice("GPU-<a>&\"b\"\n\x01").Type("caf\xc3\xa9 \xff\xe2\x80\xa8");
    const std::string encoded = EncodeNodeDevices(std::vector<Device>{d}, RegisterFormat::kJson);
    CHECK(encoded.find(R"("id":"GPU-\u003ca\u003e\u0026\"b\"\n\u0001")") != std::string::npos);
    CHECK(encoded.find("\"type\":\"caf\xc3\xa9 \\ufffd\\u2028\"") != std::string::npos);
  }
}

TEST_CASE("node JSON: MIG profiles use the exact wire format") {
  // From HAMi's MigProfile wire-format test (spec §1.4).
  constexpr std::string_view kValue =
      R"([{"id":"GPU-m","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA A100-SXM4-40GB","mode":"mig",)"
      R"("migProfiles":[{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":6,"size":1}]},)"
      R"({"name":"7g.40gb","memoryMB":40192,"core":100,"sliceCount":7,"placements":null}],"health":true}])";
  auto d = MustDecode(kValue, RegisterFormat::kJson);
  REQUIRE(d.size() == 1);
  REQUIRE(d[0].mig_profiles.size() == 2);
  CHECK(d[0].mig_profiles[0] == MigProfile{"1g.5gb", 4864, 15, 1, {MigPlacement{6, 1}}});
  CHECK(d[0].mig_profiles[1].placements.empty());
  CHECK(EncodeNodeDevices(d, RegisterFormat::kJson) == kValue);
}

TEST_CASE("node JSON: malformed values are errors naming the field") {
  struct Row {
    std::string_view value;
    std::string_view field;    // expected Status::field()
    std::string_view message;  // a fragment of the message
  };
  const Row rows[] = {
      {R"({"id":"GPU-a"})", "value", "expected an array of devices, got an object"},
      {R"("GPU-a")", "value", "expected an array of devices, got a string"},
      {R"([{"id":"GPU-a"})", "", "invalid JSON at byte 15: incomplete JSON"},
      {R"([{"id":"GPU-a","devmem":"lots"}])", "device[0].devmem",
       "expected an integer, got a string"},
      {R"([{"id":"GPU-a"},{"count":1.5}])", "device[1].count", "got a non-integer number"},
      {R"([{"count":2147483648}])", "device[0].count", "out of range"},
      {R"([{"count":1999999999999999999999}])", "device[0].count", "got a non-integer number"},
      {R"([{"count":-99999999999999999}])", "device[0].count", "out of range"},
      {R"([{"index":-1}])", "device[0].index", "out of range"},
      {R"([{"numa":9999999999}])", "device[0].numa", "out of range"},
      {R"([{"health":"true"}])", "device[0].health", "expected a boolean"},
      {R"([{"id":7}])", "device[0].id", "expected a string"},
      {R"([null])", "device[0]", "expected an object, got null"},
      {R"([{"migProfiles":{}}])", "device[0].migProfiles", "expected an array"},
      {R"([{"migProfiles":[{"placements":[{"start":-1}]}]}])",
       "device[0].migProfiles[0].placements[0].start", "out of range"},
      {R"([{"custominfo":"x"}])", "device[0].custominfo", "expected an object"},
      {R"([{"id":"GPU-a"}] trailing)", "", "unexpected data after the JSON value at byte 17"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    Result<std::vector<Device>> r = DecodeNodeDevices(row.value, RegisterFormat::kJson);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kMalformed);
    CHECK(r.status().field() == row.field);
    CHECK(r.status().message().find(row.message) != std::string_view::npos);
  }
}

TEST_CASE("node JSON: a syntax error reports its byte offset") {
  Result<std::vector<Device>> r = DecodeNodeDevices(R"([{"id":"GPU-a",}])", RegisterFormat::kJson);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().offset() == 15);
  CHECK(r.status().message().find("at byte 15") != std::string_view::npos);
}

TEST_CASE("node legacy format: spec §1.3 encoder and decoder") {
  const std::string_view k9 = "GPU-ebe7,10,7680,100,NVIDIA-Tesla P4,0,true,1,hami-core:";
  Device p4 = MakeDevice("GPU-ebe7").Mem(7680).Type("NVIDIA-Tesla P4").Index(1);
  SUBCASE("9 fields round-trip byte for byte") {
    CHECK(MustDecode(k9, RegisterFormat::kLegacy) == std::vector<Device>{p4});
    CHECK(MustDecode(k9, RegisterFormat::kAuto) == std::vector<Device>{p4});
    CHECK(EncodeNodeDevices(std::vector<Device>{p4}, RegisterFormat::kLegacy) == k9);
  }
  SUBCASE("7 fields: index 0 and mode hami-core") {
    auto d = MustDecode("GPU-1,4,1024,50,DCU,1,false:", RegisterFormat::kLegacy);
    REQUIRE(d.size() == 1);
    CHECK(d[0].index == 0);
    CHECK(d[0].mode == "hami-core");
    CHECK(d[0].numa == 1);
    CHECK_FALSE(d[0].health);
  }
  SUBCASE("empty pieces are skipped; only separators decode to nothing") {
    CHECK(MustDecode(":", RegisterFormat::kLegacy).empty());
    CHECK(MustDecode("::", RegisterFormat::kLegacy).empty());
    CHECK(MustDecode("::GPU-1,4,1024,50,DCU,1,T::", RegisterFormat::kLegacy).size() == 1);
  }
  SUBCASE("Go strconv rules: signs and ParseBool spellings") {
    auto d = MustDecode("G,+4,-1,050,T,-2,TRUE:H,4,1,1,T,0,0:", RegisterFormat::kLegacy);
    CHECK(d[0].count == 4);
    CHECK(d[0].devmem == -1);
    CHECK(d[0].devcore == 50);
    CHECK(d[0].numa == -2);
    CHECK(d[0].health);
    CHECK_FALSE(d[1].health);
  }
}

TEST_CASE("node legacy format: every error class of spec §1.3") {
  struct Row {
    std::string_view value;
    std::string_view field;
    std::string_view message;
    std::size_t offset;
  };
  const Row rows[] = {
      {"GPU-1,4,1024,50,DCU,1,true", "", "missing device separator", 0},
      {"GPU-1:", "device[0]", "malformed segment \"GPU-1\" at byte 0", 0},
      {"a,b,c:", "device[0]", "unexpected field count 3", 0},
      {"G,1,1,1,T,0,true,0:", "device[0]", "unexpected field count 8", 0},
      {"G,x,1,1,T,0,true:", "device[0].count", "not an int32: \"x\" at byte 2", 2},
      {"G,1,4294967296,1,T,0,true:", "device[0].devmem", "not an int32", 4},
      {"G,1,1,,T,0,true:", "device[0].devcore", "not an int32: \"\"", 6},
      {"G,1,1,1,T,zero,true:", "device[0].numa", "not an int32", 10},
      {"G,1,1,1,T,0,yes:", "device[0].health", "not a boolean: \"yes\"", 12},
      {"G,1,1,1,T,0,true,-1,hami-core:", "device[0].index", "not an index", 17},
      {"G,1,1,1,T,0,true:H,1,1,1,T,0,true,x,m:", "device[1].index", "not an index", 34},
  };
  for (const Row& row : rows) {
    CAPTURE(row.value);
    Result<std::vector<Device>> r = DecodeNodeDevices(row.value, RegisterFormat::kLegacy);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().field() == row.field);
    CHECK(r.status().offset() == row.offset);
    CHECK(r.status().message().find(row.message) != std::string_view::npos);
  }
}

TEST_CASE("node Volcano format: UUID,count,devmem,type,health,mode") {
  const std::string_view value =
      "GPU-a,10,15360,Tesla-T4,true,hami-core:GPU-b,10,15360,Tesla-T4,false,mig:";
  auto d = MustDecode(value, RegisterFormat::kVolcano);
  REQUIRE(d.size() == 2);
  CHECK(d[0].id == "GPU-a");
  CHECK(d[0].count == 10);
  CHECK(d[0].devmem == 15360);
  CHECK(d[0].devcore == 100);  // implied: Volcano cores are percent of one GPU
  CHECK(d[0].type == "Tesla-T4");
  CHECK(d[1].index == 1);  // the record's position
  CHECK(d[1].mode == "mig");
  CHECK_FALSE(d[1].health);
  CHECK(MustDecode(value, RegisterFormat::kAuto) == d);
  CHECK(EncodeNodeDevices(d, RegisterFormat::kVolcano) == value);
  SUBCASE("errors") {
    auto r = DecodeNodeDevices("GPU-a,10,15360,Tesla-T4,true:", RegisterFormat::kVolcano);
    CHECK(r.status().message().find("unexpected field count 5 (want 6)") != std::string_view::npos);
    r = DecodeNodeDevices("GPU-a,ten,15360,T4,true,m:", RegisterFormat::kVolcano);
    CHECK(r.status().field() == "device[0].count");
    r = DecodeNodeDevices("GPU-a,10,15360,T4,maybe,m:", RegisterFormat::kVolcano);
    CHECK(r.status().field() == "device[0].health");
    // Volcano's count and memory are unsigned: -1 would be 2^64 - 1 slots there.
    r = DecodeNodeDevices("GPU-a,-1,15360,T4,true,m:", RegisterFormat::kVolcano);
    CHECK(r.status().message() ==
          "volcano node register annotation: device[0]: count -1 is negative at byte 6");
    CHECK(r.status().field() == "device[0].count");
    r = DecodeNodeDevices("GPU-a,10,15360,T4,true,m:GPU-b,1,-2,T4,true,m:",
                          RegisterFormat::kVolcano);
    CHECK(r.status().field() == "device[1].devmem");
    r = DecodeNodeDevices("no separator", RegisterFormat::kVolcano);
    CHECK(r.status().message().find("missing device separator") != std::string_view::npos);
  }
}

TEST_CASE("node formats: round trip over generated devices (property)") {
  Gen gen(20261121);
  for (int round = 0; round < 300; ++round) {
    std::vector<Device> devices;
    const auto n = gen.Int(0, 8);
    for (std::int64_t i = 0; i < n; ++i) {
      Device d = MakeDevice(gen.Text(testing::kIdChars, 1, 40))
                     .Index(static_cast<std::uint32_t>(gen.Int(0, 4294967295)))
                     .Count(static_cast<std::int32_t>(gen.Int(-5, 2147483647)))
                     .Mem(static_cast<std::int32_t>(gen.Int(-2147483648LL, 2147483647)))
                     .Cores(static_cast<std::int32_t>(gen.Int(0, 400)))
                     .Type(gen.Text(testing::kIdChars, 0, 30))
                     .Numa(static_cast<std::int32_t>(gen.Int(-3, 3)))
                     .Mode(gen.Bool() ? "hami-core" : gen.Text("abc-", 1, 5))
                     .Health(gen.Bool());
      if (gen.Int(0, 4) == 0) {
        d.mig_profiles.push_back(MigProfile{gen.Text("0123456789gb.", 1, 8),
                                            static_cast<std::int32_t>(gen.Int(0, 81920)),
                                            static_cast<std::int32_t>(gen.Int(0, 100)),
                                            static_cast<std::uint32_t>(gen.Int(0, 7)),
                                            {}});
        for (auto k = gen.Int(0, 3); k > 0; --k) {
          d.mig_profiles.back().placements.push_back(
              MigPlacement{static_cast<std::uint32_t>(gen.Int(0, 7)),
                           static_cast<std::uint32_t>(gen.Int(1, 7))});
        }
      }
      devices.push_back(d);
    }
    CAPTURE(round);
    // JSON keeps everything, on the fast path (the plugins' plain form) and on
    // the full decoder (the same value with whitespace, which the fast path
    // leaves to it).
    const std::string json = EncodeNodeDevices(devices, RegisterFormat::kJson);
    CHECK(MustDecode(json, RegisterFormat::kJson) == devices);
    CHECK(MustDecode(" " + json + "\n", RegisterFormat::kJson) == devices);
    // The colon formats carry no MIG profiles, and an empty list encodes as
    // "" which, as in HAMi, does not decode (no separator).
    if (devices.empty()) continue;
    for (Device& d : devices) d.mig_profiles.clear();
    CHECK(MustDecode(EncodeNodeDevices(devices, RegisterFormat::kLegacy),
                     RegisterFormat::kLegacy) == devices);
    // Volcano's count and memory are unsigned: negative ones do not decode.
    for (std::size_t i = 0; i < devices.size(); ++i) {
      devices[i].devcore = 100;
      devices[i].numa = 0;
      devices[i].index = static_cast<std::uint32_t>(i);
      devices[i].count = std::max(devices[i].count, 0);
      devices[i].devmem = std::max(devices[i].devmem, 0);
    }
    CHECK(MustDecode(EncodeNodeDevices(devices, RegisterFormat::kVolcano),
                     RegisterFormat::kVolcano) == devices);
  }
}

TEST_CASE("register format names") {
  CHECK(*ParseRegisterFormat("volcano") == RegisterFormat::kVolcano);
  CHECK(RegisterFormatName(RegisterFormat::kLegacy) == "legacy");
  CHECK(ParseRegisterFormat("yaml").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("pair scores: hami.io/node-nvidia-score") {
  const std::string_view value =
      R"([{"uuid":"GPU-0","score":{"GPU-2":200,"GPU-1":100}},{"uuid":"GPU-1","score":{"GPU-0":100}}])";
  Result<std::vector<DevicePairScore>> r = DecodePairScores(value);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].uuid == "GPU-0");
  using Scores = std::vector<std::pair<std::string, std::int64_t>>;
  CHECK((*r)[0].scores == Scores{{"GPU-1", 100}, {"GPU-2", 200}});  // sorted by peer
  // Go writes map keys sorted.
  CHECK(
      EncodePairScores(*r) ==
      R"([{"uuid":"GPU-0","score":{"GPU-1":100,"GPU-2":200}},{"uuid":"GPU-1","score":{"GPU-0":100}}])");
  SUBCASE("a repeated peer: the last one wins") {
    auto dup = DecodePairScores(R"([{"uuid":"G","score":{"P":1,"P":5}}])");
    REQUIRE(dup.ok());
    CHECK((*dup)[0].scores == Scores{{"P", 5}});
  }
  SUBCASE("errors") {
    CHECK(DecodePairScores("[{").status().code() == StatusCode::kMalformed);
    CHECK(DecodePairScores(R"([{"uuid":"G","score":{"P":"x"}}])").status().field() ==
          "entry[0].score[\"P\"]");
    CHECK(DecodePairScores(R"([{"uuid":"G","score":[]}])").status().field() == "entry[0].score");
    CHECK(DecodePairScores(R"({})").status().field() == "value");
  }
}
