// Private (dra layer): the AST of a CEL selector, as the parser builds it
// (parser.hpp), the checker types it in place (checker.hpp) and the
// evaluator walks it (eval.hpp). A Node owns its operands; after checking,
// a tree is immutable and may be evaluated from many threads.
#ifndef DEVSHARE_SRC_DRA_CEL_AST_HPP_
#define DEVSHARE_SRC_DRA_CEL_AST_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dra/cel/types.hpp"
#include "dra/cel/value.hpp"

namespace devshare::dra::cel {

constexpr std::size_t kMaxExpressionLength = 10 * 1024;  // CELSelectorExpressionMaxLength
constexpr int kMaxDepth = 100;                           // nesting beyond it is kUnsupported

// What a node does; args are its operands in source order.
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

// One node of the AST.
struct Node {
  Value value;       // kConst
  std::string name;  // identifier, field, function or iteration variable
  std::vector<std::unique_ptr<Node>> args;
  TypePtr type;            // set by the checker
  std::size_t offset = 0;  // of the token that names the node
  int depth = 1;
  Op op = Op::kConst;
  Fn fn = Fn::kNone;    // kCall: the function the checker resolved
  bool member = false;  // kCall: args[0] is the receiver
};

using NodePtr = std::unique_ptr<Node>;

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_AST_HPP_
