// Private (k8s layer): the one Kubernetes resource quantity
// (k8s.io/apimachinery/pkg/api/resource.Quantity), read as Go's
// ParseQuantity reads it. The quantity functions of objects.hpp (pod and
// node resources, DRA amounts) and the CEL quantity library of DRA
// selectors are both built on it.
#ifndef DEVSHARE_SRC_K8S_QUANTITY_HPP_
#define DEVSHARE_SRC_K8S_QUANTITY_HPP_

#include <cstdint>
#include <optional>
#include <string_view>

namespace devshare::k8s {

__extension__ using i128 = __int128;

// A quantity as Go holds it after ParseQuantity. The value is exact in nano
// units, after Go's own rounding (see `rounding`). How Go holds it is kept
// too, since AsInt64 and Add depend on it, not only on the value ("1000m"
// is not an integer to AsInt64, "1k" is).
struct Quantity {
  enum class Form : std::uint8_t {
    kInt64Amount,  // value * 10^scale, as resource.int64Amount
    kDec,          // an inf.Dec: never an integer to AsInt64
    kUnknown,      // from an amount whose text, and so Go's form, is unknown
  };
  // How `nano` relates to the value the text wrote.
  enum class Rounding : std::uint8_t {
    kExact,
    kAwayFromZero,  // finer than 1n: |nano| is the next nano away from zero
    kCapped,        // beyond 2^63-1 with a binary suffix: capped there
  };

  i128 nano = 0;
  std::int64_t value = 0;  // kInt64Amount
  std::int32_t scale = 0;  // kInt64Amount, >= -9
  Form form = Form::kInt64Amount;
  Rounding rounding = Rounding::kExact;
};

// What ParseQuantity read.
struct QuantityParse {
  enum class Outcome : std::uint8_t {
    kOk,
    kInvalid,          // not a quantity to Go: `error` says why
    kUnrepresentable,  // a quantity, but beyond what Quantity holds (|nano| >= 2^127)
  };
  Outcome outcome = Outcome::kInvalid;
  Quantity quantity;       // when kOk
  std::string_view error;  // Go's message when kInvalid (static storage)
};

// Go's error texts.
inline constexpr std::string_view kQuantityFormatError =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
inline constexpr std::string_view kQuantitySuffixError = "unable to parse quantity's suffix";

// resource.ParseQuantity: a sign, digits with at most one '.', then a
// suffix (n u m "" k M G T P E, Ki..Ei, or e/E and a Go int64 that Go
// truncates to int32). As Go: "", "+" alone, "." and "Ki" read as 0; the
// int64Amount fast path when at most 18 digits fit at a scale >= -9, else
// the inf.Dec path, which rounds away from zero to 1n and caps binary
// suffixes at 2^63-1. Total: never throws.
QuantityParse ParseQuantity(std::string_view str);

// The quantity of `units` as resource.NewQuantity makes it (int64Amount).
Quantity QuantityOfUnits(std::int64_t units);

// The quantity a Go program holds after parsing the API server's
// canonical text of `milli` thousandths: "<m>m" for a fraction, digits (or
// a suffix) for a whole number. Below 1e14 every canonical form of a whole
// number takes the int64Amount path with a scale >= 0, which AsInt64
// treats alike; above it the form decides (1Pi is an inf.Dec,
// 1125899906842624 is not), so it is kUnknown.
Quantity QuantityOfCanonicalMilli(std::int64_t milli);

// Quantity.Add (quantity.go, amount.go): the sum, an int64Amount when
// both are and the sum fits at the finer scale, else kDec (kUnknown when
// either is). nullopt when the sum leaves the range of `nano`.
std::optional<Quantity> AddQuantities(const Quantity& a, const Quantity& b);

// Quantity.Sub: Add of the negated amount (Go's int64 negation wraps).
std::optional<Quantity> SubQuantities(const Quantity& a, const Quantity& b);

// Quantity.AsInt64: the value when Go holds it as an int64Amount with a
// scale >= 0 that fits int64; nullopt otherwise (kDec, a negative scale,
// overflow). Meaningless for kUnknown: the caller decides.
std::optional<std::int64_t> GoAsInt64(const Quantity& q);

// The value the text wrote, times 10^exp10 (0 <= exp10 <= 9): exactly,
// nullopt when that is not a whole number or does not fit int64.
std::optional<std::int64_t> ExactScaled(const Quantity& q, int exp10);

// The same rounded up (towards +infinity); nullopt when it does not fit.
std::optional<std::int64_t> CeilScaled(const Quantity& q, int exp10);

}  // namespace devshare::k8s

#endif  // DEVSHARE_SRC_K8S_QUANTITY_HPP_
