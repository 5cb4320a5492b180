// The CEL selector evaluator alone (src/dra/cel/eval.hpp) on checked
// trees, with the `device` environment of src/dra/cel/device.hpp: values,
// CEL's runtime errors, error absorption by && and ||, comprehensions and
// the quantity and semver functions.
#include "src/dra/cel/eval.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <variant>

#include "src/dra/cel/checker.hpp"
#include "src/dra/cel/device.hpp"
#include "src/dra/cel/parser.hpp"

namespace {

namespace cel = devshare::dra::cel;
namespace dra = devshare::dra;

constexpr std::string_view kDriver = "gpu.example.com";

dra::Device SampleDevice() {
  dra::Device d;
  d.name = "gpu-0";
  d.attributes["model"] = std::string("A100");
  d.attributes["index"] = std::int64_t{3};
  d.attributes["healthy"] = true;
  d.attributes["driverVersion"] = dra::Version{"1.2.3-rc.1"};
  d.attributes["cores"] = std::vector<std::int64_t>{0, 1, 2};
  d.attributes["resource.kubernetes.io/pcieRoot"] = std::string("pci0");
  d.capacity["memory"] = dra::Capacity{{40LL * 1024 * 1024 * 1024 * 1000}, {}};
  d.capacity["share"] = dra::Capacity{{1500}, {}};
  d.capacity["huge"] = dra::Capacity{{200000000000000LL * 1000}, {}};
  return d;
}

std::string Decimal(devshare::k8s::i128 v) {
  if (v < 0) return "-" + Decimal(-v);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return digits;
}

// The value shown by type: 3, 3u, 1.5d, "s", true, null, [..], q(<nano>), v(<text>).
std::string Show(const cel::Value& v) {
  if (const auto* b = cel::As<bool>(v)) return *b ? "true" : "false";
  if (const auto* i = cel::As<std::int64_t>(v)) return std::to_string(*i);
  if (const auto* u = cel::As<std::uint64_t>(v)) return std::to_string(*u) + "u";
  if (const auto* d = cel::As<double>(v)) return fmt::format("{}d", *d);
  if (const auto* s = cel::As<std::string>(v)) return fmt::format("{:?}", *s);
  if (const auto* l = cel::As<std::shared_ptr<const cel::List>>(v)) {
    std::string out = "[";
    for (const cel::Value& e : **l) out += (out.size() > 1 ? ", " : "") + Show(e);
    return out + "]";
  }
  if (const auto* q = cel::As<cel::QuantityValue>(v)) {
    return "q(" + Decimal(q->quantity.nano) + ")";
  }
  if (const auto* s = cel::As<std::shared_ptr<const cel::Semver>>(v)) {
    return fmt::format("v({}.{}.{})", (*s)->major, (*s)->minor, (*s)->patch);
  }
  if (cel::As<cel::MapValue>(v)) return "map";
  return "null";
}

// The result of `src` on SampleDevice(): Show() of the value, or
// "error: <message>" / "unsupported: <message>".
std::string Run(std::string_view src) {
  cel::Errors errors(src);
  cel::NodePtr root = cel::Parse(src, errors);
  if (root == nullptr || !cel::Check(*root, errors)) return "compile: " + errors.take().ToString();
  devshare::Result<cel::Value> device = cel::DeviceValue(kDriver, SampleDevice());
  REQUIRE(device.ok());
  const cel::Out out = cel::Evaluate(*root, *device);
  if (const auto* e = std::get_if<cel::Error>(&out)) {
    return (e->unsupported ? "unsupported: " : "error: ") + e->message;
  }
  return Show(std::get<cel::Value>(out));
}

struct Row {
  std::string_view src;
  std::string_view result;
};

void CheckRows(std::initializer_list<Row> rows) {
  for (const Row& row : rows) {
    CAPTURE(row.src);
    CHECK(Run(row.src) == row.result);
  }
}

TEST_CASE("cel eval: the device environment") {
  CheckRows({
      {"device.driver", R"("gpu.example.com")"},
      {"device.allowMultipleAllocations", "false"},
      {"device.attributes['gpu.example.com'].model", R"("A100")"},
      {"device.attributes['gpu.example.com'].index", "3"},
      {"device.attributes['gpu.example.com'].cores", "[0, 1, 2]"},
      {"device.attributes['gpu.example.com'].driverVersion", "v(1.2.3)"},
      {"device.attributes['resource.kubernetes.io'].pcieRoot", R"("pci0")"},
      {"device.attributes['other.io']", "map"},  // an unknown domain is empty
      {"device.attributes['gpu.example.com'].missing", "error: no such key: missing"},
      {"has(device.attributes['other.io'].x)", "false"},
      {"has(device.attributes.x)", "true"},  // defaulted maps have every domain
      {"device.capacity['gpu.example.com'].memory", "q(42949672960000000000)"},
      {"device.capacity['gpu.example.com'].share", "q(1500000000)"},
  });
  dra::Device bad;
  bad.attributes["v"] = dra::Version{"1.2"};
  const devshare::Result<cel::Value> refused = cel::DeviceValue(kDriver, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == devshare::StatusCode::kInvalidArgument);
  CHECK(refused.status().message() ==
        "attribute v: parse semantic version: No Major.Minor.Patch elements found");
}

TEST_CASE("cel eval: operators and their runtime errors") {
  CheckRows({
      {"1 + 2 * 3", "7"},
      {"7 / 2", "3"},
      {"-7 % 3", "-1"},
      {"9223372036854775807 + 1", "error: integer overflow"},
      {"-9223372036854775808 / -1", "error: integer overflow"},
      {"-(-9223372036854775807 - 1)", "error: integer overflow"},
      {"0u - 1u", "error: unsigned integer overflow"},
      {"1 / 0", "error: division by zero"},
      {"1 % 0", "error: modulus by zero"},
      {"1.0 / 0.0", "infd"},
      {"'a' + 'b'", R"("ab")"},
      {"[1] + [2, 3]", "[1, 2, 3]"},
      {"device.attributes['gpu.example.com'].index == 3.0", "true"},
      {"device.attributes['gpu.example.com'].index == 3u", "true"},
      {"1u < -1", "false"},
      {"2 > 1.5", "true"},
      {"0.0/0.0 == 0.0/0.0", "false"},
      {"0.0/0.0 < 1.0", "error: NaN values cannot be ordered"},
      {"'a' < 'b'", "true"},
      {"false < true", "true"},
      {"[1, 2] != [2, 1]", "true"},
      {"2 in [1, 2]", "true"},
      {"'model' in device.attributes['gpu.example.com']", "true"},
      {"true ? 'y' : 'n'", R"("y")"},
      {"device.attributes['gpu.example.com'].model + 1", "error: no such overload"},
      {"[1, 2][2]", "error: index out of bounds: 2"},
      {"device.attributes['gpu.example.com'].cores[1u]", "1"},
      {"device.attributes['gpu.example.com'].cores[2.0]", "2"},
      {"device.attributes['gpu.example.com'].cores[1.5]",
       "error: unsupported index value 1.5 in list"},
      {"device.attributes['gpu.example.com'].cores['a']",
       "error: unsupported index type 'string' in list"},
  });
}

TEST_CASE("cel eval: && and || absorb an error the other side decides") {
  CheckRows({
      {"device.attributes['x.io'].a == 1 || true", "true"},
      {"true || device.attributes['x.io'].a == 1", "true"},
      {"false && 1 / 0 == 1", "false"},
      {"1 / 0 == 1 && false", "false"},
      {"1 / 0 == 1 && true", "error: division by zero"},
      {"false || 1 / 0 == 1", "error: division by zero"},
      {"1 / 0 == 1 || 1 % 0 == 1 || false", "error: division by zero"},  // the first error
      {"device.attributes['gpu.example.com'].model || true", "true"},
      {"device.attributes['gpu.example.com'].model || false", "error: no such overload"},
      {"!device.attributes['gpu.example.com'].model", "error: no such overload"},
  });
}

TEST_CASE("cel eval: comprehensions") {
  CheckRows({
      {"[1, 2, 3].all(x, x > 0)", "true"},
      {"[1, 2, 3].all(x, x > 1)", "false"},
      {"[1, 2, 3].exists(x, x == 2)", "true"},
      {"[1, 2, 3].exists_one(x, x > 1)", "false"},
      {"[1, 2, 3].existsOne(x, x > 2)", "true"},
      {"device.attributes['gpu.example.com'].exists(k, k == 'model')", "true"},
      {"[0, 1].all(x, 1 / x > 0)", "error: division by zero"},
      {"[0, 1].exists(x, 1 / x > 0)", "true"},  // a true absorbs the error
      {"[1, 0].exists_one(x, 1 / x > 0)", "error: division by zero"},
      {"device.attributes['gpu.example.com'].model.all(x, true)",
       "error: got 'types.String', expected iterable type"},
  });
}

TEST_CASE("cel eval: strings, quantities and semantic versions") {
  CheckRows({
      {"size('héllo')", "5"},
      {"size([1, 2])", "2"},
      {"'GPU-a'.lowerAscii()", R"("gpu-a")"},
      {"'abc'.contains('bc') && 'abc'.startsWith('ab') && 'abc'.endsWith('c')", "true"},
      {"[1, 2].includes(2)", "true"},
      {"quantity('1Gi')", "q(1073741824000000000)"},
      {"quantity('1.5')", "q(1500000000)"},
      {"quantity('x')",
       "error: quantities must match the regular expression "
       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
      {"quantity('5ki')", "error: unable to parse quantity's suffix"},
      {"quantity('1e40')",
       "unsupported: quantity(\"1e40\") beyond the quantities devshare holds exactly"},
      {"isQuantity('1e40') && !isQuantity('5ki')", "true"},
      {"sign(quantity('-1m'))", "-1"},
      {"quantity('1k').asInteger()", "1000"},
      {"quantity('1000m').isInteger()", "false"},
      {"quantity('1000m').asInteger()", "error: cannot convert value to integer"},
      {"quantity('1Pi').isInteger()", "false"},  // an inf.Dec
      {"quantity('1').add(quantity('500m'))", "q(1500000000)"},
      {"quantity('1').sub(2)", "q(-1000000000)"},
      {"quantity('1').add(1).asInteger()", "2"},
      {"quantity('1') == quantity('1000m')", "true"},
      {"quantity('1') == quantity('1').add(0)", "error: no such overload"},  // a boxed quantity
      {"quantity('1').add(0) == quantity('1')", "true"},  // the boxed receiver accepts
      {"quantity('2').isGreaterThan(quantity('1500m'))", "true"},
      {"device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi'))", "0"},
      {"device.capacity['gpu.example.com'].share.isInteger()", "false"},
      {"device.capacity['gpu.example.com'].memory.asInteger()", "42949672960"},
      {"device.capacity['gpu.example.com'].huge.isInteger()",
       "unsupported: the integer form of a capacity of 1e14 or more, beyond the quantities "
       "devshare holds exactly"},
      {"semver('1.2.3').minor()", "2"},
      {"semver('v1.2', true).patch()", "0"},
      {"semver('1.2')", "error: No Major.Minor.Patch elements found"},
      {"isSemver('1.2.3-rc.1+build')", "true"},
      {"semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", "true"},
      {"semver('1.0.0-2').compareTo(semver('1.0.0-10'))", "-1"},
      {"device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.2.2'))", "true"},
      {"semver('1.0.0') == semver('1.0.0+b')", "true"},
  });
}

}  // namespace
