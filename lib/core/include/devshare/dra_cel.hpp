// devshare/dra_cel.hpp — the CEL device selectors of Kubernetes DRA
// (resource.k8s.io/v1 DeviceClass and ResourceClaim `selectors[].cel`),
// evaluated as Kubernetes v1.37 evaluates them, for the part of CEL that
// selectors are written in; everything else is refused by name.
//
// The environment is k8s.io/dynamic-resource-allocation/cel's: one
// variable `device` with the fields `driver` (string),
// `allowMultipleAllocations` (bool), `attributes` (domain -> name -> value;
// an unknown domain is an empty map, an unknown name in it the runtime
// error "no such key: <name>") and `capacity` (domain -> name -> quantity).
// Expressions are type-checked as Kubernetes checks them (attribute values
// are dyn), and must have type bool or dyn.
//
// What devshare evaluates:
//   literals: int, uint (`1u`), double, string (quotes, triple quotes, raw,
//     escapes), bool, null, lists `[a, b]` (elements of one type);
//   `device` and its fields, field selection `m.f`, index `m["k"]`,
//     `l[i]`, has(m.f);
//   operators `! - * / % + - == != < <= > >= in && || ?:` with CEL's
//     typing and errors: no implicit int/uint/double arithmetic, ordered
//     and equality comparisons across int/uint/double, overflow, division
//     and modulus by zero are errors, `&&` and `||` absorb an error when
//     the other side decides the result;
//   size(), startsWith, endsWith, contains, lowerAscii, upperAscii,
//     includes;
//   Kubernetes quantities: quantity, isQuantity, sign, compareTo,
//     isGreaterThan, isLessThan, add, sub, asInteger, isInteger;
//   Kubernetes semantic versions: semver (with the normalizing form),
//     isSemver, compareTo, isGreaterThan, isLessThan, major, minor, patch;
//   the macros all, exists and exists_one (existsOne) over a list or a
//     map, not nested.
// Anything else valid in Kubernetes' environment — map literals, optional
// syntax (`?.`, `[?`, orValue), conversions (int(), string(), dyn()...),
// type values, bytes, the other macros (map, filter, cel.bind...),
// matches, asApproximateFloat, the strings/lists/sets/ip/url extensions —
// and expressions nested more than 100 levels deep give kUnsupported.
//
// Thread-safety: a Selector is immutable; Matches may run on one Selector
// from many threads.
#ifndef DEVSHARE_DRA_CEL_HPP_
#define DEVSHARE_DRA_CEL_HPP_

#include <memory>
#include <string>
#include <string_view>

#include "devshare/dra.hpp"
#include "devshare/export.hpp"
#include "devshare/status.hpp"

namespace devshare::dra {

namespace cel {
struct Node;  // private: the checked AST (src/dra/cel/ast.hpp)
}  // namespace cel

class Selector;

// Parses and type-checks `expression`. Errors:
//   kMalformed: not valid CEL in Kubernetes' environment (syntax, an
//     undeclared name, no matching overload, a result that is neither bool
//     nor dyn, longer than the API's 10 KiB); offset() is the byte position
//     of the problem.
//   kUnsupported: valid CEL beyond what devshare evaluates; field() names
//     the construct and the message quotes the expression.
DEVSHARE_EXPORT Result<Selector> CompileSelector(std::string_view expression);

// Evaluates `selector` for `device` of a slice of `driver` (the domain of
// the device's unqualified attribute and capacity names). Errors:
//   kInvalidArgument: a runtime error as Kubernetes reports it ("no such
//     key: model", "integer overflow", "division by zero", a version
//     attribute that is not a semantic version, a result that is not bool);
//   kUnsupported: a value devshare cannot hold exactly (a quantity beyond
//     ±1.7e29, or whose integer form depends on how the API server
//     formatted it).
DEVSHARE_EXPORT Result<bool> Matches(const Selector& selector, std::string_view driver,
                                     const Device& device);

// A compiled selector expression.
class DEVSHARE_EXPORT Selector {
 public:
  // The expression as given to CompileSelector.
  const std::string& expression() const { return expression_; }

 private:
  friend Result<Selector> CompileSelector(std::string_view expression);
  friend Result<bool> Matches(const Selector& selector, std::string_view driver,
                              const Device& device);
  Selector(std::string expression, std::shared_ptr<const cel::Node> root);

  std::string expression_;
  std::shared_ptr<const cel::Node> root_;
};

}  // namespace devshare::dra

#endif  // DEVSHARE_DRA_CEL_HPP_
