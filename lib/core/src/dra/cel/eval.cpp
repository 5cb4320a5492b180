// The evaluator of checked CEL selectors (eval.hpp).
//
// The reference is cel-go v0.29 (interpreter, common/types) with
// Kubernetes' libraries (k8s.io/apiserver/pkg/cel/library).
#include "dra/cel/eval.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "k8s/quantity.hpp"

namespace devshare::dra::cel {
namespace {

Out Fail(std::string message) { return Error{false, std::move(message)}; }
Out NoSuchOverload() { return Fail("no such overload"); }
Out Unrepresentable(std::string_view what) {
  return Error{true, fmt::format("{} beyond the quantities devshare holds exactly", what)};
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
  if (const auto* x = As<QuantityValue>(a)) {
    const auto* y = As<QuantityValue>(b);
    if (y == nullptr || y->boxed) return Tri::kError;
    return Truth(x->quantity.nano == y->quantity.nano);
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

class Evaluator {
 public:
  explicit Evaluator(Value device) : device_(std::move(device)) {}

  Out Eval(const Node& n) {
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
  Out Unary(const Node& n, F f) {
    Out v = Eval(*n.args[0]);
    if (std::holds_alternative<Error>(v)) return v;
    return f(std::get<Value>(v));
  }

  template <typename F>
  Out Binary(const Node& n, F f) {
    Out a = Eval(*n.args[0]);
    Out b = Eval(*n.args[1]);
    if (std::holds_alternative<Error>(a)) return a;
    if (std::holds_alternative<Error>(b)) return b;
    return f(std::get<Value>(a), std::get<Value>(b));
  }

  // && and ||: the deciding value wins over an error on either side, else
  // the first error, else the other value (evalAnd / evalOr).
  Out Logical(const Node& n) {
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

  Out Select(const Node& n) {
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

  Out Comprehension(const Node& n) {
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

  Out Call(const Node& n) {
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
    const QuantityValue* qv = As<QuantityValue>(a);
    const k8s::Quantity* q = qv ? &qv->quantity : nullptr;
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
        const k8s::QuantityParse p = k8s::ParseQuantity(*s);
        if (fn == Fn::kIsQuantity) return Value{p.outcome != k8s::QuantityParse::Outcome::kInvalid};
        if (p.outcome == k8s::QuantityParse::Outcome::kInvalid) return Fail(std::string(p.error));
        if (p.outcome == k8s::QuantityParse::Outcome::kUnrepresentable)
          return Unrepresentable(fmt::format("quantity({:?})", *s));
        return Value{QuantityValue{p.quantity, false}};
      }
      case Fn::kSign:
        if (!q) return NoSuchOverload();
        return Value{std::int64_t{q->nano > 0 ? 1 : (q->nano < 0 ? -1 : 0)}};
      case Fn::kCompareTo:
      case Fn::kIsGreaterThan:
      case Fn::kIsLessThan: {
        int c = 0;
        if (const auto* q2 = As<QuantityValue>(args[1]); q && q2) {
          c = Cmp(q->nano, q2->quantity.nano);
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
        k8s::Quantity other;
        if (const auto* q2 = As<QuantityValue>(args[1])) {
          other = q2->quantity;
        } else if (const auto* i = As<std::int64_t>(args[1])) {
          other = k8s::QuantityOfUnits(*i);
        } else {
          return NoSuchOverload();
        }
        const auto r =
            fn == Fn::kAdd ? k8s::AddQuantities(*q, other) : k8s::SubQuantities(*q, other);
        if (!r) return Unrepresentable("a quantity sum");
        return Value{QuantityValue{*r, true}};
      }
      case Fn::kAsInteger:
      case Fn::kIsInteger: {
        if (!q) return NoSuchOverload();
        if (q->form == k8s::Quantity::Form::kUnknown)
          return Unrepresentable("the integer form of a capacity of 1e14 or more,");
        const std::optional<std::int64_t> i = k8s::GoAsInt64(*q);
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

}  // namespace

Out Evaluate(const Node& root, Value device) { return Evaluator(std::move(device)).Eval(root); }

}  // namespace devshare::dra::cel
