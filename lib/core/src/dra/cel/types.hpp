// Private (dra layer): the static types of the CEL selector checker —
// CEL's kinds, list(T) and map(K, V), and Kubernetes' Quantity, Semver and
// DRADevice — with cel-go's assignability and equivalence. Types are
// immutable and shared.
#ifndef DEVSHARE_SRC_DRA_CEL_TYPES_HPP_
#define DEVSHARE_SRC_DRA_CEL_TYPES_HPP_

#include <cstdint>
#include <memory>
#include <string>

namespace devshare::dra::cel {

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

TypePtr Of(Kind kind);
TypePtr ListOf(TypePtr elem);
TypePtr MapOf(TypePtr key, TypePtr elem);

// The type as cel-go's messages print it: "int", "list(string)",
// "map(string, dyn)", "kubernetes.Quantity".
std::string TypeName(const Type& t);

// Whether null may stand for a value of kind `k` (the object types).
bool Nullable(Kind k);

// Whether a value of one type may stand where the other is expected
// (checker/types.go internalIsAssignable, without type parameters): dyn
// matches anything, null the nullable kinds, lists and maps by their
// parameters.
bool Assignable(const Type& a, const Type& b);

// Whether the types are the same, dyn only matching dyn.
bool Equivalent(const Type& a, const Type& b);

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_TYPES_HPP_
