// The Kubernetes quantity type alone (src/k8s/quantity.hpp): Go's
// ParseQuantity (forms, rounding, caps, errors), Add/Sub/AsInt64, and the
// exact and rounded-up views the objects.hpp functions are built on.
#include "src/k8s/quantity.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <string_view>

#include "devshare/objects.hpp"

namespace {

namespace k8s = devshare::k8s;
using Form = k8s::Quantity::Form;
using Outcome = k8s::QuantityParse::Outcome;
using Rounding = k8s::Quantity::Rounding;

constexpr k8s::i128 kNano = 1000000000;

k8s::Quantity Parsed(std::string_view text) {
  const k8s::QuantityParse p = k8s::ParseQuantity(text);
  REQUIRE_MESSAGE(p.outcome == Outcome::kOk, text);
  return p.quantity;
}

TEST_CASE("quantity: Go's forms and values") {
  struct Row {
    std::string_view text;
    k8s::i128 nano;
    Form form;
    std::int64_t value;  // kInt64Amount
    std::int32_t scale;  // kInt64Amount
    Rounding rounding;
  };
  const k8s::i128 kGi = k8s::i128{1} << 30;
  const Row rows[] = {
      {"0", 0, Form::kInt64Amount, 0, 0, Rounding::kExact},
      {"2", 2 * kNano, Form::kInt64Amount, 2, 0, Rounding::kExact},
      {"+3", 3 * kNano, Form::kInt64Amount, 3, 0, Rounding::kExact},
      {"-1500m", -1500000000, Form::kInt64Amount, -1500, -3, Rounding::kExact},
      {"1.5", 1500000000, Form::kInt64Amount, 15, -1, Rounding::kExact},
      {"1000m", kNano, Form::kInt64Amount, 1000, -3, Rounding::kExact},
      {"1k", 1000 * kNano, Form::kInt64Amount, 1, 3, Rounding::kExact},
      {"1e3", 1000 * kNano, Form::kInt64Amount, 1, 3, Rounding::kExact},
      {"2E-2", 20000000, Form::kInt64Amount, 2, -2, Rounding::kExact},
      {"7n", 7, Form::kInt64Amount, 7, -9, Rounding::kExact},
      {"16Gi", 16 * kGi * kNano, Form::kInt64Amount, 16 * (std::int64_t{1} << 30), 0,
       Rounding::kExact},
      {"0.5Ki", 512 * kNano, Form::kDec, 0, 0, Rounding::kExact},  // a binary fraction
      {"1Pi", (k8s::i128{1} << 50) * kNano, Form::kDec, 0, 0, Rounding::kExact},
      {"1234567890123456789", 1234567890123456789 * kNano, Form::kDec, 0, 0, Rounding::kExact},
      {"0.1n", 1, Form::kDec, 0, 0, Rounding::kAwayFromZero},
      {"-0.1n", -1, Form::kDec, 0, 0, Rounding::kAwayFromZero},
      {"1e-50", 1, Form::kDec, 0, 0, Rounding::kAwayFromZero},
      {"1.0000000001", kNano + 1, Form::kDec, 0, 0, Rounding::kAwayFromZero},
      {"8Ei", k8s::i128{INT64_MAX} * kNano, Form::kDec, 0, 0, Rounding::kCapped},
      {"-9Ei", -k8s::i128{INT64_MAX} * kNano, Form::kDec, 0, 0, Rounding::kCapped},
      // As Go: no digits read as 0; a zero is zero at any exponent.
      {".", 0, Form::kInt64Amount, 0, 0, Rounding::kExact},
      {"-", 0, Form::kInt64Amount, 0, 0, Rounding::kExact},
      {"Ki", 0, Form::kInt64Amount, 0, 0, Rounding::kExact},
      {"0e60", 0, Form::kInt64Amount, 0, 60, Rounding::kExact},
      // Go truncates the exponent to int32: 2^32 + 1 is 1.
      {"1e4294967297", 10 * kNano, Form::kInt64Amount, 1, 1, Rounding::kExact},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const k8s::Quantity q = Parsed(row.text);
    CHECK((q.nano == row.nano));
    CHECK(q.form == row.form);
    CHECK(q.rounding == row.rounding);
    if (row.form == Form::kInt64Amount) {
      CHECK(q.value == row.value);
      CHECK(q.scale == row.scale);
    }
  }
}

TEST_CASE("quantity: Go's errors, and what it cannot hold") {
  struct Row {
    std::string_view text;
    Outcome outcome;
    std::string_view error;
  };
  const Row rows[] = {
      {"", Outcome::kInvalid, k8s::kQuantityFormatError},
      {"abc", Outcome::kInvalid, k8s::kQuantityFormatError},
      {"1 ", Outcome::kInvalid, k8s::kQuantityFormatError},
      {"1.2.3", Outcome::kInvalid, k8s::kQuantityFormatError},
      {"1Gb", Outcome::kInvalid, k8s::kQuantityFormatError},
      {"5ki", Outcome::kInvalid, k8s::kQuantitySuffixError},
      {"1e", Outcome::kInvalid, k8s::kQuantitySuffixError},
      {"1e99999999999999999999", Outcome::kInvalid, k8s::kQuantitySuffixError},
      {"1Q", Outcome::kInvalid, k8s::kQuantityFormatError},
      {"1e30", Outcome::kUnrepresentable, ""},
      {"100000000000000000000000000000000000000000", Outcome::kUnrepresentable, ""},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const k8s::QuantityParse p = k8s::ParseQuantity(row.text);
    CHECK(p.outcome == row.outcome);
    CHECK(p.error == row.error);
  }
  CHECK(k8s::kQuantityFormatError ==
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
}

TEST_CASE("quantity: AsInt64 depends on how Go holds the value") {
  struct Row {
    std::string_view text;
    std::optional<std::int64_t> as_int64;
  };
  const Row rows[] = {
      {"1k", 1000},
      {"1e3", 1000},
      {"1000m", std::nullopt},
      {"1Pi", std::nullopt},
      {"16Gi", 17179869184LL},
      {"-2", -2},
      {"9e18", 9000000000000000000},          // int64Amount{9, 18}
      {"1e19", std::nullopt},                 // int64Amount{1, 19}: beyond int64
      {"9223372036854775807", std::nullopt},  // 19 digits: an inf.Dec
      // Zero at an exponent of int32(10643437028) = 2053502436: zero at
      // once, not after two billion multiplications.
      {"0000000e10643437028", 0},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    CHECK(k8s::GoAsInt64(Parsed(row.text)) == row.as_int64);
  }
  CHECK(k8s::GoAsInt64(k8s::QuantityOfUnits(-5)) == -5);
}

TEST_CASE("quantity: Add and Sub keep Go's form") {
  const auto sum = k8s::AddQuantities(Parsed("1"), Parsed("500m"));
  REQUIRE(sum);
  CHECK((sum->nano == 1500000000));
  CHECK(sum->form == Form::kInt64Amount);
  CHECK(sum->value == 1500);
  CHECK(sum->scale == -3);

  const auto whole = k8s::AddQuantities(Parsed("1k"), Parsed("1"));
  REQUIRE(whole);
  CHECK(k8s::GoAsInt64(*whole) == 1001);

  const auto dec = k8s::AddQuantities(Parsed("1Pi"), Parsed("1"));
  REQUIRE(dec);
  CHECK(dec->form == Form::kDec);
  CHECK_FALSE(k8s::GoAsInt64(*dec));

  const auto unknown =
      k8s::AddQuantities(k8s::QuantityOfCanonicalMilli(200000000000000000), Parsed("1"));
  REQUIRE(unknown);
  CHECK(unknown->form == Form::kUnknown);

  const auto diff = k8s::SubQuantities(Parsed("1"), Parsed("3"));
  REQUIRE(diff);
  CHECK((diff->nano == -2 * kNano));
  CHECK(k8s::GoAsInt64(*diff) == -2);

  // Overflowing int64 at the finer scale leaves the int64Amount form.
  const auto wide = k8s::AddQuantities(Parsed("9e18"), Parsed("1n"));
  REQUIRE(wide);
  CHECK(wide->form == Form::kDec);
  CHECK((wide->nano == k8s::i128{9000000000000000000} * kNano + 1));

  const k8s::i128 max = (~k8s::i128{0} & ~(k8s::i128{1} << 127));
  k8s::Quantity big;
  big.nano = max;
  big.form = Form::kDec;
  CHECK_FALSE(k8s::AddQuantities(big, Parsed("1n")));
}

TEST_CASE("quantity: the capacities a Go scheduler parses from canonical text") {
  const k8s::Quantity fraction = k8s::QuantityOfCanonicalMilli(1500);
  CHECK(fraction.form == Form::kInt64Amount);
  CHECK(fraction.value == 1500);
  CHECK(fraction.scale == -3);
  const k8s::Quantity whole = k8s::QuantityOfCanonicalMilli(42000);
  CHECK(whole.value == 42);
  CHECK(whole.scale == 0);
  CHECK(k8s::QuantityOfCanonicalMilli(100000000000000000).form == Form::kUnknown);
  CHECK(k8s::QuantityOfCanonicalMilli(-100000000000000000).form == Form::kUnknown);
  CHECK(k8s::QuantityOfCanonicalMilli(99999999999999000).form == Form::kInt64Amount);
}

TEST_CASE("quantity: exact and rounded-up views") {
  struct Row {
    std::string_view text;
    std::optional<std::int64_t> exact, exact_milli, ceil, ceil_milli;
  };
  const Row rows[] = {
      {"2", 2, 2000, 2, 2000},
      {"1500m", std::nullopt, 1500, 2, 1500},
      {"-1500m", std::nullopt, -1500, -1, -1500},  // ceil is towards +infinity
      {"1n", std::nullopt, std::nullopt, 1, 1},
      {"-1n", std::nullopt, std::nullopt, 0, 0},
      {"0.5Ki", 512, 512000, 512, 512000},
      {"1000m", 1, 1000, 1, 1000},  // by value, unlike GoAsInt64
      {"1Pi", 1125899906842624, 1125899906842624000, 1125899906842624, 1125899906842624000},
      {"0.1n", std::nullopt, std::nullopt, 1, 1},  // rounded to 1n: never exact
      {"0.9999999999", std::nullopt, std::nullopt, 1, 1000},
      {"-0.9999999999", std::nullopt, std::nullopt, 0, -999},  // Go's -1 is not the value
      {"-1.0000000001", std::nullopt, std::nullopt, -1, -1000},
      {"9223372036854775807", 9223372036854775807, std::nullopt, 9223372036854775807, std::nullopt},
      {"-9223372036854775808", INT64_MIN, std::nullopt, INT64_MIN, std::nullopt},
      {"9223372036854775808", std::nullopt, std::nullopt, std::nullopt, std::nullopt},
      {"8Ei", std::nullopt, std::nullopt, std::nullopt, std::nullopt},  // capped: beyond int64
      {"1e20", std::nullopt, std::nullopt, std::nullopt, std::nullopt},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    const k8s::Quantity q = Parsed(row.text);
    CHECK(k8s::ExactScaled(q, 0) == row.exact);
    CHECK(k8s::ExactScaled(q, 3) == row.exact_milli);
    CHECK(k8s::CeilScaled(q, 0) == row.ceil);
    CHECK(k8s::CeilScaled(q, 3) == row.ceil_milli);
  }
}

TEST_CASE("quantity: the objects.hpp functions read text with a digit only") {
  for (std::string_view text : {"", ".", "-", "+.", "Ki", "e3", "abc"}) {
    CAPTURE(text);
    CHECK_FALSE(devshare::QuantityAsInt64(text));
    CHECK_FALSE(devshare::QuantityValue(text));
    CHECK_FALSE(devshare::QuantityMilliValue(text));
    CHECK_FALSE(devshare::QuantityExactMilli(text));
  }
  CHECK(devshare::QuantityAsInt64(".5Ki") == 512);
  CHECK(devshare::QuantityAsInt64("0") == 0);
  CHECK(devshare::QuantityValue("-1500m") == -1);
  CHECK(devshare::QuantityMilliValue("1.0001") == 1001);
  CHECK(devshare::QuantityExactMilli("1.0001") == std::nullopt);
  CHECK(devshare::QuantityExactMilli("16Gi") == 17179869184000);
  // Exponents as Go reads them, however far out.
  CHECK(devshare::QuantityAsInt64("0e2000") == 0);
  CHECK(devshare::QuantityValue("1e-2000") == 1);
  CHECK(devshare::QuantityAsInt64("1e-2000") == std::nullopt);
  CHECK(devshare::QuantityAsInt64("5e4294967296") == 5);  // int32(2^32) is 0
}

}  // namespace
