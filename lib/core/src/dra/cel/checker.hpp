// Private (dra layer): the type checker of CEL selectors — cel-go's
// checker over Kubernetes' declarations (the `device` variable of
// k8s.io/dynamic-resource-allocation/cel, the quantity and semver
// libraries), for the functions devshare evaluates.
#ifndef DEVSHARE_SRC_DRA_CEL_CHECKER_HPP_
#define DEVSHARE_SRC_DRA_CEL_CHECKER_HPP_

#include "dra/cel/ast.hpp"
#include "dra/cel/errors.hpp"

namespace devshare::dra::cel {

// Types `root` and every node under it in place (Node::type; Node::fn for
// calls), true on success. Otherwise false with the first error in
// `errors`: kMalformed at the node's offset for an undeclared reference,
// an undefined field, "found no matching overload for '_+_' applied to
// '(int, uint)'", mixed list elements, a bad comprehension range;
// kUnsupported for functions and type names devshare does not evaluate
// and nested comprehensions. Does not require the root to be bool.
bool Check(Node& root, Errors& errors);

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_CHECKER_HPP_
