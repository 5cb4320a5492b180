#include "devshare/dra_cel.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

using devshare::StatusCode;
using devshare::dra::AttributeValue;
using devshare::dra::Capacity;
using devshare::dra::CompileSelector;
using devshare::dra::Device;
using devshare::dra::Matches;
using devshare::dra::Version;

constexpr std::int64_t kKi = 1024 * 1000;  // in thousandths
constexpr std::int64_t kMi = 1024 * kKi;
constexpr std::int64_t kGi = 1024 * kMi;

struct DeviceSpec {
  DeviceSpec() = default;
  DeviceSpec(std::vector<std::pair<std::string, AttributeValue>> a,
             std::vector<std::pair<std::string, std::int64_t>> c = {}, bool multi = false)
      : attributes(std::move(a)), capacity_milli(std::move(c)), allow_multiple_allocations(multi) {}

  std::vector<std::pair<std::string, AttributeValue>> attributes;
  std::vector<std::pair<std::string, std::int64_t>> capacity_milli;
  bool allow_multiple_allocations = false;
};

Device Make(const DeviceSpec& spec) {
  Device d;
  d.name = "gpu-0";
  for (const auto& [name, value] : spec.attributes) d.attributes[name] = value;
  for (const auto& [name, milli] : spec.capacity_milli) d.capacity[name] = Capacity{{milli}, {}};
  d.allow_multiple_allocations = spec.allow_multiple_allocations;
  return d;
}

// A row: the expression, the device (of driver dra.example.com unless
// `driver` says otherwise), and the result — a bool, or an error code with
// a part of its message.
struct Row {
  std::string expression;
  DeviceSpec device;
  bool match = false;
  StatusCode code = StatusCode::kOk;
  std::string message;
  std::string driver = "dra.example.com";
};

Row Yes(std::string expression, DeviceSpec device = {}) {
  return {std::move(expression), std::move(device), true, StatusCode::kOk, "", "dra.example.com"};
}
Row No(std::string expression, DeviceSpec device = {}) {
  return {std::move(expression), std::move(device), false, StatusCode::kOk, "", "dra.example.com"};
}
Row Err(std::string expression, StatusCode code, std::string message, DeviceSpec device = {}) {
  return {std::move(expression), std::move(device), false, code,
          std::move(message),    "dra.example.com"};
}

void Run(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    CAPTURE(row.expression);
    auto selector = CompileSelector(row.expression);
    devshare::Status status;
    bool match = false;
    if (selector.ok()) {
      CHECK(selector->expression() == row.expression);
      auto result = Matches(*selector, row.driver, Make(row.device));
      if (result.ok()) {
        match = *result;
      } else {
        status = result.status();
      }
    } else {
      status = selector.status();
    }
    CAPTURE(status.ToString());
    CHECK(status.code() == row.code);
    if (row.code == StatusCode::kOk) {
      CHECK(match == row.match);
    } else {
      CHECK(std::string(status.message()).find(row.message) != std::string::npos);
    }
  }
}

const AttributeValue kTrue = true;
AttributeValue Int(std::int64_t v) { return v; }
AttributeValue Str(std::string v) { return v; }
AttributeValue Ver(std::string v) { return Version{std::move(v)}; }

// Kubernetes' own table: k8s.io/dynamic-resource-allocation@v0.37.1/cel/compile_test.go
// (the stored-expressions environment, with list attributes and consumable
// capacity).
TEST_CASE("dra cel: the rows of Kubernetes' compile_test.go") {
  const DeviceSpec all{
      {{"bool", kTrue}, {"int", Int(1)}, {"string", Str("fish")}, {"version", Ver("1.0.0")}},
      {{"quantity", kMi}}};
  const DeviceSpec services{{{"services", Str("some_example_value")}}};
  Run({
      Yes("true"),
      No("false"),
      Err("?!", StatusCode::kMalformed, "syntax error"),
      Err("1", StatusCode::kMalformed, "must evaluate to bool or the unknown type, not int"),
      Err(R"(device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0")))",
          StatusCode::kInvalidArgument, "no such key: noSuchAttr"),
      Err(R"(device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0")))",
          StatusCode::kInvalidArgument, "no such key: noSuchAttr"),
      No(R"("no-such-domain" in device.attributes)"),
      Yes(R"("dra.example.com" in device.attributes)", {{{"dra.example.com/something", kTrue}}}),
      Yes(R"(device.driver == "dra.example.com")"),
      Yes(R"(device.attributes["dra.example.com"].name)", {{{"name", kTrue}}}),
      Yes(R"(device.attributes["dra.example.com"]["name"])", {{{"name", kTrue}}}),
      Err(R"(cel.bind(dra, device.attributes["dra.example.com"], dra.name))",
          StatusCode::kUnsupported, "cel.bind"),
      Yes(R"(device.attributes["other.example.com"].name)", {{{"other.example.com/name", kTrue}}}),
      Yes(R"(device.attributes["dra.example.com"].name > 0)", {{{"name", Int(1)}}}),
      Yes(R"(device.attributes["dra.example.com"].name == "fish")", {{{"name", Str("fish")}}}),
      Err(R"(device.attributes["dra.example.com"].name.exists(x, x > 0))",
          StatusCode::kInvalidArgument, "got 'types.Int', expected iterable type",
          {{{"name", Int(1)}}}),
      Err(R"(device.attributes["dra.example.com"].name.exists(x, x == true))",
          StatusCode::kInvalidArgument, "got 'types.Bool', expected iterable type",
          {{{"name", kTrue}}}),
      Err(R"(device.attributes["dra.example.com"].name.exists(x, x == "fish"))",
          StatusCode::kInvalidArgument, "got 'types.String', expected iterable type",
          {{{"name", Str("fish")}}}),
      Err(R"(device.attributes["dra.example.com"].names)", StatusCode::kInvalidArgument,
          "CEL result of type list could not be converted to bool",
          {{{"names", std::vector<std::string>{"fish", "bird"}}}}),
      Yes(R"(device.attributes["dra.example.com"].name.includes("fish"))",
          {{{"name", std::vector<std::string>{"fish", "bird"}}}}),
      Yes(R"(device.attributes["dra.example.com"].names.size() == 2)",
          {{{"names", std::vector<bool>{true, false}}}}),
      Yes(R"(device.attributes["dra.example.com"].names.size() == 2)",
          {{{"names", std::vector<std::int64_t>{1, 2}}}}),
      Yes(R"(device.attributes["dra.example.com"].names.size() == 2)",
          {{{"names", std::vector<std::string>{"fish", "bird"}}}}),
      Yes(R"(device.attributes["dra.example.com"].names.size() == 2)",
          {{{"names", std::vector<Version>{{"1.0.0"}, {"2.0.0"}}}}}),
      Yes(R"(device.attributes["dra.example.com"].names.exists(x, x > 0))",
          {{{"names", std::vector<std::int64_t>{1, 2}}}}),
      Yes(R"(device.attributes["dra.example.com"].names.all(x, x != ""))",
          {{{"names", std::vector<std::string>{"fish", "bird"}}}}),
      Yes(R"(device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1"))))",
          {{{"names", std::vector<Version>{{"1.0.0"}, {"2.0.0"}}}}}),
      Yes(R"(device.attributes["dra.example.com"].attr.includes("fish"))",
          {{{"attr", Str("fish")}}}),
      Yes(R"(device.attributes["dra.example.com"].name.includes(true))", {{{"name", kTrue}}}),
      No(R"(device.attributes["dra.example.com"].name.includes(true))",
         {{{"name", AttributeValue(false)}}}),
      Yes(R"(device.attributes["dra.example.com"].name.includes(true))",
          {{{"name", std::vector<bool>{true, false}}}}),
      No(R"(device.attributes["dra.example.com"].name.includes(false))",
         {{{"name", std::vector<bool>{true, true}}}}),
      Yes(R"(device.attributes["dra.example.com"].name.includes(1))", {{{"name", Int(1)}}}),
      No(R"(device.attributes["dra.example.com"].name.includes(1))", {{{"name", Int(2)}}}),
      Yes(R"(device.attributes["dra.example.com"].name.includes(1))",
          {{{"name", std::vector<std::int64_t>{1, 2}}}}),
      No(R"(device.attributes["dra.example.com"].name.includes(3))",
         {{{"name", std::vector<std::int64_t>{1, 2}}}}),
      No(R"(device.attributes["dra.example.com"].name.includes("bird"))",
         {{{"name", Str("fish")}}}),
      No(R"(device.attributes["dra.example.com"].name.includes("cat"))",
         {{{"name", std::vector<std::string>{"fish", "bird"}}}}),
      Yes(R"(device.attributes["dra.example.com"].name.includes(semver("1.0.0")))",
          {{{"name", Ver("1.0.0")}}}),
      No(R"(device.attributes["dra.example.com"].name.includes(semver("2.0.0")))",
         {{{"name", Ver("1.0.0")}}}),
      Yes(R"(device.attributes["dra.example.com"].name.includes(semver("1.0.0")))",
          {{{"name", std::vector<Version>{{"1.0.0"}, {"2.0.0"}}}}}),
      No(R"(device.attributes["dra.example.com"].name.includes(semver("3.0.0")))",
         {{{"name", std::vector<Version>{{"1.0.0"}, {"2.0.0"}}}}}),
      Yes(R"(1 in device.attributes["dra.example.com"].names)",
          {{{"names", std::vector<std::int64_t>{1, 2, 3}}}}),
      Yes(R"(device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1")))",
          {{{"name", Ver("1.0.0")}}}),
      Yes(R"(device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true))",
          {{{"name", Ver("1.0.0")}}}),
      Err(R"(device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1"))))",
          StatusCode::kInvalidArgument, "got 'cel.Semver', expected iterable type",
          {{{"name", Ver("1.0.0")}}}),
      Yes(R"(device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))",
          {{}, {{"name", kMi}}}),
      Yes(R"("name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))",
          {{}, {{"name", kMi}}}),
      Yes(R"(!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki")))"),
      Yes(R"(
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
)",
          all),
      Yes(R"(device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c)",
          {{{"a", kTrue}, {"b", kTrue}, {"c", kTrue}}}),
      Yes(R"(device.attributes.exists_one(x, x == "dra.example.com"))", services),
      Yes(R"(device.attributes["dra.example.com"].exists_one(x, x == "services"))", services),
      Yes(R"(device.attributes["dra.example.com"].existsOne(x, x.startsWith("serv")))", services),
      Err(R"(device.attributes["dra.example.com"].services.split("example").size() >= 2)",
          StatusCode::kUnsupported, "split", services),
      Err(R"(device.attributes["dra.example.com"].services.matches("[^a]?sym"))",
          StatusCode::kUnsupported, "matches", {{{"services", Str("asymetric")}}}),
      Yes(R"(device.capacity.exists_one(x, x == "dra.example.com"))", {{}, {{"memory", kMi}}}),
      Yes(R"(device.capacity["dra.example.com"].exists_one(x, x == "memory"))",
          {{}, {{"memory", kMi}}}),
      Err(R"([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, int('1'.find('[0-9]*')) < 100)))",
          StatusCode::kUnsupported, "a comprehension inside a comprehension"),
      Yes("device.allowMultipleAllocations == true", {{}, {}, true}),
      Yes("device.allowMultipleAllocations == false"),
  });
  // The driver may be empty (empty-driver-name).
  Row empty_driver = Yes(R"(device.driver == "")");
  empty_driver.driver = "";
  Run({empty_driver});
}

TEST_CASE("dra cel: real DeviceClass and claim selectors") {
  const DeviceSpec a100{{{"type", Str("gpu")},
                         {"model", Str("A100")},
                         {"productName", Str("NVIDIA A100-SXM4-80GB")},
                         {"driverVersion", Ver("550.54.15")},
                         {"cudaComputeCapability", Ver("8.0.0")},
                         {"index", Int(0)},
                         {"resource.kubernetes.io/pcieRoot", Str("pci0000:00")}},
                        {{"memory", 80 * kGi}}};
  Row nvidia = Yes(
      R"(device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu")",
      a100);
  nvidia.driver = "gpu.nvidia.com";
  Row mig = No(
      R"(device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig")",
      a100);
  mig.driver = "gpu.nvidia.com";
  Row memory = Yes(R"(device.attributes["gpu.nvidia.com"].model == "A100" &&
                device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0)",
                   a100);
  memory.driver = "gpu.nvidia.com";
  Row equal = Yes(R"(device.capacity['gpu.nvidia.com'].memory == quantity("80Gi"))", a100);
  equal.driver = "gpu.nvidia.com";
  Row greater =
      No(R"(device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity("80Gi")))", a100);
  greater.driver = "gpu.nvidia.com";
  Row version =
      Yes(R"(device.attributes["gpu.nvidia.com"].driverVersion.compareTo(semver("550.0.0")) >= 0 &&
                 device.attributes["gpu.nvidia.com"].cudaComputeCapability.major() >= 8)",
          a100);
  version.driver = "gpu.nvidia.com";
  Row product =
      Yes(R"(device.attributes["gpu.nvidia.com"].productName.lowerAscii().contains("a100"))", a100);
  product.driver = "gpu.nvidia.com";
  Row pcie =
      Yes(R"(device.attributes["resource.kubernetes.io"].pcieRoot.startsWith("pci0000"))", a100);
  pcie.driver = "gpu.nvidia.com";
  Row guarded = No(
      R"(has(device.attributes["gpu.nvidia.com"].sharing) && device.attributes["gpu.nvidia.com"].sharing)",
      a100);
  guarded.driver = "gpu.nvidia.com";
  Row example = Yes("device.driver == 'gpu.example.com'");
  example.driver = "gpu.example.com";
  Run({nvidia, mig, memory, equal, greater, version, product, pcie, guarded, example});
}

TEST_CASE("dra cel: operators follow CEL's typing and errors") {
  const DeviceSpec d{{{"n", Int(5)}, {"s", Str("abc")}, {"b", kTrue}, {"big", Int(INT64_MAX)}}};
  Run({
      Yes("1 + 2 * 3 == 7"),
      Yes("(1 + 2) * 3 == 9"),
      Yes("7 / 2 == 3 && -7 / 2 == -3 && -7 % 3 == -1"),
      Yes("7u / 2u == 3u && 7u % 4u == 3u"),
      Yes("1.5 + 1.5 == 3.0"),
      Yes("-9223372036854775808 < 0"),
      Yes("0x10 == 16 && 0x10u == 16u"),
      Yes("1 < 1.5 && 2u > 1 && 1.0 <= 1u && -1 < 0u"),
      Yes(R"("abc" < "abd" && "b" > "abc")"),
      Yes("false < true"),
      Yes(R"("ab" + "c" == "abc")"),
      Yes("[1, 2] + [3] == [1, 2, 3]"),
      Yes("2 in [1, 2, 3] && !(4 in [1, 2, 3])"),
      Yes("size([1, 2, 3]) == 3 && size('héllo') == 5 && 'héllo'.size() == 5"),
      Yes("true ? true : false"),
      Yes("false ? 1 / 0 == 1 : true"),
      Yes("!!true"),
      Yes("--1 == 1"),
      Yes(R"("a\x41\u0042\101\n" == "aAB" + "A\n")"),
      Yes(R"(r"a\n" == 'a\\n')"),
      Yes(R"("""two
lines""" == 'two\nlines')"),
      Yes("true // a comment\n && true"),
      Yes("[1, 2][1] == 2"),
      Yes("null == null"),
      Yes(R"(device.attributes["dra.example.com"].n == 5.0)", d),
      Yes(R"(device.attributes["dra.example.com"].n == 5u)", d),
      No(R"(device.attributes["dra.example.com"].s == 5)", d),
      Yes(R"(device.attributes["dra.example.com"].s != 5)", d),
      No(R"(device.attributes["dra.example.com"].s == null)", d),
      Yes(R"(device.attributes["dra.example.com"].n < 5.5)", d),
      Yes(R"(device.attributes["dra.example.com"].s.endsWith("bc"))", d),
      Yes(R"(device.attributes["dra.example.com"].s.upperAscii() == "ABC")", d),
      Yes(R"(has(device.attributes["dra.example.com"].n))", d),
      No(R"(has(device.attributes["other"].n))", d),
      No(R"(has(device.attributes["dra.example.com"].s.x))", d),
      Err(R"(has(device.attributes["dra.example.com"].l.x))", StatusCode::kInvalidArgument,
          "unsupported index type 'string' in list", {{{"l", std::vector<bool>{true}}}}),
      Yes(R"(has(device.attributes.anything))", d),
      Yes(R"(size(device.attributes["dra.example.com"]) == 4)", d),
      // Errors are absorbed by a deciding && / ||, else propagate.
      No(R"(device.attributes["dra.example.com"].missing && false)", d),
      No(R"(false && device.attributes["dra.example.com"].missing)", d),
      Yes(R"(device.attributes["dra.example.com"].missing || true)", d),
      Err(R"(true && device.attributes["dra.example.com"].missing)", StatusCode::kInvalidArgument,
          "no such key: missing", d),
      // exists_one keeps the last error, all and exists the first.
      Err("[0, 5].exists_one(x, [1, 1][x] / x == 1)", StatusCode::kInvalidArgument,
          "index out of bounds: 5"),
      Err("[0, 5].all(x, [1, 1][x] / x == 1)", StatusCode::kInvalidArgument, "division by zero"),
      Err("[0, 5].exists(x, [1, 1][x] / x == 1)", StatusCode::kInvalidArgument, "division by zero"),
      No(R"([0, 1, 2].all(x, 1 / x == 2))"),
      Yes(R"([0, 1, 2].exists(x, 1 / x == 1))"),
      Yes(R"(["a", "b"].all(s, s.size() == 1) && !["a"].exists_one(s, s == "b"))"),
      Err(R"(device.attributes["dra.example.com"].s || false)", StatusCode::kInvalidArgument,
          "no such overload", d),
      Err(R"(device.attributes["dra.example.com"].big + 1 > 0)", StatusCode::kInvalidArgument,
          "integer overflow", d),
      Err(R"(-device.attributes["dra.example.com"].big - 2 < 0)", StatusCode::kInvalidArgument,
          "integer overflow", d),
      Err("0u - 1u == 0u", StatusCode::kInvalidArgument, "unsigned integer overflow"),
      Err("1 / 0 == 0", StatusCode::kInvalidArgument, "division by zero"),
      Err("1 % 0 == 0", StatusCode::kInvalidArgument, "modulus by zero"),
      Err("1u / 0u == 0u", StatusCode::kInvalidArgument, "division by zero"),
      Yes("1.0 / 0.0 > 1e308"),
      Err("[1][1] == 1", StatusCode::kInvalidArgument, "index out of bounds: 1"),
      Err(R"(device.attributes["dra.example.com"].n + "x" == "")", StatusCode::kInvalidArgument,
          "no such overload", d),
      Err(R"(device.attributes["dra.example.com"].s)", StatusCode::kInvalidArgument,
          "CEL result of type string could not be converted to bool", d),
      // Static type errors are compile errors, as in Kubernetes.
      Err("device.driver == 1", StatusCode::kMalformed, "no matching overload for '_==_'"),
      Err("1 == 1.0", StatusCode::kMalformed, "no matching overload"),
      Err("1 + 1.0 == 2.0", StatusCode::kMalformed, "no matching overload for '_+_'"),
      Err("1 + 1u == 2u", StatusCode::kMalformed, "no matching overload"),
      Err("-1u == 1u", StatusCode::kMalformed, "no matching overload for '-_'"),
      Err("1.5 % 1.0 == 0.5", StatusCode::kMalformed, "no matching overload for '_%_'"),
      Err(R"(device.driver == null)", StatusCode::kMalformed, "no matching overload"),
      Err(R"([1, "a"].size() == 2)", StatusCode::kMalformed,
          "expected type 'int' but found 'string'"),
      Err("device.foo", StatusCode::kMalformed, "undefined field 'foo'"),
      Err("gpu == 1", StatusCode::kMalformed, "undeclared reference to 'gpu'"),
      Err("gpu.size() == 1", StatusCode::kMalformed, "undeclared reference to 'gpu'"),
      Err("device.driver", StatusCode::kMalformed, "not string"),
      Err("device.driver.size()", StatusCode::kMalformed, "not int"),
      Err(R"("a".startsWith(1))", StatusCode::kMalformed, "no matching overload for 'startsWith'"),
      Err("1.x", StatusCode::kMalformed, "does not support field selection"),
      Err("true < 1", StatusCode::kMalformed, "no matching overload"),
      Err("!1", StatusCode::kMalformed, "no matching overload for '!_'"),
      Err("1 in 1", StatusCode::kMalformed, "no matching overload for '@in'"),
      Err(R"(device.attributes[1].x)", StatusCode::kMalformed, "no matching overload for '_[_]'"),
      Err(R"(quantity("1").sign() == 1)", StatusCode::kMalformed,
          "no matching overload for 'sign'"),
      Err(R"(startsWith("a", "b"))", StatusCode::kMalformed,
          "no matching overload for 'startsWith'"),
  });
}

TEST_CASE("dra cel: Kubernetes quantities") {
  const DeviceSpec d{{}, {{"memory", 16 * kGi}, {"cores", 1500}, {"huge", 1125899906842624000}}};
  Run({
      Yes(R"(quantity("1Ki") == quantity("1024"))"),
      Yes(R"(quantity("1k").compareTo(quantity("1000")) == 0 && quantity("1k").compareTo(quantity("999")) == 1)"),
      Yes(R"(quantity("500m").isLessThan(quantity("1")))"),
      Yes(R"(quantity("1.5Gi").isGreaterThan(quantity("1536Mi")) == false)"),
      Yes(R"(isQuantity("1.5Gi") && isQuantity("1e3") && isQuantity("+") && !isQuantity("1.5Gb") && !isQuantity("1ee3") && !isQuantity(""))"),
      Yes(R"(sign(quantity("-1")) == -1 && sign(quantity("0")) == 0 && sign(quantity("3n")) == 1)"),
      Yes(R"(quantity("1k").asInteger() == 1000 && quantity("1Ki").asInteger() == 1024)"),
      Yes(R"(quantity("1k").isInteger() && !quantity("1000m").isInteger() && !quantity("1.5Gi").isInteger())"),
      Yes(R"(!quantity("1Pi").isInteger() && quantity("1Ti").isInteger())"),
      Err(R"(quantity("1000m").asInteger() == 1)", StatusCode::kInvalidArgument,
          "cannot convert value to integer"),
      Yes(R"(quantity("1").add(quantity("500m")).compareTo(quantity("1500m")) == 0)"),
      Yes(R"(quantity("2").sub(1).asInteger() == 1 && quantity("1k").add(1).asInteger() == 1001)"),
      Yes(R"(quantity("1").add(1) == quantity("2"))"),
      Err(R"(quantity("2") == quantity("1").add(1))", StatusCode::kInvalidArgument,
          "no such overload"),
      Yes(R"(quantity("0.0000000001").compareTo(quantity("1n")) == 0)"),
      Err(R"(quantity("1Gi1").isInteger())", StatusCode::kInvalidArgument,
          "unable to parse quantity's suffix"),
      Err(R"(quantity("a").isInteger())", StatusCode::kInvalidArgument, "quantities must match"),
      Err(R"(quantity("1e40").isInteger())", StatusCode::kUnsupported, "quantity"),
      Yes(R"(device.capacity["dra.example.com"].memory.compareTo(quantity("16Gi")) == 0)", d),
      Yes(R"(device.capacity["dra.example.com"].memory.asInteger() == 17179869184)", d),
      Yes(R"(device.capacity["dra.example.com"].cores.compareTo(quantity("1.5")) == 0)", d),
      Yes(R"(!device.capacity["dra.example.com"].cores.isInteger())", d),
      Err(R"(device.capacity["dra.example.com"].huge.isInteger())", StatusCode::kUnsupported,
          "integer form", d),
      Yes(R"(device.capacity["dra.example.com"].huge.isGreaterThan(quantity("1Ti")))", d),
      Err(R"(device.capacity["dra.example.com"].missing.isInteger())", StatusCode::kInvalidArgument,
          "no such key: missing", d),
      Err(R"(quantity("1").asApproximateFloat() > 0.5)", StatusCode::kUnsupported,
          "asApproximateFloat"),
      Err(R"(quantity("1") < quantity("2"))", StatusCode::kMalformed, "no matching overload"),
      Err(R"(quantity("1").isGreaterThan(semver("1.0.0")))", StatusCode::kMalformed,
          "no matching overload"),
  });
}

TEST_CASE("dra cel: Kubernetes semantic versions") {
  const DeviceSpec d{{{"v", Ver("1.2.3-rc.1+build.5")}}};
  Run({
      Yes(R"(semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3)"),
      Yes(R"(semver("1.0.0-alpha").isLessThan(semver("1.0.0")))"),
      Yes(R"(semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta")))"),
      Yes(R"(semver("1.0.0-2").isLessThan(semver("1.0.0-10")))"),
      Yes(R"(semver("1.0.0+a") == semver("1.0.0+b"))"),
      Yes(R"(semver("v1.2", true) == semver("1.2.0") && semver("01.02.03", true) == semver("1.2.3"))"),
      Yes(R"(isSemver("1.2.3") && !isSemver("v1.2.3") && !isSemver("1.2") && !isSemver("01.2.3") && isSemver("1.2", true))"),
      Yes(R"(!isSemver("1.2-rc", true) && !isSemver("1.2.3-") && !isSemver("1.2.3-01") && !isSemver("1.2.3+"))"),
      Err(R"(semver("1.2").major() == 1)", StatusCode::kInvalidArgument,
          "No Major.Minor.Patch elements found"),
      Yes(R"(device.attributes["dra.example.com"].v.isLessThan(semver("1.2.3")))", d),
      Yes(R"(device.attributes["dra.example.com"].v == semver("1.2.3-rc.1"))", d),
      Yes(R"(device.attributes["dra.example.com"].v.compareTo(semver("1.2.3-rc.0")) == 1)", d),
      Err(R"(device.attributes["dra.example.com"].v.isLessThan(quantity("1")))",
          StatusCode::kInvalidArgument, "no such overload", d),
      Err("true", StatusCode::kInvalidArgument, "attribute bad: parse semantic version",
          {{{"bad", Ver("1.0")}}}),
  });
}

TEST_CASE("dra cel: constructs beyond the subset are unsupported, by name") {
  Run({
      Err(R"(device.attributes["d"].s.matches("^a"))", StatusCode::kUnsupported, "matches"),
      Err(R"({"a": 1}.size() == 1)", StatusCode::kUnsupported, "a map literal"),
      Err(R"(device.attributes["d"].?s.orValue("") == "")", StatusCode::kUnsupported,
          "optional field selection"),
      Err(R"(device.attributes["d"][?"s"].hasValue())", StatusCode::kUnsupported, "optional index"),
      Err(R"([?device.driver].size() == 1)", StatusCode::kUnsupported, "optional list element"),
      Err(R"(optional.of(1).hasValue())", StatusCode::kUnsupported, "hasValue"),
      Err(R"(optional.of(1) == optional.none())", StatusCode::kUnsupported, "optional.of"),
      Err(R"(int("1") == 1)", StatusCode::kUnsupported, "the function 'int'"),
      Err(R"(dyn(1) == 1)", StatusCode::kUnsupported, "the function 'dyn'"),
      Err(R"(type(1) == int)", StatusCode::kUnsupported, "the function 'type'"),
      Err(R"(int == int)", StatusCode::kUnsupported, "the type name 'int'"),
      Err(R"(b"abc".size() == 3)", StatusCode::kUnsupported, "a bytes literal"),
      Err(R"(Br'a' == b'a')", StatusCode::kUnsupported, "a bytes literal"),
      Err(R"([1].map(x, x + 1) == [2])", StatusCode::kUnsupported, "the function 'map'"),
      Err(R"([1].filter(x, x > 0).size() == 1)", StatusCode::kUnsupported, "the function 'filter'"),
      Err(R"({"a": 1}.all(k, v, v > 0))", StatusCode::kUnsupported, "a map literal"),
      Err(R"([1].all(i, v, v > 0))", StatusCode::kUnsupported, "the function 'all'"),
      Err(R"(sets.contains([1], [1]))", StatusCode::kUnsupported, "sets.contains"),
      Err(R"(timestamp("2024-01-01T00:00:00Z") < now)", StatusCode::kUnsupported, "timestamp"),
      Err(R"("a,b".split(",").size() == 2)", StatusCode::kUnsupported, "split"),
      Err(R"([1, 2].isSorted())", StatusCode::kUnsupported, "isSorted"),
      Err(R"(size("a", "b") == 1)", StatusCode::kMalformed, "no matching overload for 'size'"),
      Err(R"(google.protobuf.Int64Value{value: 1} == 1)", StatusCode::kUnsupported,
          "message construction"),
      Err(R"(.device.driver == "")", StatusCode::kUnsupported, "leading-dot"),
      Err("device.`a-b` == 1", StatusCode::kUnsupported, "backquoted"),
  });
}

TEST_CASE("dra cel: syntax errors are malformed at the offending byte") {
  struct Case {
    std::string expression;
    std::size_t offset;
    std::string message;
  };
  const Case cases[] = {
      {"device.driver ==", 16, "unexpected end of input"},
      {"1 +* 2", 3, "unexpected token"},
      {"\"abc", 0, "unterminated string"},
      {"'a\nb' == 'ab'", 0, "unterminated string"},
      {R"("\q" == "")", 1, "invalid escape"},
      {R"("\uD800" == "")", 1, "invalid escape"},
      {"1 = 2", 2, "token recognition error"},
      {"true ? 1", 8, "unexpected end of input"},
      {"a ? b ? c : d : e", 6, "unexpected token"},
      {"(true", 5, "unexpected end of input"},
      {"[1, 2", 5, "unexpected end of input"},
      {"f(1,)", 4, "unexpected token"},
      {"device.in", 7, "unexpected token"},
      {"has(device)", 4, "invalid argument to has() macro"},
      {"[1].all(1, true)", 8, "argument must be a simple name"},
      {"9223372036854775808 > 0", 0, "invalid int literal"},
      {"18446744073709551616u > 0u", 0, "invalid uint literal"},
      {"1e400 > 0.0", 0, "invalid double literal"},
      {"device.driver == 'x' \xff", 21, "invalid UTF-8"},
      {"!-device", 2, "unexpected token"},
      {"", 0, "unexpected end of input"},
      {"1 2", 2, "unexpected token"},
      {"0X10 == 16", 1, "unexpected token"},
      {"rb'a' == 'a'", 2, "unexpected token"},
      {"device.driver == 'a' && device.foo", 31, "undefined field 'foo'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.expression);
    auto selector = CompileSelector(c.expression);
    REQUIRE_FALSE(selector.ok());
    CAPTURE(selector.status().ToString());
    CHECK(selector.status().code() == StatusCode::kMalformed);
    CHECK(selector.status().offset() == c.offset);
    CHECK(std::string(selector.status().message()).find(c.message) != std::string::npos);
  }
}

TEST_CASE("dra cel: nesting and length are bounded") {
  const std::string deep = std::string(100, '(') + "true" + std::string(100, ')');
  auto refused = CompileSelector(deep);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kUnsupported);
  CHECK(std::string(refused.status().message()).find("nested more than 100 levels") !=
        std::string::npos);
  const std::string hostile = std::string(1000000, '[');
  CHECK(CompileSelector(hostile).status().code() == StatusCode::kMalformed);  // longer than 10 KiB
  std::string chain = "1";
  for (int i = 0; i < 150; ++i) chain += " + 1";
  CHECK(CompileSelector(chain + " == 151").status().code() == StatusCode::kUnsupported);
  std::string conjunction = "true";
  for (int i = 0; i < 500; ++i) conjunction += " && true";
  auto wide = CompileSelector(conjunction);
  REQUIRE(wide.ok());
  CHECK(*Matches(*wide, "d", Device{}));
  const std::string shallow = std::string(50, '(') + "true" + std::string(50, ')');
  REQUIRE(CompileSelector(shallow).ok());
}

}  // namespace
