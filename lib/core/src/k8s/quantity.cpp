// Kubernetes quantities (k8s.io/apimachinery/pkg/api/resource) as Go's
// ParseQuantity, Add, Sub and AsInt64 treat them (quantity.hpp).
#include "k8s/quantity.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "base/text.hpp"

namespace devshare::k8s {
namespace {

bool MulI128(i128 a, i128 b, i128& out) { return __builtin_mul_overflow(a, b, &out); }

constexpr int kMaxPow10 = 38;  // 10^38 < 2^127 < 10^39
constexpr auto kPow10 = [] {
  std::array<i128, kMaxPow10 + 1> t{};
  t[0] = 1;
  for (std::size_t i = 1; i < t.size(); ++i) t[i] = t[i - 1] * 10;
  return t;
}();

// 10^n when it fits.
std::optional<i128> Pow10(int n) {
  if (n < 0 || n > kMaxPow10) return std::nullopt;
  return kPow10[static_cast<std::size_t>(n)];
}

// value * 10^(scale + 9), when it fits; zero at any scale.
std::optional<i128> NanoOf(std::int64_t value, std::int32_t scale) {
  if (value == 0) return 0;
  if (scale + 9 < 0) return std::nullopt;  // int64Amount scales are >= -9
  // |value| < 2^63 and 10^19 < 2^64: the product fits without a check.
  if (scale + 9 <= 19) return static_cast<i128>(value) * kPow10[scale + 9];
  const auto p = Pow10(scale + 9);
  i128 r = 0;
  if (!p || MulI128(value, *p, r)) return std::nullopt;
  return r;
}

// positiveScaleInt64 (math.go): value * 10^scale when it fits int64.
std::optional<std::int64_t> PositiveScale(std::int64_t value, std::int32_t scale) {
  if (value == 0) return 0;  // at any scale; other values overflow within 19 steps
  std::int64_t r = value;
  for (std::int32_t i = 0; i < scale; ++i) {
    if (__builtin_mul_overflow(r, std::int64_t{10}, &r)) return std::nullopt;
  }
  return r;
}

// One of "eEinumkKMGTP", the letters of suffixes.
bool IsSuffixLetter(char c) {
  static constexpr std::string_view kLetters = "eEinumkKMGTP";
  return std::find(kLetters.begin(), kLetters.end(), c) != kLetters.end();
}

}  // namespace

QuantityParse ParseQuantity(std::string_view str) {
  QuantityParse out;
  if (str.empty()) {
    out.error = kQuantityFormatError;
    return out;
  }
  // parseQuantityString.
  std::size_t pos = 0;
  bool positive = true;
  if (str[0] == '-' || str[0] == '+') {
    positive = str[0] == '+';
    ++pos;
  }
  while (pos < str.size() && str[pos] == '0') ++pos;
  std::string_view num;
  std::string_view denom;
  std::size_t i = pos;
  while (i < str.size() && internal::IsAsciiDigit(str[i])) ++i;
  num = str.substr(pos, i - pos);
  if (num.empty()) num = "0";
  if (i < str.size() && str[i] == '.') {
    const std::size_t d = ++i;
    while (i < str.size() && internal::IsAsciiDigit(str[i])) ++i;
    denom = str.substr(d, i - d);
  }
  const std::size_t suffix_start = i;
  while (i < str.size() && IsSuffixLetter(str[i])) ++i;
  if (i < str.size() && (str[i] == '-' || str[i] == '+')) ++i;
  while (i < str.size() && internal::IsAsciiDigit(str[i])) ++i;
  if (i < str.size()) {
    out.error = kQuantityFormatError;
    return out;
  }
  const std::string_view suffix = str.substr(suffix_start);

  // quantitySuffixer.interpret.
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };
  struct Known {
    std::string_view text;
    int base;
    std::int32_t exponent;
    Format format;
  };
  static constexpr Known kKnown[] = {
      {"", 10, 0, Format::kDecimalSI},   {"n", 10, -9, Format::kDecimalSI},
      {"u", 10, -6, Format::kDecimalSI}, {"m", 10, -3, Format::kDecimalSI},
      {"k", 10, 3, Format::kDecimalSI},  {"M", 10, 6, Format::kDecimalSI},
      {"G", 10, 9, Format::kDecimalSI},  {"T", 10, 12, Format::kDecimalSI},
      {"P", 10, 15, Format::kDecimalSI}, {"E", 10, 18, Format::kDecimalSI},
      {"Ki", 2, 10, Format::kBinarySI},  {"Mi", 2, 20, Format::kBinarySI},
      {"Gi", 2, 30, Format::kBinarySI},  {"Ti", 2, 40, Format::kBinarySI},
      {"Pi", 2, 50, Format::kBinarySI},  {"Ei", 2, 60, Format::kBinarySI},
  };
  int base = 10;
  std::int32_t exponent = 0;
  Format format = Format::kDecimalExponent;
  bool known = false;
  for (const Known& k : kKnown) {
    if (k.text == suffix) {
      base = k.base;
      exponent = k.exponent;
      format = k.format;
      known = true;
      break;
    }
  }
  if (!known) {
    const auto parsed = suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')
                            ? internal::ParseGoInt(suffix.substr(1), 64)
                            : std::nullopt;
    if (!parsed) {
      out.error = kQuantitySuffixError;
      return out;
    }
    exponent = static_cast<std::int32_t>(static_cast<std::uint32_t>(*parsed));  // Go's int32()
  }
  out.outcome = QuantityParse::Outcome::kUnrepresentable;

  // The int64Amount fast path.
  std::int32_t precision = 0;
  std::int32_t scale = 0;
  std::int64_t mantissa = 1;
  const auto digits = static_cast<std::int32_t>(num.size() + denom.size());
  if (format == Format::kBinarySI) {
    if (exponent >= 0 && denom.empty()) {
      mantissa = std::int64_t{1} << exponent;
      precision = 15 - static_cast<std::int32_t>(num.size()) - exponent * 3 / 10 - 1;
    } else {
      precision = -1;
    }
  } else {
    scale = exponent;
    precision = 18 - digits;
  }
  if (precision >= 0) {
    scale -= static_cast<std::int32_t>(denom.size());
    if (scale >= -9) {
      std::int64_t value = 0;
      for (char c : num) value = value * 10 + (c - '0');
      for (char c : denom) value = value * 10 + (c - '0');
      std::int64_t result = 0;
      if (!__builtin_mul_overflow(value, mantissa, &result)) {
        if (!positive) result = -result;
        const auto nano = NanoOf(result, scale);
        if (!nano) return out;
        out.quantity.nano = *nano;
        out.quantity.value = result;
        out.quantity.scale = scale;
        out.outcome = QuantityParse::Outcome::kOk;
        return out;
      }
    }
  }

  // The inf.Dec path: exact, then rounded up (away from zero) to 1n and,
  // for binary suffixes, capped at 2^63-1.
  Quantity::Rounding rounding = Quantity::Rounding::kExact;
  i128 magnitude = 0;
  for (std::string_view part : {num, denom}) {
    for (char c : part) {
      if (MulI128(magnitude, 10, magnitude) ||
          __builtin_add_overflow(magnitude, c - '0', &magnitude)) {
        return out;
      }
    }
  }
  const std::int64_t exp10 =
      9 - static_cast<std::int64_t>(denom.size()) + (base == 10 ? exponent : 0);
  if (base == 2) {
    for (std::int32_t k = 0; k < exponent; ++k) {
      if (MulI128(magnitude, 2, magnitude)) return out;
    }
  }
  if (exp10 >= 0) {
    const auto p = exp10 <= 40 ? Pow10(static_cast<int>(exp10)) : std::nullopt;
    if (magnitude != 0 && (!p || MulI128(magnitude, *p, magnitude))) return out;
  } else {
    const auto p = -exp10 <= 38 ? Pow10(static_cast<int>(-exp10)) : std::nullopt;
    const bool inexact = p ? magnitude % *p != 0 : magnitude != 0;
    if (inexact) rounding = Quantity::Rounding::kAwayFromZero;
    magnitude = p ? magnitude / *p + (inexact ? 1 : 0) : (inexact ? 1 : 0);
  }
  if (format == Format::kBinarySI) {
    const i128 cap = static_cast<i128>(std::numeric_limits<std::int64_t>::max()) * 1000000000;
    if (magnitude > cap) {
      magnitude = cap;
      rounding = Quantity::Rounding::kCapped;
    }
  }
  out.quantity.nano = positive ? magnitude : -magnitude;
  out.quantity.form = Quantity::Form::kDec;
  out.quantity.rounding = rounding;
  out.outcome = QuantityParse::Outcome::kOk;
  return out;
}

Quantity QuantityOfUnits(std::int64_t units) {
  Quantity q;
  q.nano = static_cast<i128>(units) * 1000000000;
  q.value = units;
  return q;
}

Quantity QuantityOfCanonicalMilli(std::int64_t milli) {
  Quantity q;
  q.nano = static_cast<i128>(milli) * 1000000;
  if (milli % 1000 != 0) {
    q.value = milli;
    q.scale = -3;
  } else if (milli / 1000 < 100000000000000 && milli / 1000 > -100000000000000) {
    q.value = milli / 1000;
  } else {
    q.form = Quantity::Form::kUnknown;
  }
  return q;
}

std::optional<Quantity> AddQuantities(const Quantity& a, const Quantity& b) {
  Quantity out;
  if (__builtin_add_overflow(a.nano, b.nano, &out.nano)) return std::nullopt;
  if (a.form == Quantity::Form::kUnknown || b.form == Quantity::Form::kUnknown) {
    out.form = Quantity::Form::kUnknown;
    return out;
  }
  out.form = Quantity::Form::kDec;
  if (a.form != Quantity::Form::kInt64Amount || b.form != Quantity::Form::kInt64Amount) {
    return out;
  }
  if (b.value == 0 || a.value == 0) {
    const Quantity& kept = b.value == 0 ? a : b;
    out.form = Quantity::Form::kInt64Amount;
    out.value = kept.value;
    out.scale = kept.scale;
    out.nano = kept.nano;
    return out;
  }
  const Quantity& fine = a.scale <= b.scale ? a : b;
  const Quantity& coarse = a.scale <= b.scale ? b : a;
  const auto aligned = PositiveScale(coarse.value, coarse.scale - fine.scale);
  std::int64_t sum = 0;
  if (!aligned || __builtin_add_overflow(*aligned, fine.value, &sum)) return out;
  out.form = Quantity::Form::kInt64Amount;
  out.value = sum;
  out.scale = fine.scale;
  return out;
}

std::optional<Quantity> SubQuantities(const Quantity& a, const Quantity& b) {
  Quantity negated = b;
  if (b.form == Quantity::Form::kInt64Amount) {
    negated.value = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(b.value));
    const auto nano = NanoOf(negated.value, negated.scale);
    if (!nano) return std::nullopt;
    negated.nano = *nano;
  } else {
    negated.nano = -b.nano;
  }
  return AddQuantities(a, negated);
}

std::optional<std::int64_t> GoAsInt64(const Quantity& q) {
  if (q.form != Quantity::Form::kInt64Amount || q.scale < 0) return std::nullopt;
  return PositiveScale(q.value, q.scale);
}

namespace {

// The value times 10^exp10, rounded towards +infinity when `ceil`, else
// required to be exact; nullopt when it does not fit int64.
std::optional<std::int64_t> Scaled(const Quantity& q, int exp10, bool ceil) {
  if (q.form == Quantity::Form::kInt64Amount) {  // value * 10^(scale + exp10), in int64
    const std::int32_t shift = q.scale + exp10;
    if (shift >= 0) return PositiveScale(q.value, shift);
    const std::int64_t divisor = static_cast<std::int64_t>(kPow10[-shift]);  // shift >= -9
    const std::int64_t whole = q.value / divisor;
    const std::int64_t remainder = q.value % divisor;
    if (remainder == 0) return whole;
    if (!ceil) return std::nullopt;
    return remainder > 0 ? whole + 1 : whole;
  }
  if (q.rounding == Quantity::Rounding::kCapped) return std::nullopt;  // beyond int64
  const bool rounded = q.rounding == Quantity::Rounding::kAwayFromZero;
  if (rounded && !ceil) return std::nullopt;
  const i128 unit = *Pow10(9 - exp10);
  i128 whole = q.nano / unit;  // truncated towards zero
  const bool remainder = q.nano % unit != 0;
  if (!ceil && remainder) return std::nullopt;
  // Rounded away from zero, a negative `nano` is below the value written,
  // which lies in (nano, nano + 1): its ceiling is floor(nano / unit) + 1.
  if (remainder ? q.nano > 0 : rounded && q.nano < 0) ++whole;
  if (whole > std::numeric_limits<std::int64_t>::max() ||
      whole < std::numeric_limits<std::int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(whole);
}

}  // namespace

std::optional<std::int64_t> ExactScaled(const Quantity& q, int exp10) {
  return Scaled(q, exp10, /*ceil=*/false);
}

std::optional<std::int64_t> CeilScaled(const Quantity& q, int exp10) {
  return Scaled(q, exp10, /*ceil=*/true);
}

}  // namespace devshare::k8s
