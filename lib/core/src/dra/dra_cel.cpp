// The CEL evaluator of DRA device selectors: values, Kubernetes quantities
// and semantic versions, a tokenizer and precedence-climbing parser to an
// AST, a type checker over that AST, and a tree-walking evaluator.
//
// The reference is cel-go v0.29 in Kubernetes v1.37's environment
// (k8s.io/dynamic-resource-allocation/cel/compile.go,
// k8s.io/apiserver/pkg/cel/library); comments name the Go code a rule
// follows where that is not obvious.
#include "devshare/dra_cel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace devshare::dra {
namespace internal {
namespace {

__extension__ using i128 = __int128;  // exact quantities, in nano units

constexpr std::size_t kMaxExpressionLength = 10 * 1024;  // CELSelectorExpressionMaxLength
constexpr int kMaxDepth = 100;

// ---------------------------------------------------------------------------
// Quantities (k8s.io/apimachinery/pkg/api/resource) as library.Quantity
// sees them. The value is exact in nano units. asInteger depends on how Go
// holds the value, not only on the value ("1000m" is not an integer to
// AsInt64, "1k" is), so the representation is kept too.

struct Quantity {
  enum class Rep : std::uint8_t {
    kInt64Amount,  // value * 10^scale, as resource.int64Amount
    kDec,          // an inf.Dec: never an integer to AsInt64
    kUnknown,      // from a capacity whose API text (and so Go's form) is unknown
  };
  i128 nano = 0;
  Rep rep = Rep::kInt64Amount;
  std::int64_t value = 0;
  std::int32_t scale = 0;
  // Add and sub return a *apiservercel.Quantity, whose Equal the value
  // type's Equal refuses as "no such overload" (quantity.go).
  bool boxed = false;
};

bool MulI128(i128 a, i128 b, i128& out) { return __builtin_mul_overflow(a, b, &out); }

std::optional<i128> Pow10(int n) {
  i128 r = 1;
  for (int i = 0; i < n; ++i) {
    if (MulI128(r, 10, r)) return std::nullopt;
  }
  return r;
}

// value * 10^(scale + 9), when it fits.
std::optional<i128> NanoOf(std::int64_t value, std::int32_t scale) {
  if (scale + 9 < 0) return std::nullopt;  // int64Amount scales are >= -9
  const auto p = Pow10(scale + 9);
  i128 r = 0;
  if (!p || MulI128(value, *p, r)) return std::nullopt;
  return r;
}

// positiveScaleInt64 (math.go): value * 10^scale when it fits int64.
std::optional<std::int64_t> PositiveScale(std::int64_t value, std::int32_t scale) {
  std::int64_t r = value;
  for (std::int32_t i = 0; i < scale; ++i) {
    if (__builtin_mul_overflow(r, std::int64_t{10}, &r)) return std::nullopt;
  }
  return r;
}

struct QuantityParse {
  enum class Outcome { kOk, kInvalid, kUnrepresentable } outcome = Outcome::kInvalid;
  Quantity quantity;
  std::string_view error;  // Kubernetes' message when kInvalid
};

constexpr std::string_view kErrFormatWrong =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr std::string_view kErrSuffix = "unable to parse quantity's suffix";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// strconv.ParseInt(s, 10, 64).
std::optional<std::int64_t> GoParseInt(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t magnitude = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    if (__builtin_mul_overflow(magnitude, std::uint64_t{10}, &magnitude) ||
        __builtin_add_overflow(magnitude, static_cast<std::uint64_t>(c - '0'), &magnitude)) {
      return std::nullopt;
    }
  }
  const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  if (magnitude > limit) return std::nullopt;
  return negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
}

// resource.ParseQuantity, keeping what AsInt64 and Add depend on.
QuantityParse ParseK8sQuantity(std::string_view str) {
  QuantityParse out;
  if (str.empty()) {
    out.error = kErrFormatWrong;
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
  std::string_view suffix;
  std::size_t i = pos;
  while (i < str.size() && IsDigit(str[i])) ++i;
  num = str.substr(pos, i - pos);
  if (num.empty()) num = "0";
  if (i < str.size() && str[i] == '.') {
    const std::size_t d = ++i;
    while (i < str.size() && IsDigit(str[i])) ++i;
    denom = str.substr(d, i - d);
  }
  const std::size_t suffix_start = i;
  constexpr std::string_view kSuffixLetters = "eEinumkKMGTP";
  while (i < str.size() && kSuffixLetters.find(str[i]) != std::string_view::npos) ++i;
  if (i < str.size() && (str[i] == '-' || str[i] == '+')) ++i;
  while (i < str.size() && IsDigit(str[i])) ++i;
  if (i < str.size()) {
    out.error = kErrFormatWrong;
    return out;
  }
  suffix = str.substr(suffix_start);

  // quantitySuffixer.interpret.
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };
  struct Known {
    std::string_view text;
    int base;
    std::int32_t exponent;
    Format format;
  };
  static constexpr Known kKnown[] = {
      {"n", 10, -9, Format::kDecimalSI}, {"u", 10, -6, Format::kDecimalSI},
      {"m", 10, -3, Format::kDecimalSI}, {"", 10, 0, Format::kDecimalSI},
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
                            ? GoParseInt(suffix.substr(1))
                            : std::nullopt;
    if (!parsed) {
      out.error = kErrSuffix;
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
        out.quantity = Quantity{*nano, Quantity::Rep::kInt64Amount, result, scale, false};
        out.outcome = QuantityParse::Outcome::kOk;
        return out;
      }
    }
  }

  // The inf.Dec path: exact, then rounded up (away from zero) to 1n and,
  // for binary suffixes, capped at 2^63-1.
  i128 magnitude = 0;
  for (std::string_view part : {num, denom}) {
    for (char c : part) {
      if (MulI128(magnitude, 10, magnitude) ||
          __builtin_add_overflow(magnitude, c - '0', &magnitude)) {
        return out;
      }
    }
  }
  std::int64_t exp10 = 9 - static_cast<std::int64_t>(denom.size()) + (base == 10 ? exponent : 0);
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
    if (!p) {
      magnitude = magnitude == 0 ? 0 : 1;
    } else {
      const bool inexact = magnitude % *p != 0;
      magnitude = magnitude / *p + (inexact ? 1 : 0);
    }
  }
  if (format == Format::kBinarySI) {
    const i128 cap = static_cast<i128>(std::numeric_limits<std::int64_t>::max()) * 1000000000;
    magnitude = std::min(magnitude, cap);
  }
  out.quantity = Quantity{positive ? magnitude : -magnitude, Quantity::Rep::kDec, 0, 0, false};
  out.outcome = QuantityParse::Outcome::kOk;
  return out;
}

// A capacity value as a scheduler in Go holds it after parsing the API
// server's canonical text: "<m>m" for a fraction, digits (or a suffix)
// for a whole number. Below 1e14 every canonical form of a whole number
// takes the int64Amount path with a scale >= 0, which AsInt64 treats alike;
// above it the form decides (1Pi is an inf.Dec, 1125899906842624 is not).
Quantity CapacityQuantity(dra::Quantity q) {
  Quantity out;
  out.nano = static_cast<i128>(q.milli) * 1000000;
  if (q.milli % 1000 != 0) {
    out.value = q.milli;
    out.scale = -3;
  } else if (q.milli / 1000 < 100000000000000 && q.milli / 1000 > -100000000000000) {
    out.value = q.milli / 1000;
  } else {
    out.rep = Quantity::Rep::kUnknown;
  }
  return out;
}

// Quantity.Add (quantity.go) and int64Amount.Add (amount.go).
std::optional<Quantity> AddQuantities(const Quantity& a, const Quantity& b) {
  Quantity out;
  out.boxed = true;
  if (__builtin_add_overflow(a.nano, b.nano, &out.nano)) return std::nullopt;
  if (a.rep == Quantity::Rep::kUnknown || b.rep == Quantity::Rep::kUnknown) {
    out.rep = Quantity::Rep::kUnknown;
    return out;
  }
  out.rep = Quantity::Rep::kDec;
  if (a.rep != Quantity::Rep::kInt64Amount || b.rep != Quantity::Rep::kInt64Amount) return out;
  if (b.value == 0 || a.value == 0) {
    const Quantity& kept = b.value == 0 ? a : b;
    out.rep = Quantity::Rep::kInt64Amount;
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
  out.rep = Quantity::Rep::kInt64Amount;
  out.value = sum;
  out.scale = fine.scale;
  return out;
}

// Quantity.Sub: Add of the negated amount (Go's negation wraps).
std::optional<Quantity> SubQuantities(const Quantity& a, const Quantity& b) {
  Quantity negated = b;
  if (b.rep == Quantity::Rep::kInt64Amount) {
    negated.value = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(b.value));
    const auto nano = NanoOf(negated.value, negated.scale);
    if (!nano) return std::nullopt;
    negated.nano = *nano;
  } else {
    negated.nano = -b.nano;
  }
  return AddQuantities(a, negated);
}

// ---------------------------------------------------------------------------
// Semantic versions: github.com/blang/semver/v4 Parse and Compare.

struct PreRelease {
  bool numeric = false;
  std::uint64_t number = 0;
  std::string text;
};

struct Semver {
  std::uint64_t major = 0, minor = 0, patch = 0;
  std::vector<PreRelease> pre;
};

bool ContainsOnly(std::string_view s, std::string_view set) {
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return set.find(c) != std::string_view::npos; });
}
constexpr std::string_view kNumbers = "0123456789";
constexpr std::string_view kAlphaNum =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

std::vector<std::string_view> SplitN(std::string_view s, char sep, std::size_t n) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < n) {
    const std::size_t at = s.find(sep);
    if (at == std::string_view::npos) break;
    parts.push_back(s.substr(0, at));
    s.remove_prefix(at + 1);
  }
  parts.push_back(s);
  return parts;
}

// A version number as Parse reads one: digits, no leading zero, a uint64;
// else blang's error for the component `what` ("Major", "Minor", "Patch").
std::variant<std::uint64_t, std::string> VersionNumber(std::string_view s, std::string_view what) {
  if (!ContainsOnly(s, kNumbers)) {
    std::string lower(what);
    lower[0] = static_cast<char>(lower[0] - 'A' + 'a');
    return fmt::format("Invalid character(s) found in {} number {:?}", lower, s);
  }
  if (s.size() > 1 && s[0] == '0') {
    return fmt::format("{} number must not contain leading zeroes {:?}", what, s);
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return fmt::format("strconv.ParseUint: parsing {:?}: {}", s,
                       s.empty() ? "invalid syntax" : "value out of range");
  }
  return v;
}

// semver.Parse; the error is blang's message.
std::variant<Semver, std::string> ParseSemver(std::string_view s) {
  if (s.empty()) return std::string("Version string empty");
  const auto parts = SplitN(s, '.', 3);
  if (parts.size() != 3) return std::string("No Major.Minor.Patch elements found");
  Semver v;
  const auto major = VersionNumber(parts[0], "Major");
  if (const auto* e = std::get_if<std::string>(&major)) return *e;
  const auto minor = VersionNumber(parts[1], "Minor");
  if (const auto* e = std::get_if<std::string>(&minor)) return *e;
  v.major = std::get<std::uint64_t>(major);
  v.minor = std::get<std::uint64_t>(minor);
  std::string_view patch = parts[2];
  std::vector<std::string_view> build;
  std::vector<std::string_view> pre;
  if (const std::size_t plus = patch.find('+'); plus != std::string_view::npos) {
    build = SplitN(patch.substr(plus + 1), '.', std::string_view::npos);
    patch = patch.substr(0, plus);
  }
  if (const std::size_t dash = patch.find('-'); dash != std::string_view::npos) {
    pre = SplitN(patch.substr(dash + 1), '.', std::string_view::npos);
    patch = patch.substr(0, dash);
  }
  const auto patch_number = VersionNumber(patch, "Patch");
  if (const auto* e = std::get_if<std::string>(&patch_number)) return *e;
  v.patch = std::get<std::uint64_t>(patch_number);
  for (std::string_view p : pre) {
    if (p.empty()) return std::string("Prerelease is empty");
    PreRelease r;
    if (ContainsOnly(p, kNumbers)) {
      if (p.size() > 1 && p[0] == '0') {
        return fmt::format("Numeric PreRelease version must not contain leading zeroes {:?}", p);
      }
      const auto n = VersionNumber(p, "PreRelease");
      if (const auto* e = std::get_if<std::string>(&n)) return *e;
      r.numeric = true;
      r.number = std::get<std::uint64_t>(n);
    } else if (ContainsOnly(p, kAlphaNum)) {
      r.text = std::string(p);
    } else {
      return fmt::format("Invalid character(s) found in prerelease {:?}", p);
    }
    v.pre.push_back(std::move(r));
  }
  for (std::string_view b : build) {
    if (b.empty()) return std::string("Build meta data is empty");
    if (!ContainsOnly(b, kAlphaNum))
      return fmt::format("Invalid character(s) found in build meta data {:?}", b);
  }
  return v;
}

// normalizeAndParse (semverlib.go): no "v", zeros filled in and trimmed.
std::variant<Semver, std::string> ParseSemverNormalized(std::string_view s) {
  if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
  std::vector<std::string> parts;
  for (std::string_view p : SplitN(s, '.', 3)) {
    std::string part(p);
    if (part.size() > 1) {
      part.erase(0, part.find_first_not_of('0') == std::string::npos ? part.size()
                                                                     : part.find_first_not_of('0'));
      if (part.empty() || !IsDigit(part[0])) {
        std::string padded(1, '0');
        padded += part;
        part = std::move(padded);
      }
    }
    parts.push_back(std::move(part));
  }
  if (parts.size() < 3) {
    if (parts.back().find_first_of("+-") != std::string::npos) {
      return std::string("short version cannot contain PreRelease/Build meta data");
    }
    parts.resize(3, "0");
  }
  return ParseSemver(parts[0] + "." + parts[1] + "." + parts[2]);
}

template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int CompareSemver(const Semver& a, const Semver& b) {
  if (int c = Cmp(a.major, b.major)) return c;
  if (int c = Cmp(a.minor, b.minor)) return c;
  if (int c = Cmp(a.patch, b.patch)) return c;
  if (a.pre.empty() || b.pre.empty()) return Cmp(a.pre.empty(), b.pre.empty());
  for (std::size_t i = 0; i < a.pre.size() && i < b.pre.size(); ++i) {
    const PreRelease& x = a.pre[i];
    const PreRelease& y = b.pre[i];
    int c = x.numeric != y.numeric ? (x.numeric ? -1 : 1)
                                   : (x.numeric ? Cmp(x.number, y.number) : Cmp(x.text, y.text));
    if (c != 0) return c;
  }
  return Cmp(a.pre.size(), b.pre.size());
}

}  // namespace

// ---------------------------------------------------------------------------
// Values and static types.

namespace {

struct Value;
using List = std::vector<Value>;
using Entries = std::map<std::string, Value, std::less<>>;

struct Null {};
struct MapValue {
  std::shared_ptr<const Entries> entries;
  // A missing key reads as an empty map: device.attributes and
  // device.capacity (newStringInterfaceMapWithDefault in compile.go).
  bool default_empty = false;
};

struct Value {
  std::variant<Null, bool, std::int64_t, std::uint64_t, double, std::string,
               std::shared_ptr<const List>, MapValue, Quantity, std::shared_ptr<const Semver>>
      v;
};

enum class Kind : std::uint8_t {
  kDyn,
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kList,
  kMap,
  kQuantity,
  kSemver,
  kDevice,
};

struct Type;
using TypePtr = std::shared_ptr<const Type>;
struct Type {
  Kind kind = Kind::kDyn;
  TypePtr key;   // kMap
  TypePtr elem;  // kList, kMap
};

TypePtr Of(Kind kind) { return std::make_shared<const Type>(Type{kind, nullptr, nullptr}); }
TypePtr ListOf(TypePtr elem) {
  return std::make_shared<const Type>(Type{Kind::kList, nullptr, std::move(elem)});
}
TypePtr MapOf(TypePtr key, TypePtr elem) {
  return std::make_shared<const Type>(Type{Kind::kMap, std::move(key), std::move(elem)});
}

std::string TypeName(const Type& t) {
  switch (t.kind) {
    case Kind::kDyn:
      return "dyn";
    case Kind::kNull:
      return "null_type";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kUint:
      return "uint";
    case Kind::kDouble:
      return "double";
    case Kind::kString:
      return "string";
    case Kind::kList:
      return fmt::format("list({})", TypeName(*t.elem));
    case Kind::kMap:
      return fmt::format("map({}, {})", TypeName(*t.key), TypeName(*t.elem));
    case Kind::kQuantity:
      return "kubernetes.Quantity";
    case Kind::kSemver:
      return "kubernetes.Semver";
    case Kind::kDevice:
      return "kubernetes.DRADevice";
  }
  return "?";
}

bool Nullable(Kind k) { return k == Kind::kQuantity || k == Kind::kSemver || k == Kind::kDevice; }

// Whether a value of one type may stand where the other is expected
// (checker/types.go internalIsAssignable, without type parameters).
bool Assignable(const Type& a, const Type& b) {
  if (a.kind == Kind::kDyn || b.kind == Kind::kDyn) return true;
  if (a.kind == Kind::kNull) return b.kind == Kind::kNull || Nullable(b.kind);
  if (b.kind == Kind::kNull) return Nullable(a.kind);
  if (a.kind != b.kind) return false;
  if (a.kind == Kind::kList) return Assignable(*a.elem, *b.elem);
  if (a.kind == Kind::kMap) return Assignable(*a.key, *b.key) && Assignable(*a.elem, *b.elem);
  return true;
}

bool Equivalent(const Type& a, const Type& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == Kind::kList) return Equivalent(*a.elem, *b.elem);
  if (a.kind == Kind::kMap) return Equivalent(*a.key, *b.key) && Equivalent(*a.elem, *b.elem);
  return true;
}

enum class Op : std::uint8_t {
  kConst,
  kIdent,
  kSelect,  // args[0].name
  kHas,     // has(args[0].name)
  kIndex,   // args[0][args[1]]
  kList,
  kNot,
  kNeg,
  kAnd,  // n-ary
  kOr,   // n-ary
  kCond,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kIn,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kCall,       // name(args...), or args[0].name(args[1]...) when member
  kAll,        // args[0].all(name, args[1])
  kExists,     // args[0].exists(name, args[1])
  kExistsOne,  // args[0].exists_one(name, args[1])
};

// The functions devshare evaluates, resolved by the checker.
enum class Fn : std::uint8_t {
  kNone,
  kSize,
  kStartsWith,
  kEndsWith,
  kContains,
  kLowerAscii,
  kUpperAscii,
  kIncludes,
  kQuantity,
  kIsQuantity,
  kSign,
  kCompareTo,
  kIsGreaterThan,
  kIsLessThan,
  kAdd,
  kSub,
  kAsInteger,
  kIsInteger,
  kSemver,
  kIsSemver,
  kMajor,
  kMinor,
  kPatch,
};

}  // namespace

struct CelNode {
  Value value;       // kConst
  std::string name;  // identifier, field, function or iteration variable
  std::vector<std::unique_ptr<CelNode>> args;
  TypePtr type;            // set by the checker
  std::size_t offset = 0;  // of the token that names the node
  int depth = 1;
  Op op = Op::kConst;
  Fn fn = Fn::kNone;
  bool member = false;
};

namespace {

using NodePtr = std::unique_ptr<CelNode>;

// ---------------------------------------------------------------------------
// Tokenizer (the lexer rules of cel-go's CEL.g4).

enum class Tok : std::uint8_t {
  kEnd,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kIdent,
  kIn,
  kTrue,
  kFalse,
  kNull,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kDot,
  kComma,
  kColon,
  kQuestion,
  kNot,
  kMinus,
  kPlus,
  kStar,
  kSlash,
  kPercent,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};

struct Token {
  Tok kind = Tok::kEnd;
  std::size_t offset = 0;
  std::string text;  // identifier, number as written, or the decoded string
};

bool IsIdentStart(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
int HexValue(char c) { return IsDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }

void AppendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The byte offset of the first invalid UTF-8 sequence, if any.
std::optional<std::size_t> InvalidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;
    for (int k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::nullopt;
}

// Where parsing stopped and why: a kMalformed or kUnsupported Status.
class Errors {
 public:
  explicit Errors(std::string_view expression) : expression_(expression) {}
  bool failed() const { return !status_.ok(); }
  Status take() { return std::move(status_); }

  std::nullptr_t Malformed(std::size_t offset, std::string_view message) {
    if (!failed()) {
      status_ = Status::Malformed(
          fmt::format("CEL selector {:?}: {} (at byte {})", expression_, message, offset), {},
          offset);
    }
    return nullptr;
  }
  std::nullptr_t Unsupported(std::string_view construct) {
    if (!failed()) {
      status_ = Status::Unsupported(
          fmt::format("CEL selector {:?}: {} is not supported by devshare", expression_, construct),
          std::string(construct));
    }
    return nullptr;
  }

 private:
  std::string_view expression_;
  Status status_;
};

class Lexer {
 public:
  Lexer(std::string_view src, Errors& errors) : src_(src), errors_(errors) {}

  // The next token; kEnd with errors_.failed() after a lexical error.
  Token Next() {
    SkipSpaceAndComments();
    Token t;
    t.offset = pos_;
    if (pos_ >= src_.size()) return t;
    const char c = src_[pos_];
    if (IsDigit(c) || (c == '.' && pos_ + 1 < src_.size() && IsDigit(src_[pos_ + 1]))) {
      return Number(t);
    }
    if (c == '"' || c == '\'') return String(t, /*raw=*/false, /*bytes=*/false);
    if (IsIdentStart(c)) return Ident(t);
    if (c == '`') {
      errors_.Unsupported("a backquoted identifier");
      return t;
    }
    struct Punct {
      std::string_view text;
      Tok kind;
    };
    static constexpr Punct kPuncts[] = {
        {"==", Tok::kEq},    {"!=", Tok::kNe},      {"<=", Tok::kLe},      {">=", Tok::kGe},
        {"&&", Tok::kAnd},   {"||", Tok::kOr},      {"<", Tok::kLt},       {">", Tok::kGt},
        {"(", Tok::kLParen}, {")", Tok::kRParen},   {"[", Tok::kLBracket}, {"]", Tok::kRBracket},
        {"{", Tok::kLBrace}, {"}", Tok::kRBrace},   {".", Tok::kDot},      {",", Tok::kComma},
        {":", Tok::kColon},  {"?", Tok::kQuestion}, {"!", Tok::kNot},      {"-", Tok::kMinus},
        {"+", Tok::kPlus},   {"*", Tok::kStar},     {"/", Tok::kSlash},    {"%", Tok::kPercent},
    };
    for (const Punct& p : kPuncts) {
      if (src_.substr(pos_, p.text.size()) == p.text) {
        pos_ += p.text.size();
        t.kind = p.kind;
        return t;
      }
    }
    errors_.Malformed(pos_, fmt::format("syntax error: token recognition error at: '{}'", c));
    return t;
  }

 private:
  void SkipSpaceAndComments() {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else if (src_.substr(pos_, 2) == "//") {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  // NUM_INT, NUM_UINT and NUM_FLOAT; the text keeps its form for the parser.
  Token Number(Token t) {
    const std::size_t start = pos_;
    if (src_.substr(pos_, 2) == "0x") {
      std::size_t end = pos_ + 2;
      while (end < src_.size() && IsHex(src_[end])) ++end;
      if (end > pos_ + 2) {
        pos_ = end;
        t.kind = Tok::kInt;
        if (pos_ < src_.size() && (src_[pos_] == 'u' || src_[pos_] == 'U')) {
          ++pos_;
          t.kind = Tok::kUint;
        }
        t.text = std::string(src_.substr(start, pos_ - start));
        return t;
      }
    }
    t.kind = Tok::kInt;
    while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && IsDigit(src_[pos_ + 1])) {
      t.kind = Tok::kDouble;
      ++pos_;
      while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      std::size_t end = pos_ + 1;
      if (end < src_.size() && (src_[end] == '+' || src_[end] == '-')) ++end;
      if (end < src_.size() && IsDigit(src_[end])) {
        while (end < src_.size() && IsDigit(src_[end])) ++end;
        pos_ = end;
        t.kind = Tok::kDouble;
      }
    }
    if (t.kind == Tok::kInt && pos_ < src_.size() && (src_[pos_] == 'u' || src_[pos_] == 'U')) {
      ++pos_;
      t.kind = Tok::kUint;
    }
    t.text = std::string(src_.substr(start, pos_ - start));
    return t;
  }

  Token Ident(Token t) {
    const std::size_t start = pos_;
    while (pos_ < src_.size() && IsIdentChar(src_[pos_])) ++pos_;
    const std::string_view word = src_.substr(start, pos_ - start);
    // STRING may be raw (r"..."), BYTES is b followed by a STRING.
    if (pos_ < src_.size() && (src_[pos_] == '"' || src_[pos_] == '\'')) {
      const bool bytes = !word.empty() && (word[0] == 'b' || word[0] == 'B');
      const std::string_view rest = word.substr(bytes ? 1 : 0);
      const bool raw = rest == "r" || rest == "R";
      if ((bytes || raw) && (rest.empty() || raw)) return String(t, raw, bytes);
    }
    static constexpr std::pair<std::string_view, Tok> kWords[] = {
        {"in", Tok::kIn}, {"true", Tok::kTrue}, {"false", Tok::kFalse}, {"null", Tok::kNull}};
    t.kind = Tok::kIdent;
    for (const auto& [text, kind] : kWords) {
      if (word == text) t.kind = kind;
    }
    t.text = std::string(word);
    return t;
  }

  // A quoted literal at pos_ (after any r/b prefix), escapes decoded unless
  // raw (cel-go's unescape: \x, octal and \u give code points).
  Token String(Token t, bool raw, bool bytes) {
    if (bytes) {
      errors_.Unsupported("a bytes literal");
      return t;
    }
    const char q = src_[pos_];
    const bool triple = src_.substr(pos_, 3) == std::string(3, q);
    const std::string_view close = triple ? src_.substr(pos_, 3) : src_.substr(pos_, 1);
    pos_ += close.size();
    t.kind = Tok::kString;
    while (true) {
      if (pos_ >= src_.size() || (!triple && (src_[pos_] == '\n' || src_[pos_] == '\r'))) {
        errors_.Malformed(t.offset, "syntax error: unterminated string literal");
        t.kind = Tok::kEnd;
        return t;
      }
      if (src_.substr(pos_, close.size()) == close) {
        pos_ += close.size();
        return t;
      }
      if (src_[pos_] != '\\' || raw) {
        t.text += src_[pos_++];
        continue;
      }
      if (!Escape(t.text)) {
        t.kind = Tok::kEnd;
        return t;
      }
    }
  }

  bool Escape(std::string& out) {
    const std::size_t at = pos_;
    auto bad = [&] {
      errors_.Malformed(at, "syntax error: invalid escape sequence");
      return false;
    };
    if (pos_ + 1 >= src_.size()) return bad();
    const char e = src_[pos_ + 1];
    static constexpr std::string_view kSimple = "abfnrtv\\'\"`?";
    static constexpr std::string_view kDecoded = "\a\b\f\n\r\t\v\\'\"`?";
    if (const std::size_t k = kSimple.find(e); k != std::string_view::npos) {
      out += kDecoded[k];
      pos_ += 2;
      return true;
    }
    std::size_t digits = 0;
    int radix = 16;
    if (e == 'x' || e == 'X') {
      digits = 2;
    } else if (e == 'u') {
      digits = 4;
    } else if (e == 'U') {
      digits = 8;
    } else if (e >= '0' && e <= '3') {
      digits = 3;
      radix = 8;
    } else {
      return bad();
    }
    const std::size_t first = radix == 8 ? pos_ + 1 : pos_ + 2;
    if (first + digits > src_.size()) return bad();
    std::uint32_t cp = 0;
    for (std::size_t k = 0; k < digits; ++k) {
      const char d = src_[first + k];
      if (radix == 8 ? (d < '0' || d > '7') : !IsHex(d)) return bad();
      cp = cp * static_cast<std::uint32_t>(radix) + static_cast<std::uint32_t>(HexValue(d));
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return bad();
    AppendUtf8(out, cp);
    pos_ = first + digits;
    return true;
  }

  std::string_view src_;
  Errors& errors_;
  std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// Parser: CEL.g4's grammar by precedence climbing,
//   expr     = or ["?" or ":" expr]
//   or       = and {"||" and}          and = relation {"&&" relation}
//   relation = calc {("<"|"<="|">="|">"|"=="|"!="|"in") calc}
//   calc     = product {("+"|"-") product}
//   product  = unary {("*"|"/"|"%") unary}
//   unary    = member | "!"{"!"} member | "-"{"-"} member
//   member   = primary {"." IDENT ["(" args ")"] | "[" expr "]"}
// with the macros has(), all(), exists() and exists_one() expanded.

class Parser {
 public:
  Parser(std::string_view src, Errors& errors) : lexer_(src, errors), errors_(errors) {
    tok_ = lexer_.Next();
  }

  NodePtr Parse() {
    NodePtr root = Expr();
    if (root && tok_.kind != Tok::kEnd) return SyntaxError();
    return errors_.failed() ? nullptr : std::move(root);
  }

 private:
  void Advance() { tok_ = lexer_.Next(); }

  bool Accept(Tok kind) {
    if (tok_.kind != kind) return false;
    Advance();
    return true;
  }

  std::nullptr_t SyntaxError() {
    if (tok_.kind == Tok::kEnd)
      return errors_.Malformed(tok_.offset, "syntax error: unexpected end of input");
    return errors_.Malformed(tok_.offset, "syntax error: unexpected token");
  }

  // A node over `args`, refused beyond kMaxDepth levels of nesting.
  NodePtr Make(Op op, std::size_t offset, std::vector<NodePtr> args, std::string name = {}) {
    auto node = std::make_unique<CelNode>();
    node->op = op;
    node->offset = offset;
    node->name = std::move(name);
    for (const NodePtr& a : args) node->depth = std::max(node->depth, a->depth + 1);
    node->args = std::move(args);
    if (node->depth > kMaxDepth) return TooDeep();
    return node;
  }

  std::nullptr_t TooDeep() {
    return errors_.Unsupported("an expression nested more than 100 levels deep");
  }

  NodePtr Expr() {
    if (nesting_ >= kMaxDepth) return TooDeep();
    ++nesting_;
    NodePtr e = Conditional();
    --nesting_;
    return e;
  }

  NodePtr Conditional() {
    NodePtr cond = Logical(Tok::kOr);
    if (!cond || tok_.kind != Tok::kQuestion) return cond;
    const std::size_t offset = tok_.offset;
    Advance();
    NodePtr then = Logical(Tok::kOr);
    if (!then) return nullptr;
    if (!Accept(Tok::kColon)) return SyntaxError();
    NodePtr otherwise = Expr();
    if (!otherwise) return nullptr;
    std::vector<NodePtr> args;
    args.push_back(std::move(cond));
    args.push_back(std::move(then));
    args.push_back(std::move(otherwise));
    return Make(Op::kCond, offset, std::move(args));
  }

  // A chain of || (or of &&) as one n-ary node: the operators are
  // associative, also in how they absorb errors.
  NodePtr Logical(Tok op) {
    std::vector<NodePtr> terms;
    std::size_t offset = tok_.offset;
    while (true) {
      NodePtr term = op == Tok::kOr ? Logical(Tok::kAnd) : Relation();
      if (!term) return nullptr;
      terms.push_back(std::move(term));
      if (tok_.kind != op) break;
      if (terms.size() == 1) offset = tok_.offset;
      Advance();
    }
    if (terms.size() == 1) return std::move(terms[0]);
    return Make(op == Tok::kOr ? Op::kOr : Op::kAnd, offset, std::move(terms));
  }

  struct BinaryOp {
    Tok tok;
    Op op;
  };

  template <std::size_t N>
  NodePtr LeftAssociative(const BinaryOp (&ops)[N], NodePtr (Parser::*operand)()) {
    NodePtr left = (this->*operand)();
    while (left) {
      const BinaryOp* match = nullptr;
      for (const BinaryOp& b : ops) {
        if (tok_.kind == b.tok) match = &b;
      }
      if (match == nullptr) return left;
      const std::size_t offset = tok_.offset;
      Advance();
      NodePtr right = (this->*operand)();
      if (!right) return nullptr;
      std::vector<NodePtr> args;
      args.push_back(std::move(left));
      args.push_back(std::move(right));
      left = Make(match->op, offset, std::move(args));
    }
    return left;
  }

  NodePtr Relation() {
    static constexpr BinaryOp kOps[] = {
        {Tok::kLt, Op::kLt}, {Tok::kLe, Op::kLe}, {Tok::kGt, Op::kGt}, {Tok::kGe, Op::kGe},
        {Tok::kEq, Op::kEq}, {Tok::kNe, Op::kNe}, {Tok::kIn, Op::kIn}};
    return LeftAssociative(kOps, &Parser::Calc);
  }
  NodePtr Calc() {
    static constexpr BinaryOp kOps[] = {{Tok::kPlus, Op::kAdd}, {Tok::kMinus, Op::kSub}};
    return LeftAssociative(kOps, &Parser::Product);
  }
  NodePtr Product() {
    static constexpr BinaryOp kOps[] = {
        {Tok::kStar, Op::kMul}, {Tok::kSlash, Op::kDiv}, {Tok::kPercent, Op::kMod}};
    return LeftAssociative(kOps, &Parser::Unary);
  }

  // Whether the token after the current one is a number a '-' signs.
  bool NextIsSignedNumber() const {
    Lexer peek = lexer_;
    const Tok next = peek.Next().kind;
    return next == Tok::kInt || next == Tok::kDouble;
  }

  // An even run of '!' or '-' is dropped, as cel-go's parser drops it.
  NodePtr Unary() {
    const std::size_t offset = tok_.offset;
    int count = 0;
    Op op = Op::kNot;
    if (tok_.kind == Tok::kNot) {
      while (Accept(Tok::kNot)) ++count;
    } else {
      op = Op::kNeg;
      while (tok_.kind == Tok::kMinus && !NextIsSignedNumber()) {
        Advance();
        ++count;
      }
    }
    NodePtr operand = Member();
    if (!operand || count % 2 == 0) return operand;
    std::vector<NodePtr> args;
    args.push_back(std::move(operand));
    return Make(op, offset, std::move(args));
  }

  NodePtr Member() {
    NodePtr node = Primary();
    while (node) {
      const std::size_t offset = tok_.offset;
      if (Accept(Tok::kDot)) {
        if (tok_.kind == Tok::kQuestion)
          return errors_.Unsupported("optional field selection (.?)");
        if (tok_.kind != Tok::kIdent) return SyntaxError();
        std::string name = std::move(tok_.text);
        const std::size_t name_offset = tok_.offset;
        Advance();
        if (tok_.kind == Tok::kLBrace) return errors_.Unsupported("message construction");
        if (tok_.kind != Tok::kLParen) {
          std::vector<NodePtr> args;
          args.push_back(std::move(node));
          node = Make(Op::kSelect, name_offset, std::move(args), std::move(name));
          continue;
        }
        std::vector<NodePtr> args;
        args.push_back(std::move(node));
        if (!Arguments(args)) return nullptr;
        node = MemberCall(name_offset, std::move(name), std::move(args));
      } else if (Accept(Tok::kLBracket)) {
        if (tok_.kind == Tok::kQuestion) return errors_.Unsupported("optional index ([?])");
        NodePtr index = Expr();
        if (!index) return nullptr;
        if (!Accept(Tok::kRBracket)) return SyntaxError();
        std::vector<NodePtr> args;
        args.push_back(std::move(node));
        args.push_back(std::move(index));
        node = Make(Op::kIndex, offset, std::move(args));
      } else {
        return node;
      }
    }
    return nullptr;
  }

  // `args` holds the receiver; appends "(" expr {"," expr} ")".
  bool Arguments(std::vector<NodePtr>& args) {
    Advance();  // (
    if (Accept(Tok::kRParen)) return true;
    while (true) {
      NodePtr arg = Expr();
      if (!arg) return false;
      args.push_back(std::move(arg));
      if (Accept(Tok::kRParen)) return true;
      if (!Accept(Tok::kComma)) {
        SyntaxError();
        return false;
      }
    }
  }

  NodePtr MemberCall(std::size_t offset, std::string name, std::vector<NodePtr> args) {
    static constexpr std::pair<std::string_view, Op> kMacros[] = {{"all", Op::kAll},
                                                                  {"exists", Op::kExists},
                                                                  {"exists_one", Op::kExistsOne},
                                                                  {"existsOne", Op::kExistsOne}};
    for (const auto& [macro, op] : kMacros) {
      if (name != macro || args.size() != 3) continue;
      if (args[1]->op != Op::kIdent)
        return errors_.Malformed(args[1]->offset, "argument must be a simple name");
      std::string var = std::move(args[1]->name);
      args.erase(args.begin() + 1);
      return Make(op, offset, std::move(args), std::move(var));
    }
    NodePtr call = Make(Op::kCall, offset, std::move(args), std::move(name));
    if (call) call->member = true;
    return call;
  }

  NodePtr Primary() {
    const std::size_t offset = tok_.offset;
    auto literal = [&](Value v) {
      NodePtr n = Make(Op::kConst, offset, {});
      n->value = std::move(v);
      Advance();
      return n;
    };
    switch (tok_.kind) {
      case Tok::kMinus:
        Advance();
        return Number(offset, /*negative=*/true);
      case Tok::kInt:
      case Tok::kUint:
      case Tok::kDouble:
        return Number(offset, /*negative=*/false);
      case Tok::kString:
        return literal(Value{std::move(tok_.text)});
      case Tok::kTrue:
        return literal(Value{true});
      case Tok::kFalse:
        return literal(Value{false});
      case Tok::kNull:
        return literal(Value{Null{}});
      case Tok::kIdent: {
        std::string name = std::move(tok_.text);
        Advance();
        if (tok_.kind == Tok::kLBrace) return errors_.Unsupported("message construction");
        if (tok_.kind != Tok::kLParen) return Make(Op::kIdent, offset, {}, std::move(name));
        std::vector<NodePtr> args;
        if (!Arguments(args)) return nullptr;
        if (name == "has" && args.size() == 1) {
          if (args[0]->op != Op::kSelect)
            return errors_.Malformed(args[0]->offset, "invalid argument to has() macro");
          NodePtr select = std::move(args[0]);
          return Make(Op::kHas, offset, std::move(select->args), std::move(select->name));
        }
        return Make(Op::kCall, offset, std::move(args), std::move(name));
      }
      case Tok::kLParen: {
        Advance();
        NodePtr inner = Expr();
        if (!inner) return nullptr;
        if (!Accept(Tok::kRParen)) return SyntaxError();
        return inner;
      }
      case Tok::kLBracket:
        return ListLiteral();
      case Tok::kLBrace:
        return errors_.Unsupported("a map literal");
      case Tok::kDot:
        return errors_.Unsupported("a leading-dot identifier");
      default:
        return SyntaxError();
    }
  }

  NodePtr ListLiteral() {
    const std::size_t offset = tok_.offset;
    Advance();  // [
    std::vector<NodePtr> elems;
    while (!Accept(Tok::kRBracket)) {
      if (tok_.kind == Tok::kQuestion)
        return errors_.Unsupported("an optional list element ([?x])");
      NodePtr e = Expr();
      if (!e) return nullptr;
      elems.push_back(std::move(e));
      if (Accept(Tok::kRBracket)) break;
      if (!Accept(Tok::kComma)) return SyntaxError();
    }
    return Make(Op::kList, offset, std::move(elems));
  }

  // An int, uint or double literal, as strconv parses it in cel-go.
  NodePtr Number(std::size_t offset, bool negative) {
    if (tok_.kind != Tok::kInt && tok_.kind != Tok::kDouble &&
        (negative || tok_.kind != Tok::kUint)) {
      return SyntaxError();
    }
    std::string_view text = tok_.text;
    Value value;
    if (tok_.kind == Tok::kDouble) {
      const auto d = ParseDouble(text, negative);
      if (!d) return errors_.Malformed(offset, "invalid double literal");
      value.v = *d;
    } else {
      const bool is_uint = tok_.kind == Tok::kUint;
      if (is_uint) text.remove_suffix(1);
      int base = 10;
      if (text.size() > 2 && text[0] == '0' && text[1] == 'x') {
        base = 16;
        text.remove_prefix(2);
      }
      std::uint64_t magnitude = 0;
      const auto [end, ec] =
          std::from_chars(text.data(), text.data() + text.size(), magnitude, base);
      const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
      if (ec != std::errc() || end != text.data() + text.size() ||
          (!is_uint && magnitude > limit)) {
        return errors_.Malformed(offset, is_uint ? "invalid uint literal" : "invalid int literal");
      }
      if (is_uint) {
        value.v = magnitude;
      } else {
        value.v = negative ? static_cast<std::int64_t>(0 - magnitude)
                           : static_cast<std::int64_t>(magnitude);
      }
    }
    NodePtr n = Make(Op::kConst, offset, {});
    n->value = std::move(value);
    Advance();
    return n;
  }

  // strconv.ParseFloat: nullopt when the magnitude overflows; a value too
  // small for a double is 0.
  static std::optional<double> ParseDouble(std::string_view text, bool negative) {
    double d = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec == std::errc::result_out_of_range) {
      // Decimal exponent of the leading significant digit.
      const std::size_t e = text.find_first_of("eE");
      const std::string_view mantissa = text.substr(0, e);
      std::int64_t exponent = 0;  // saturates: only its sign matters far out
      if (e != std::string_view::npos) {
        const bool minus = text[e + 1] == '-';
        for (char c : text.substr(e + 1)) {
          if (IsDigit(c)) exponent = std::min<std::int64_t>(exponent * 10 + (c - '0'), 1000000000);
        }
        if (minus) exponent = -exponent;
      }
      const std::size_t dot = std::min(mantissa.find('.'), mantissa.size());
      const std::size_t first = mantissa.find_first_of("123456789");
      if (first == std::string_view::npos) return negative ? -0.0 : 0.0;
      exponent += first < dot ? static_cast<std::int64_t>(dot - first)
                              : -static_cast<std::int64_t>(first - dot);
      if (exponent > 0) return std::nullopt;
      d = 0;
    } else if (ec != std::errc() || end != text.data() + text.size()) {
      return std::nullopt;
    }
    return negative ? -d : d;
  }

  Lexer lexer_;
  Errors& errors_;
  Token tok_;
  int nesting_ = 0;
};

// ---------------------------------------------------------------------------
// Type checker: cel-go's checker over Kubernetes' declarations, for the
// functions devshare evaluates.

struct Overload {
  std::string_view name;
  bool member;
  Fn fn;
  std::vector<Kind> params;  // the receiver first when member; kDyn: any
  Kind result;
};

const std::vector<Overload>& Overloads() {
  static const std::vector<Overload> kOverloads = {
      {"size", false, Fn::kSize, {Kind::kString}, Kind::kInt},
      {"size", false, Fn::kSize, {Kind::kList}, Kind::kInt},
      {"size", false, Fn::kSize, {Kind::kMap}, Kind::kInt},
      {"size", true, Fn::kSize, {Kind::kString}, Kind::kInt},
      {"size", true, Fn::kSize, {Kind::kList}, Kind::kInt},
      {"size", true, Fn::kSize, {Kind::kMap}, Kind::kInt},
      {"startsWith", true, Fn::kStartsWith, {Kind::kString, Kind::kString}, Kind::kBool},
      {"endsWith", true, Fn::kEndsWith, {Kind::kString, Kind::kString}, Kind::kBool},
      {"contains", true, Fn::kContains, {Kind::kString, Kind::kString}, Kind::kBool},
      {"lowerAscii", true, Fn::kLowerAscii, {Kind::kString}, Kind::kString},
      {"upperAscii", true, Fn::kUpperAscii, {Kind::kString}, Kind::kString},
      {"includes", true, Fn::kIncludes, {Kind::kDyn, Kind::kDyn}, Kind::kBool},
      {"quantity", false, Fn::kQuantity, {Kind::kString}, Kind::kQuantity},
      {"isQuantity", false, Fn::kIsQuantity, {Kind::kString}, Kind::kBool},
      {"sign", false, Fn::kSign, {Kind::kQuantity}, Kind::kInt},
      {"compareTo", true, Fn::kCompareTo, {Kind::kQuantity, Kind::kQuantity}, Kind::kInt},
      {"compareTo", true, Fn::kCompareTo, {Kind::kSemver, Kind::kSemver}, Kind::kInt},
      {"isGreaterThan", true, Fn::kIsGreaterThan, {Kind::kQuantity, Kind::kQuantity}, Kind::kBool},
      {"isGreaterThan", true, Fn::kIsGreaterThan, {Kind::kSemver, Kind::kSemver}, Kind::kBool},
      {"isLessThan", true, Fn::kIsLessThan, {Kind::kQuantity, Kind::kQuantity}, Kind::kBool},
      {"isLessThan", true, Fn::kIsLessThan, {Kind::kSemver, Kind::kSemver}, Kind::kBool},
      {"add", true, Fn::kAdd, {Kind::kQuantity, Kind::kQuantity}, Kind::kQuantity},
      {"add", true, Fn::kAdd, {Kind::kQuantity, Kind::kInt}, Kind::kQuantity},
      {"sub", true, Fn::kSub, {Kind::kQuantity, Kind::kQuantity}, Kind::kQuantity},
      {"sub", true, Fn::kSub, {Kind::kQuantity, Kind::kInt}, Kind::kQuantity},
      {"asInteger", true, Fn::kAsInteger, {Kind::kQuantity}, Kind::kInt},
      {"isInteger", true, Fn::kIsInteger, {Kind::kQuantity}, Kind::kBool},
      {"semver", false, Fn::kSemver, {Kind::kString}, Kind::kSemver},
      {"semver", false, Fn::kSemver, {Kind::kString, Kind::kBool}, Kind::kSemver},
      {"isSemver", false, Fn::kIsSemver, {Kind::kString}, Kind::kBool},
      {"isSemver", false, Fn::kIsSemver, {Kind::kString, Kind::kBool}, Kind::kBool},
      {"major", true, Fn::kMajor, {Kind::kSemver}, Kind::kInt},
      {"minor", true, Fn::kMinor, {Kind::kSemver}, Kind::kInt},
      {"patch", true, Fn::kPatch, {Kind::kSemver}, Kind::kInt},
  };
  return kOverloads;
}

// Why a function of Kubernetes' environment is not evaluated, when the
// plain "the function 'x'" would not say.
std::string UnsupportedFunction(std::string_view name) {
  if (name == "matches") return "matches (RE2 regular expressions)";
  if (name == "asApproximateFloat") {
    return "asApproximateFloat (its result depends on how Go holds the quantity)";
  }
  return fmt::format("the function '{}'", name);
}

bool IsTypeName(std::string_view name) {
  static constexpr std::string_view kNames[] = {"bool",   "bytes", "double", "dyn",
                                                "int",    "list",  "map",    "null_type",
                                                "string", "type",  "uint",   "optional_type"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

bool Numeric(Kind k) { return k == Kind::kInt || k == Kind::kUint || k == Kind::kDouble; }

class Checker {
 public:
  explicit Checker(Errors& errors) : errors_(errors) {}

  // Types `n` and its operands; calls and comprehensions check their own
  // operands, after their name and scope.
  bool Check(CelNode& n) {
    const bool own =
        n.op == Op::kCall || n.op == Op::kAll || n.op == Op::kExists || n.op == Op::kExistsOne;
    for (std::unique_ptr<CelNode>& a : n.args) {
      if (!own && !Check(*a)) return false;
    }
    n.type = TypeOf(n);
    return n.type != nullptr;
  }

 private:
  std::nullptr_t Fail(const CelNode& n, std::string_view message) {
    return errors_.Malformed(n.offset, message);
  }
  std::nullptr_t NoOverload(const CelNode& n, std::string_view function) {
    std::string types;
    for (const auto& a : n.args) types += (types.empty() ? "" : ", ") + TypeName(*a->type);
    return Fail(
        n, fmt::format("found no matching overload for '{}' applied to '({})'", function, types));
  }

  TypePtr Arg(const CelNode& n, std::size_t i) const { return n.args[i]->type; }
  Kind ArgKind(const CelNode& n, std::size_t i) const { return n.args[i]->type->kind; }

  TypePtr TypeOf(CelNode& n) {
    switch (n.op) {
      case Op::kConst:
        return ConstType(n.value);
      case Op::kIdent:
        return Ident(n);
      case Op::kSelect:
      case Op::kHas:
        return Select(n);
      case Op::kIndex:
        return Index(n);
      case Op::kList:
        return List(n);
      case Op::kNot:
      case Op::kAnd:
      case Op::kOr:
        for (std::size_t i = 0; i < n.args.size(); ++i) {
          const Kind k = ArgKind(n, i);
          if (k != Kind::kBool && k != Kind::kDyn)
            return NoOverload(n, n.op == Op::kNot ? "!_" : (n.op == Op::kAnd ? "_&&_" : "_||_"));
        }
        return Of(Kind::kBool);
      case Op::kNeg: {
        const Kind k = ArgKind(n, 0);
        if (k != Kind::kInt && k != Kind::kDouble && k != Kind::kDyn) return NoOverload(n, "-_");
        return Arg(n, 0);
      }
      case Op::kCond: {
        if (ArgKind(n, 0) != Kind::kBool && ArgKind(n, 0) != Kind::kDyn)
          return NoOverload(n, "_?_:_");
        if (!Assignable(*Arg(n, 1), *Arg(n, 2))) return NoOverload(n, "_?_:_");
        return Equivalent(*Arg(n, 1), *Arg(n, 2)) ? Arg(n, 1) : Of(Kind::kDyn);
      }
      case Op::kEq:
      case Op::kNe:
        if (!Assignable(*Arg(n, 0), *Arg(n, 1)))
          return NoOverload(n, n.op == Op::kEq ? "_==_" : "_!=_");
        return Of(Kind::kBool);
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe:
        return Relational(n);
      case Op::kIn:
        return In(n);
      case Op::kAdd:
      case Op::kSub:
      case Op::kMul:
      case Op::kDiv:
      case Op::kMod:
        return Arithmetic(n);
      case Op::kCall:
        return Call(n);
      case Op::kAll:
      case Op::kExists:
      case Op::kExistsOne:
        return Comprehension(n);
    }
    return nullptr;
  }

  static TypePtr ConstType(const Value& v) {
    static constexpr Kind kKinds[] = {Kind::kNull, Kind::kBool,   Kind::kInt,
                                      Kind::kUint, Kind::kDouble, Kind::kString};
    return Of(kKinds[v.v.index()]);  // literals are only these
  }

  TypePtr Ident(const CelNode& n) {
    // The innermost comprehension variable of the name, if any.
    auto bound = std::find_if(scope_.rbegin(), scope_.rend(),
                              [&](const auto& v) { return v.first == n.name; });
    if (bound != scope_.rend()) return bound->second;
    if (n.name == "device") return Of(Kind::kDevice);
    if (IsTypeName(n.name)) return errors_.Unsupported(fmt::format("the type name '{}'", n.name));
    return Fail(n, fmt::format("undeclared reference to '{}'", n.name));
  }

  TypePtr Select(const CelNode& n) {
    const Type& operand = *Arg(n, 0);
    TypePtr field;
    switch (operand.kind) {
      case Kind::kDevice: {
        const TypePtr attributes =
            MapOf(Of(Kind::kString), MapOf(Of(Kind::kString), Of(Kind::kDyn)));
        const TypePtr capacity =
            MapOf(Of(Kind::kString), MapOf(Of(Kind::kString), Of(Kind::kQuantity)));
        if (n.name == "driver") field = Of(Kind::kString);
        if (n.name == "allowMultipleAllocations") field = Of(Kind::kBool);
        if (n.name == "attributes") field = attributes;
        if (n.name == "capacity") field = capacity;
        if (!field) return Fail(n, fmt::format("undefined field '{}'", n.name));
        break;
      }
      case Kind::kMap:
        field = operand.elem;
        break;
      case Kind::kDyn:
        field = Of(Kind::kDyn);
        break;
      default:
        return Fail(n,
                    fmt::format("type '{}' does not support field selection", TypeName(operand)));
    }
    return n.op == Op::kHas ? Of(Kind::kBool) : field;
  }

  TypePtr Index(const CelNode& n) {
    const Type& operand = *Arg(n, 0);
    const Type& key = *Arg(n, 1);
    if (operand.kind == Kind::kList && (key.kind == Kind::kInt || key.kind == Kind::kDyn))
      return operand.elem;
    if (operand.kind == Kind::kMap && Assignable(key, *operand.key)) return operand.elem;
    if (operand.kind == Kind::kDyn) return Of(Kind::kDyn);
    return NoOverload(n, "_[_]");
  }

  TypePtr List(const CelNode& n) {
    if (n.args.empty()) return ListOf(Of(Kind::kDyn));
    for (std::size_t i = 1; i < n.args.size(); ++i) {
      if (!Equivalent(*Arg(n, 0), *Arg(n, i))) {
        return Fail(*n.args[i], fmt::format("expected type '{}' but found '{}'",
                                            TypeName(*Arg(n, 0)), TypeName(*Arg(n, i))));
      }
    }
    return ListOf(Arg(n, 0));
  }

  TypePtr Relational(const CelNode& n) {
    const Kind a = ArgKind(n, 0);
    const Kind b = ArgKind(n, 1);
    auto ordered = [](Kind k) {
      return Numeric(k) || k == Kind::kString || k == Kind::kBool || k == Kind::kDyn;
    };
    const bool ok = (a == Kind::kDyn && ordered(b)) || (b == Kind::kDyn && ordered(a)) ||
                    (Numeric(a) && Numeric(b)) ||
                    (a == b && (a == Kind::kString || a == Kind::kBool));
    if (!ok) return NoOverload(n, "_<_");
    return Of(Kind::kBool);
  }

  TypePtr In(const CelNode& n) {
    const Type& container = *Arg(n, 1);
    const bool ok = container.kind == Kind::kDyn ||
                    (container.kind == Kind::kList && Assignable(*Arg(n, 0), *container.elem)) ||
                    (container.kind == Kind::kMap && Assignable(*Arg(n, 0), *container.key));
    if (!ok) return NoOverload(n, "@in");
    return Of(Kind::kBool);
  }

  TypePtr Arithmetic(const CelNode& n) {
    TypePtr a = Arg(n, 0);
    const TypePtr b = Arg(n, 1);
    auto allowed = [&](Kind k) {
      switch (n.op) {
        case Op::kAdd:
          return Numeric(k) || k == Kind::kString || k == Kind::kList;
        case Op::kMod:
          return k == Kind::kInt || k == Kind::kUint;
        default:
          return Numeric(k);
      }
    };
    static constexpr std::string_view kNames[] = {"_+_", "_-_", "_*_", "_/_", "_%_"};
    const std::string_view name = kNames[static_cast<int>(n.op) - static_cast<int>(Op::kAdd)];
    if (a->kind == Kind::kDyn && b->kind == Kind::kDyn) return a;
    if (a->kind == Kind::kDyn || b->kind == Kind::kDyn) {
      const TypePtr& known = a->kind == Kind::kDyn ? b : a;
      if (!allowed(known->kind)) return NoOverload(n, name);
      return known;
    }
    if (a->kind != b->kind || !allowed(a->kind)) return NoOverload(n, name);
    if (a->kind == Kind::kList) {
      if (!Assignable(*a->elem, *b->elem)) return NoOverload(n, name);
      return Equivalent(*a->elem, *b->elem) ? a : ListOf(Of(Kind::kDyn));
    }
    return a;
  }

  // Whether `n` names a namespace of Kubernetes' functions (cel.bind,
  // sets.contains, optional.of...) rather than a value.
  bool IsNamespace(const CelNode& n) const {
    static constexpr std::string_view kNamespaces[] = {"cel",   "sets", "optional", "strings",
                                                       "lists", "math", "base64"};
    return n.op == Op::kIdent &&
           std::find(std::begin(kNamespaces), std::end(kNamespaces), n.name) !=
               std::end(kNamespaces) &&
           std::none_of(scope_.begin(), scope_.end(),
                        [&](const auto& v) { return v.first == n.name; });
  }

  TypePtr Call(CelNode& n) {
    if (n.member && IsNamespace(*n.args[0])) {
      return errors_.Unsupported(UnsupportedFunction(n.args[0]->name + "." + n.name));
    }
    std::vector<const Overload*> named;
    for (const Overload& o : Overloads()) {
      if (o.name == n.name) named.push_back(&o);
    }
    if (named.empty()) return errors_.Unsupported(UnsupportedFunction(n.name));
    for (std::unique_ptr<CelNode>& a : n.args) {
      if (!Check(*a)) return nullptr;
    }
    std::optional<Kind> result;
    for (const Overload* o : named) {
      if (o->member != n.member || o->params.size() != n.args.size()) continue;
      bool match = true;
      for (std::size_t i = 0; i < n.args.size(); ++i) {
        const Kind k = ArgKind(n, i);
        match = match && (o->params[i] == Kind::kDyn || k == Kind::kDyn || k == o->params[i] ||
                          (k == Kind::kNull && Nullable(o->params[i])));
      }
      if (!match) continue;
      n.fn = o->fn;
      result = !result || *result == o->result ? o->result : Kind::kDyn;
    }
    if (!result) return NoOverload(n, n.name);
    return Of(*result);
  }

  TypePtr Comprehension(CelNode& n) {
    if (in_comprehension_) return errors_.Unsupported("a comprehension inside a comprehension");
    in_comprehension_ = true;
    if (!Check(*n.args[0])) return nullptr;
    const Type& range = *Arg(n, 0);
    TypePtr var;
    if (range.kind == Kind::kList) var = range.elem;
    if (range.kind == Kind::kMap) var = range.key;
    if (range.kind == Kind::kDyn) var = Of(Kind::kDyn);
    if (!var) {
      return Fail(*n.args[0],
                  fmt::format("expression of type '{}' cannot be the range of a comprehension "
                              "(must be list, map, or dynamic)",
                              TypeName(range)));
    }
    scope_.emplace_back(n.name, var);
    const bool ok = Check(*n.args[1]);
    scope_.pop_back();
    in_comprehension_ = false;
    if (!ok) return nullptr;
    const Kind k = ArgKind(n, 1);
    if (k != Kind::kBool && k != Kind::kDyn) {
      return NoOverload(n, n.op == Op::kExistsOne ? "_?_:_" : (n.op == Op::kAll ? "_&&_" : "_||_"));
    }
    return Of(Kind::kBool);
  }

  Errors& errors_;
  std::vector<std::pair<std::string, TypePtr>> scope_;
  bool in_comprehension_ = false;
};

// ---------------------------------------------------------------------------
// Evaluator.

struct Error {
  bool unsupported = false;
  std::string message;
};
using Out = std::variant<Value, Error>;

Out Fail(std::string message) { return Error{false, std::move(message)}; }
Out NoSuchOverload() { return Fail("no such overload"); }
Out Unrepresentable(std::string_view what) {
  return Error{true, fmt::format("{} beyond the quantities devshare holds exactly", what)};
}

template <typename T>
const T* As(const Value& v) {
  return std::get_if<T>(&v.v);
}

// The type's name as CEL prints it (TypeName()).
std::string_view RuntimeTypeName(const Value& v) {
  static constexpr std::string_view kNames[] = {"null_type",
                                                "bool",
                                                "int",
                                                "uint",
                                                "double",
                                                "string",
                                                "list",
                                                "map",
                                                "kubernetes.Quantity",
                                                "kubernetes.Semver"};
  return kNames[v.v.index()];
}

// The Go type of a value (as %T prints it).
std::string_view GoTypeName(const Value& v) {
  if (const auto* q = As<Quantity>(v); q && q->boxed) return "*cel.Quantity";
  static constexpr std::string_view kNames[] = {
      "types.Null",   "types.Bool",      "types.Int",      "types.Uint",   "types.Double",
      "types.String", "*types.baseList", "*types.baseMap", "cel.Quantity", "cel.Semver"};
  return kNames[v.v.index()];
}

// compare.go: ordering across int, uint and double.
int CompareDouble(double a, double b) { return a < b ? -1 : (a > b ? 1 : 0); }
int CompareDoubleInt(double d, std::int64_t i) {
  if (d < -9223372036854775808.0) return -1;
  if (d > 9223372036854775808.0) return 1;
  return CompareDouble(d, static_cast<double>(i));
}
int CompareDoubleUint(double d, std::uint64_t u) {
  if (d < 0) return -1;
  if (d > 18446744073709551616.0) return 1;
  return CompareDouble(d, static_cast<double>(u));
}
int CompareIntUint(std::int64_t i, std::uint64_t u) {
  if (i < 0 || u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return -1;
  return Cmp(i, static_cast<std::int64_t>(u));
}

// A numeric comparison, or nullopt when either side is not a number.
std::optional<int> CompareNumbers(const Value& a, const Value& b) {
  if (const auto* x = As<std::int64_t>(a)) {
    if (const auto* y = As<std::int64_t>(b)) return Cmp(*x, *y);
    if (const auto* y = As<std::uint64_t>(b)) return CompareIntUint(*x, *y);
    if (const auto* y = As<double>(b)) return -CompareDoubleInt(*y, *x);
  } else if (const auto* x = As<std::uint64_t>(a)) {
    if (const auto* y = As<std::int64_t>(b)) return -CompareIntUint(*y, *x);
    if (const auto* y = As<std::uint64_t>(b)) return Cmp(*x, *y);
    if (const auto* y = As<double>(b)) return -CompareDoubleUint(*y, *x);
  } else if (const auto* x = As<double>(a)) {
    if (const auto* y = As<std::int64_t>(b)) return CompareDoubleInt(*x, *y);
    if (const auto* y = As<std::uint64_t>(b)) return CompareDoubleUint(*x, *y);
    if (const auto* y = As<double>(b)) return CompareDouble(*x, *y);
  }
  return std::nullopt;
}

bool IsNaN(const Value& v) {
  const auto* d = As<double>(v);
  return d != nullptr && std::isnan(*d);
}

enum class Tri { kFalse, kTrue, kError };
Tri Truth(bool b) { return b ? Tri::kTrue : Tri::kFalse; }

// types.Equal: heterogeneous equality; the error is a Quantity or Semver
// receiver refusing its argument.
Tri Equal(const Value& a, const Value& b) {
  const bool a_null = As<Null>(a) != nullptr;
  const bool b_null = As<Null>(b) != nullptr;
  if (a_null || b_null) return Truth(a_null == b_null);
  if (const auto* x = As<bool>(a)) {
    const auto* y = As<bool>(b);
    return Truth(y != nullptr && *x == *y);
  }
  if (const auto* x = As<std::string>(a)) {
    const auto* y = As<std::string>(b);
    return Truth(y != nullptr && *x == *y);
  }
  if (const auto* x = As<std::shared_ptr<const List>>(a)) {
    const auto* y = As<std::shared_ptr<const List>>(b);
    if (y == nullptr || (*x)->size() != (*y)->size()) return Tri::kFalse;
    for (std::size_t i = 0; i < (*x)->size(); ++i) {
      if (Equal((**x)[i], (**y)[i]) == Tri::kFalse) return Tri::kFalse;
    }
    return Tri::kTrue;
  }
  if (const auto* x = As<MapValue>(a)) {
    const auto* y = As<MapValue>(b);
    if (y == nullptr || x->entries->size() != y->entries->size()) return Tri::kFalse;
    for (const auto& [key, value] : *x->entries) {
      const auto it = y->entries->find(key);
      if (it == y->entries->end()) {
        if (!y->default_empty) return Tri::kFalse;
        if (Equal(value, Value{MapValue{std::make_shared<const Entries>(), false}}) ==
            Tri::kFalse) {
          return Tri::kFalse;
        }
      } else if (Equal(value, it->second) == Tri::kFalse) {
        return Tri::kFalse;
      }
    }
    return Tri::kTrue;
  }
  if (const auto* x = As<Quantity>(a)) {
    const auto* y = As<Quantity>(b);
    if (y == nullptr || y->boxed) return Tri::kError;
    return Truth(x->nano == y->nano);
  }
  if (const auto* x = As<std::shared_ptr<const Semver>>(a)) {
    const auto* y = As<std::shared_ptr<const Semver>>(b);
    if (y == nullptr) return Tri::kError;
    return Truth(CompareSemver(**x, **y) == 0);
  }
  if (const auto c = CompareNumbers(a, b)) return Truth(!IsNaN(a) && !IsNaN(b) && *c == 0);
  return Tri::kFalse;
}

Out Compare(const Value& a, const Value& b) {
  if (IsNaN(a) || (IsNaN(b) && CompareNumbers(a, b))) return Fail("NaN values cannot be ordered");
  if (const auto c = CompareNumbers(a, b)) return Value{std::int64_t{*c}};
  if (const auto* x = As<std::string>(a)) {
    if (const auto* y = As<std::string>(b))
      return Value{std::int64_t{x->compare(*y) < 0 ? -1 : (x->compare(*y) > 0 ? 1 : 0)}};
  }
  if (const auto* x = As<bool>(a)) {
    if (const auto* y = As<bool>(b)) return Value{std::int64_t{Cmp(*x, *y)}};
  }
  return NoSuchOverload();
}

// + - * / % on two integers of one type, with cel-go's checked overflow.
template <typename T>
Out IntegerArithmetic(Op op, T x, T y) {
  constexpr std::string_view kOverflow =
      std::is_signed_v<T> ? "integer overflow" : "unsigned integer overflow";
  T r = 0;
  switch (op) {
    case Op::kAdd:
      if (__builtin_add_overflow(x, y, &r)) return Fail(std::string(kOverflow));
      return Value{r};
    case Op::kSub:
      if (__builtin_sub_overflow(x, y, &r)) return Fail(std::string(kOverflow));
      return Value{r};
    case Op::kMul:
      if (__builtin_mul_overflow(x, y, &r)) return Fail(std::string(kOverflow));
      return Value{r};
    case Op::kDiv:
    case Op::kMod:
      if (y == 0) return Fail(op == Op::kDiv ? "division by zero" : "modulus by zero");
      if constexpr (std::is_signed_v<T>) {
        if (x == std::numeric_limits<T>::min() && y == -1) return Fail(std::string(kOverflow));
      }
      return Value{op == Op::kDiv ? x / y : x % y};
    default:
      return NoSuchOverload();
  }
}

Out Arithmetic(Op op, const Value& a, const Value& b) {
  if (const auto* x = As<std::int64_t>(a)) {
    const auto* y = As<std::int64_t>(b);
    return y == nullptr ? NoSuchOverload() : IntegerArithmetic(op, *x, *y);
  }
  if (const auto* x = As<std::uint64_t>(a)) {
    const auto* y = As<std::uint64_t>(b);
    return y == nullptr ? NoSuchOverload() : IntegerArithmetic(op, *x, *y);
  }
  if (const auto* x = As<double>(a)) {
    const auto* y = As<double>(b);
    if (y == nullptr) return NoSuchOverload();
    switch (op) {
      case Op::kAdd:
        return Value{*x + *y};
      case Op::kSub:
        return Value{*x - *y};
      case Op::kMul:
        return Value{*x * *y};
      case Op::kDiv:
        return Value{*x / *y};
      default:
        return NoSuchOverload();
    }
  }
  if (op != Op::kAdd) return NoSuchOverload();
  if (const auto* x = As<std::string>(a)) {
    if (const auto* y = As<std::string>(b)) return Value{*x + *y};
  }
  if (const auto* x = As<std::shared_ptr<const List>>(a)) {
    if (const auto* y = As<std::shared_ptr<const List>>(b)) {
      auto joined = std::make_shared<List>(**x);
      joined->insert(joined->end(), (*y)->begin(), (*y)->end());
      return Value{std::shared_ptr<const List>(std::move(joined))};
    }
  }
  return NoSuchOverload();
}

std::string FormatValue(const Value& v) {
  if (const auto* s = As<std::string>(v)) return *s;
  if (const auto* i = As<std::int64_t>(v)) return std::to_string(*i);
  if (const auto* u = As<std::uint64_t>(v)) return std::to_string(*u);
  if (const auto* d = As<double>(v)) return fmt::format("{}", *d);
  if (const auto* b = As<bool>(v)) return *b ? "true" : "false";
  return std::string(RuntimeTypeName(v));
}

// m.key or m[key] on a map or list value (refQualify in attributes.go).
Out Qualify(const Value& operand, const Value& key) {
  if (const auto* m = As<MapValue>(operand)) {
    if (const auto* k = As<std::string>(key)) {
      if (auto it = m->entries->find(*k); it != m->entries->end()) return it->second;
    }
    if (m->default_empty) return Value{MapValue{std::make_shared<const Entries>(), false}};
    return Fail("no such key: " + FormatValue(key));
  }
  if (const auto* l = As<std::shared_ptr<const List>>(operand)) {
    std::int64_t index = -1;
    if (const auto* i = As<std::int64_t>(key)) {
      index = *i;
    } else if (const auto* u = As<std::uint64_t>(key); u && *u <= 9223372036854775807u) {
      index = static_cast<std::int64_t>(*u);
    } else if (const auto* d = As<double>(key);
               d && *d >= -9223372036854775808.0 && *d < 9223372036854775808.0 &&
               static_cast<double>(static_cast<std::int64_t>(*d)) == *d) {
      index = static_cast<std::int64_t>(*d);
    } else if (As<std::uint64_t>(key) || As<double>(key)) {
      return Fail(fmt::format("unsupported index value {} in list", FormatValue(key)));
    } else {
      return Fail(fmt::format("unsupported index type '{}' in list", RuntimeTypeName(key)));
    }
    if (index < 0 || static_cast<std::uint64_t>(index) >= (*l)->size()) {
      return Fail("index out of bounds: " + FormatValue(key));
    }
    return (**l)[static_cast<std::size_t>(index)];
  }
  return Fail("no such key: " + FormatValue(key));
}

std::int64_t CodePoints(std::string_view s) {
  return std::count_if(s.begin(), s.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

Value SemverValue(Semver v) { return Value{std::make_shared<const Semver>(std::move(v))}; }

class Evaluator {
 public:
  explicit Evaluator(Value device) : device_(std::move(device)) {}

  Out Eval(const CelNode& n) {
    switch (n.op) {
      case Op::kConst:
        return n.value;
      case Op::kIdent: {
        auto bound = std::find_if(scope_.rbegin(), scope_.rend(),
                                  [&](const auto& v) { return v.first == n.name; });
        return bound != scope_.rend() ? bound->second : device_;
      }
      case Op::kSelect:
      case Op::kHas:
        return Select(n);
      case Op::kIndex:
        return Binary(n, [](const Value& a, const Value& b) { return Qualify(a, b); });
      case Op::kList: {
        auto list = std::make_shared<List>();
        for (const auto& a : n.args) {
          Out v = Eval(*a);
          if (std::holds_alternative<Error>(v)) return v;
          list->push_back(std::get<Value>(std::move(v)));
        }
        return Value{std::shared_ptr<const List>(std::move(list))};
      }
      case Op::kNot:
        return Unary(n, [](const Value& v) -> Out {
          if (const auto* b = As<bool>(v)) return Value{!*b};
          return NoSuchOverload();
        });
      case Op::kNeg:
        return Unary(n, [](const Value& v) -> Out {
          if (const auto* i = As<std::int64_t>(v)) {
            if (*i == std::numeric_limits<std::int64_t>::min()) return Fail("integer overflow");
            return Value{-*i};
          }
          if (const auto* d = As<double>(v)) return Value{-*d};
          return NoSuchOverload();
        });
      case Op::kAnd:
      case Op::kOr:
        return Logical(n);
      case Op::kCond: {
        Out cond = Eval(*n.args[0]);
        if (std::holds_alternative<Error>(cond)) return cond;
        const auto* b = As<bool>(std::get<Value>(cond));
        if (b == nullptr) return NoSuchOverload();
        return Eval(*n.args[*b ? 1 : 2]);
      }
      case Op::kEq:
      case Op::kNe:
        return Binary(n, [&](const Value& a, const Value& b) -> Out {
          const Tri t = Equal(a, b);
          if (n.op == Op::kNe) return Value{t != Tri::kTrue};
          if (t == Tri::kError) return NoSuchOverload();
          return Value{t == Tri::kTrue};
        });
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe:
        return Binary(n, [&](const Value& a, const Value& b) -> Out {
          Out c = Compare(a, b);
          if (std::holds_alternative<Error>(c)) return c;
          const std::int64_t r = *As<std::int64_t>(std::get<Value>(c));
          switch (n.op) {
            case Op::kLt:
              return Value{r < 0};
            case Op::kLe:
              return Value{r <= 0};
            case Op::kGt:
              return Value{r > 0};
            default:
              return Value{r >= 0};
          }
        });
      case Op::kIn:
        return Binary(n, [](const Value& a, const Value& b) -> Out {
          if (const auto* l = As<std::shared_ptr<const List>>(b)) {
            return Value{std::any_of((*l)->begin(), (*l)->end(),
                                     [&](const Value& e) { return Equal(a, e) == Tri::kTrue; })};
          }
          if (const auto* m = As<MapValue>(b)) {
            const auto* k = As<std::string>(a);
            return Value{k != nullptr && m->entries->contains(*k)};
          }
          return NoSuchOverload();
        });
      case Op::kAdd:
      case Op::kSub:
      case Op::kMul:
      case Op::kDiv:
      case Op::kMod:
        return Binary(n, [&](const Value& a, const Value& b) { return Arithmetic(n.op, a, b); });
      case Op::kCall:
        return Call(n);
      case Op::kAll:
      case Op::kExists:
      case Op::kExistsOne:
        return Comprehension(n);
    }
    return NoSuchOverload();
  }

 private:
  template <typename F>
  Out Unary(const CelNode& n, F f) {
    Out v = Eval(*n.args[0]);
    if (std::holds_alternative<Error>(v)) return v;
    return f(std::get<Value>(v));
  }

  template <typename F>
  Out Binary(const CelNode& n, F f) {
    Out a = Eval(*n.args[0]);
    Out b = Eval(*n.args[1]);
    if (std::holds_alternative<Error>(a)) return a;
    if (std::holds_alternative<Error>(b)) return b;
    return f(std::get<Value>(a), std::get<Value>(b));
  }

  // && and ||: the deciding value wins over an error on either side, else
  // the first error, else the other value (evalAnd / evalOr).
  Out Logical(const CelNode& n) {
    const bool decisive = n.op == Op::kOr;
    std::optional<Error> error;
    for (const auto& a : n.args) {
      Out v = Eval(*a);
      const bool* b = std::holds_alternative<Value>(v) ? As<bool>(std::get<Value>(v)) : nullptr;
      if (b != nullptr && *b == decisive) return Value{decisive};
      if (b == nullptr && !error) {
        error = std::holds_alternative<Error>(v) ? std::get<Error>(std::move(v))
                                                 : Error{false, "no such overload"};
      }
    }
    if (error) return *error;
    return Value{!decisive};
  }

  Out Select(const CelNode& n) {
    Out operand = Eval(*n.args[0]);
    if (std::holds_alternative<Error>(operand)) return operand;
    const Value& v = std::get<Value>(operand);
    if (n.op == Op::kSelect) return Qualify(v, Value{n.name});
    // A presence test on what has no fields is false, on a list an error
    // (refQualify without errorOnBadPresenceTest).
    if (As<std::shared_ptr<const List>>(v)) return Fail("unsupported index type 'string' in list");
    const auto* m = As<MapValue>(v);
    return Value{m != nullptr && (m->default_empty || m->entries->contains(n.name))};
  }

  Out Comprehension(const CelNode& n) {
    Out range = Eval(*n.args[0]);
    if (std::holds_alternative<Error>(range)) return range;
    const Value& r = std::get<Value>(range);
    std::vector<Value> items;
    if (const auto* l = As<std::shared_ptr<const List>>(r)) {
      items = **l;
    } else if (const auto* m = As<MapValue>(r)) {
      for (const auto& [key, value] : *m->entries) items.push_back(Value{key});
    } else {
      return Fail(fmt::format("got '{}', expected iterable type", GoTypeName(r)));
    }
    std::optional<Error> error;
    std::int64_t count = 0;
    for (Value& item : items) {
      scope_.emplace_back(n.name, std::move(item));
      Out v = Eval(*n.args[1]);
      scope_.pop_back();
      const bool* b = std::holds_alternative<Value>(v) ? As<bool>(std::get<Value>(v)) : nullptr;
      // all and exists keep the first error (accu && pred), exists_one the
      // last (pred ? accu + 1 : accu).
      if (b == nullptr) {
        if (!error || n.op == Op::kExistsOne) {
          error = std::holds_alternative<Error>(v) ? std::get<Error>(std::move(v))
                                                   : Error{false, "no such overload"};
        }
        continue;
      }
      if (n.op == Op::kAll && !*b) return Value{false};
      if (n.op == Op::kExists && *b) return Value{true};
      count += *b ? 1 : 0;
    }
    if (error) return *error;
    if (n.op == Op::kExistsOne) return Value{count == 1};
    return Value{n.op == Op::kAll};
  }

  Out Call(const CelNode& n) {
    std::vector<Value> args;
    for (const auto& a : n.args) {
      Out v = Eval(*a);
      if (std::holds_alternative<Error>(v)) return v;
      args.push_back(std::get<Value>(std::move(v)));
    }
    return Apply(n.fn, args);
  }

  static Out Apply(Fn fn, const std::vector<Value>& args) {
    const Value& a = args[0];
    const std::string* s = As<std::string>(a);
    const Quantity* q = As<Quantity>(a);
    const auto* v = As<std::shared_ptr<const Semver>>(a);
    switch (fn) {
      case Fn::kSize:
        if (s) return Value{CodePoints(*s)};
        if (const auto* l = As<std::shared_ptr<const List>>(a))
          return Value{static_cast<std::int64_t>((*l)->size())};
        if (const auto* m = As<MapValue>(a))
          return Value{static_cast<std::int64_t>(m->entries->size())};
        return NoSuchOverload();
      case Fn::kStartsWith:
      case Fn::kEndsWith:
      case Fn::kContains: {
        const std::string* t = As<std::string>(args[1]);
        if (!s || !t) return NoSuchOverload();
        if (fn == Fn::kStartsWith)
          return Value{s->compare(0, t->size(), *t) == 0 && s->size() >= t->size()};
        if (fn == Fn::kEndsWith) {
          return Value{s->size() >= t->size() &&
                       s->compare(s->size() - t->size(), t->size(), *t) == 0};
        }
        return Value{s->find(*t) != std::string::npos};
      }
      case Fn::kLowerAscii:
      case Fn::kUpperAscii: {
        if (!s) return NoSuchOverload();
        std::string out = *s;
        for (char& c : out) {
          if (fn == Fn::kLowerAscii && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
          if (fn == Fn::kUpperAscii && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
        }
        return Value{std::move(out)};
      }
      case Fn::kIncludes:
        if (const auto* l = As<std::shared_ptr<const List>>(a)) {
          return Value{std::any_of((*l)->begin(), (*l)->end(), [&](const Value& e) {
            return Equal(e, args[1]) == Tri::kTrue;
          })};
        }
        return Value{Equal(a, args[1]) == Tri::kTrue};
      case Fn::kQuantity:
      case Fn::kIsQuantity: {
        if (!s) return NoSuchOverload();
        const QuantityParse p = ParseK8sQuantity(*s);
        if (fn == Fn::kIsQuantity) return Value{p.outcome != QuantityParse::Outcome::kInvalid};
        if (p.outcome == QuantityParse::Outcome::kInvalid) return Fail(std::string(p.error));
        if (p.outcome == QuantityParse::Outcome::kUnrepresentable)
          return Unrepresentable(fmt::format("quantity({:?})", *s));
        return Value{p.quantity};
      }
      case Fn::kSign:
        if (!q) return NoSuchOverload();
        return Value{std::int64_t{q->nano > 0 ? 1 : (q->nano < 0 ? -1 : 0)}};
      case Fn::kCompareTo:
      case Fn::kIsGreaterThan:
      case Fn::kIsLessThan: {
        int c = 0;
        if (const auto* q2 = As<Quantity>(args[1]); q && q2) {
          c = Cmp(q->nano, q2->nano);
        } else if (const auto* v2 = As<std::shared_ptr<const Semver>>(args[1]); v && v2) {
          c = CompareSemver(**v, **v2);
        } else {
          return NoSuchOverload();
        }
        if (fn == Fn::kCompareTo) return Value{std::int64_t{c}};
        return Value{fn == Fn::kIsGreaterThan ? c == 1 : c == -1};
      }
      case Fn::kAdd:
      case Fn::kSub: {
        if (!q) return NoSuchOverload();
        Quantity other;
        if (const auto* q2 = As<Quantity>(args[1])) {
          other = *q2;
        } else if (const auto* i = As<std::int64_t>(args[1])) {
          other = Quantity{static_cast<i128>(*i) * 1000000000, Quantity::Rep::kInt64Amount, *i, 0,
                           false};
        } else {
          return NoSuchOverload();
        }
        const auto r = fn == Fn::kAdd ? AddQuantities(*q, other) : SubQuantities(*q, other);
        if (!r) return Unrepresentable("a quantity sum");
        return Value{*r};
      }
      case Fn::kAsInteger:
      case Fn::kIsInteger: {
        if (!q) return NoSuchOverload();
        if (q->rep == Quantity::Rep::kUnknown)
          return Unrepresentable("the integer form of a capacity of 1e14 or more,");
        std::optional<std::int64_t> i;
        if (q->rep == Quantity::Rep::kInt64Amount && q->scale >= 0)
          i = PositiveScale(q->value, q->scale);
        if (fn == Fn::kIsInteger) return Value{i.has_value()};
        if (!i) return Fail("cannot convert value to integer");
        return Value{*i};
      }
      case Fn::kSemver:
      case Fn::kIsSemver: {
        const bool* normalize = args.size() > 1 ? As<bool>(args[1]) : nullptr;
        if (!s || (args.size() > 1 && !normalize)) return NoSuchOverload();
        auto parsed = normalize && *normalize ? ParseSemverNormalized(*s) : ParseSemver(*s);
        if (fn == Fn::kIsSemver) return Value{std::holds_alternative<Semver>(parsed)};
        if (auto* e = std::get_if<std::string>(&parsed)) return Fail(std::move(*e));
        return SemverValue(std::get<Semver>(std::move(parsed)));
      }
      case Fn::kMajor:
      case Fn::kMinor:
      case Fn::kPatch: {
        if (!v) return NoSuchOverload();
        const std::uint64_t part =
            fn == Fn::kMajor ? (*v)->major : (fn == Fn::kMinor ? (*v)->minor : (*v)->patch);
        return Value{static_cast<std::int64_t>(part)};  // Go's types.Int(uint64) wraps
      }
      case Fn::kNone:
        break;
    }
    return NoSuchOverload();
  }

  Value device_;
  std::vector<std::pair<std::string, Value>> scope_;
};

// ---------------------------------------------------------------------------
// The `device` variable (DeviceMatches in compile.go).

std::optional<Value> AttributeValue(const dra::AttributeValue& attribute, std::string& error) {
  auto version = [&](const Version& v) -> std::optional<Value> {
    auto parsed = ParseSemver(v.text);
    if (auto* e = std::get_if<std::string>(&parsed)) {
      error = "parse semantic version: " + *e;
      return std::nullopt;
    }
    return SemverValue(std::get<Semver>(std::move(parsed)));
  };
  auto scalar = [&](const auto& x) -> std::optional<Value> {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, Version>) {
      return version(x);
    } else {
      return Value{x};
    }
  };
  return std::visit(
      [&](const auto& x) -> std::optional<Value> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<std::int64_t>> ||
                      std::is_same_v<T, std::vector<bool>> ||
                      std::is_same_v<T, std::vector<std::string>> ||
                      std::is_same_v<T, std::vector<Version>>) {
          auto list = std::make_shared<List>();
          for (const auto& e : x) {
            auto v = scalar(static_cast<typename T::value_type>(e));
            if (!v) return std::nullopt;
            list->push_back(std::move(*v));
          }
          return Value{std::shared_ptr<const List>(std::move(list))};
        } else {
          return scalar(x);
        }
      },
      attribute);
}

Result<Value> DeviceValue(std::string_view driver, const Device& device) {
  std::map<std::string, Entries, std::less<>> attributes;
  for (const auto& [key, attribute] : device.attributes) {
    std::string error;
    auto value = AttributeValue(attribute, error);
    if (!value) return Status::InvalidArgument(fmt::format("attribute {}: {}", key, error));
    const QualifiedName q = SplitQualifiedName(key, driver);
    attributes[std::string(q.domain)][std::string(q.name)] = std::move(*value);
  }
  std::map<std::string, Entries, std::less<>> capacity;
  for (const auto& [key, c] : device.capacity) {
    const QualifiedName q = SplitQualifiedName(key, driver);
    capacity[std::string(q.domain)][std::string(q.name)] = Value{CapacityQuantity(c.value)};
  }
  auto outer = [](std::map<std::string, Entries, std::less<>>& domains) {
    auto entries = std::make_shared<Entries>();
    for (auto& [domain, inner] : domains) {
      (*entries)[domain] =
          Value{MapValue{std::make_shared<const Entries>(std::move(inner)), false}};
    }
    return Value{MapValue{std::move(entries), true}};
  };
  auto fields = std::make_shared<Entries>();
  (*fields)["driver"] = Value{std::string(driver)};
  (*fields)["allowMultipleAllocations"] = Value{device.allow_multiple_allocations};
  (*fields)["attributes"] = outer(attributes);
  (*fields)["capacity"] = outer(capacity);
  return Value{MapValue{std::move(fields), false}};
}

}  // namespace
}  // namespace internal

Selector::Selector(std::string expression, std::shared_ptr<const internal::CelNode> root)
    : expression_(std::move(expression)), root_(std::move(root)) {}

Result<Selector> CompileSelector(std::string_view expression) {
  internal::Errors errors(expression);
  if (expression.size() > internal::kMaxExpressionLength) {
    errors.Malformed(internal::kMaxExpressionLength, "longer than the API's limit of 10240 bytes");
    return errors.take();
  }
  if (const auto bad = internal::InvalidUtf8(expression)) {
    errors.Malformed(*bad, "invalid UTF-8");
    return errors.take();
  }
  internal::Parser parser(expression, errors);
  internal::NodePtr root = parser.Parse();
  if (!root) return errors.take();
  if (!internal::Checker(errors).Check(*root)) return errors.take();
  if (root->type->kind != internal::Kind::kBool && root->type->kind != internal::Kind::kDyn) {
    errors.Malformed(0, fmt::format("must evaluate to bool or the unknown type, not {}",
                                    internal::TypeName(*root->type)));
    return errors.take();
  }
  return Selector(std::string(expression), std::move(root));
}

Result<bool> Matches(const Selector& selector, std::string_view driver, const Device& device) {
  Result<internal::Value> device_value = internal::DeviceValue(driver, device);
  if (!device_value.ok()) return device_value.status();
  internal::Evaluator evaluator(std::move(*device_value));
  internal::Out out = evaluator.Eval(*selector.root_);
  if (auto* e = std::get_if<internal::Error>(&out)) {
    if (e->unsupported) {
      return Status::Unsupported(
          fmt::format("CEL selector {:?}: {}", selector.expression(), e->message));
    }
    return Status::InvalidArgument(std::move(e->message));
  }
  const internal::Value& v = std::get<internal::Value>(out);
  if (const bool* b = internal::As<bool>(v)) return *b;
  return Status::InvalidArgument(fmt::format("CEL result of type {} could not be converted to bool",
                                             internal::RuntimeTypeName(v)));
}

}  // namespace devshare::dra
