// The type checker of CEL selectors (checker.hpp).
#include "dra/cel/checker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace devshare::dra::cel {
namespace {

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
  bool Check(Node& n) {
    const bool own =
        n.op == Op::kCall || n.op == Op::kAll || n.op == Op::kExists || n.op == Op::kExistsOne;
    for (std::unique_ptr<Node>& a : n.args) {
      if (!own && !Check(*a)) return false;
    }
    n.type = TypeOf(n);
    return n.type != nullptr;
  }

 private:
  std::nullptr_t Fail(const Node& n, std::string_view message) {
    return errors_.Malformed(n.offset, message);
  }
  std::nullptr_t NoOverload(const Node& n, std::string_view function) {
    std::string types;
    for (const auto& a : n.args) types += (types.empty() ? "" : ", ") + TypeName(*a->type);
    return Fail(
        n, fmt::format("found no matching overload for '{}' applied to '({})'", function, types));
  }

  TypePtr Arg(const Node& n, std::size_t i) const { return n.args[i]->type; }
  Kind ArgKind(const Node& n, std::size_t i) const { return n.args[i]->type->kind; }

  TypePtr TypeOf(Node& n) {
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

  TypePtr Ident(const Node& n) {
    // The innermost comprehension variable of the name, if any.
    auto bound = std::find_if(scope_.rbegin(), scope_.rend(),
                              [&](const auto& v) { return v.first == n.name; });
    if (bound != scope_.rend()) return bound->second;
    if (n.name == "device") return Of(Kind::kDevice);
    if (IsTypeName(n.name)) return errors_.Unsupported(fmt::format("the type name '{}'", n.name));
    return Fail(n, fmt::format("undeclared reference to '{}'", n.name));
  }

  TypePtr Select(const Node& n) {
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

  TypePtr Index(const Node& n) {
    const Type& operand = *Arg(n, 0);
    const Type& key = *Arg(n, 1);
    if (operand.kind == Kind::kList && (key.kind == Kind::kInt || key.kind == Kind::kDyn))
      return operand.elem;
    if (operand.kind == Kind::kMap && Assignable(key, *operand.key)) return operand.elem;
    if (operand.kind == Kind::kDyn) return Of(Kind::kDyn);
    return NoOverload(n, "_[_]");
  }

  TypePtr List(const Node& n) {
    if (n.args.empty()) return ListOf(Of(Kind::kDyn));
    for (std::size_t i = 1; i < n.args.size(); ++i) {
      if (!Equivalent(*Arg(n, 0), *Arg(n, i))) {
        return Fail(*n.args[i], fmt::format("expected type '{}' but found '{}'",
                                            TypeName(*Arg(n, 0)), TypeName(*Arg(n, i))));
      }
    }
    return ListOf(Arg(n, 0));
  }

  TypePtr Relational(const Node& n) {
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

  TypePtr In(const Node& n) {
    const Type& container = *Arg(n, 1);
    const bool ok = container.kind == Kind::kDyn ||
                    (container.kind == Kind::kList && Assignable(*Arg(n, 0), *container.elem)) ||
                    (container.kind == Kind::kMap && Assignable(*Arg(n, 0), *container.key));
    if (!ok) return NoOverload(n, "@in");
    return Of(Kind::kBool);
  }

  TypePtr Arithmetic(const Node& n) {
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
  bool IsNamespace(const Node& n) const {
    static constexpr std::string_view kNamespaces[] = {"cel",   "sets", "optional", "strings",
                                                       "lists", "math", "base64"};
    return n.op == Op::kIdent &&
           std::find(std::begin(kNamespaces), std::end(kNamespaces), n.name) !=
               std::end(kNamespaces) &&
           std::none_of(scope_.begin(), scope_.end(),
                        [&](const auto& v) { return v.first == n.name; });
  }

  TypePtr Call(Node& n) {
    if (n.member && IsNamespace(*n.args[0])) {
      return errors_.Unsupported(UnsupportedFunction(n.args[0]->name + "." + n.name));
    }
    std::vector<const Overload*> named;
    for (const Overload& o : Overloads()) {
      if (o.name == n.name) named.push_back(&o);
    }
    if (named.empty()) return errors_.Unsupported(UnsupportedFunction(n.name));
    for (std::unique_ptr<Node>& a : n.args) {
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

  TypePtr Comprehension(Node& n) {
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

}  // namespace

bool Check(Node& root, Errors& errors) { return Checker(errors).Check(root); }

}  // namespace devshare::dra::cel
