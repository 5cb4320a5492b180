// Private (dra layer): the evaluator of checked CEL selectors — a tree walk
// with cel-go's runtime semantics: heterogeneous numeric comparison and
// equality, checked integer arithmetic, && and || absorbing an error when
// the other side decides, the comprehension macros, and the string,
// quantity and semver functions the checker resolved.
#ifndef DEVSHARE_SRC_DRA_CEL_EVAL_HPP_
#define DEVSHARE_SRC_DRA_CEL_EVAL_HPP_

#include <string>
#include <variant>

#include "dra/cel/ast.hpp"
#include "dra/cel/value.hpp"

namespace devshare::dra::cel {

// A runtime error: the message as cel-go reports it ("no such key: model",
// "integer overflow", "division by zero", "no such overload"...), or, when
// `unsupported`, a value devshare cannot hold exactly.
struct Error {
  bool unsupported = false;
  std::string message;
};
using Out = std::variant<Value, Error>;

// The value of `root`, a tree Check accepted, with every identifier that no
// comprehension binds standing for `device`. Never throws; pure.
Out Evaluate(const Node& root, Value device);

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_EVAL_HPP_
