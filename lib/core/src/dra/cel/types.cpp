// The static types of the CEL selector checker (types.hpp).
#include "dra/cel/types.hpp"

#include <fmt/format.h>

#include <utility>

namespace devshare::dra::cel {

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

}  // namespace devshare::dra::cel
