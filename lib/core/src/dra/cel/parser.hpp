// Private (dra layer): the parser of CEL selectors — CEL.g4's grammar by
// precedence climbing, into the AST of ast.hpp, untyped:
//   expr     = or ["?" or ":" expr]
//   or       = and {"||" and}          and = relation {"&&" relation}
//   relation = calc {("<"|"<="|">="|">"|"=="|"!="|"in") calc}
//   calc     = product {("+"|"-") product}
//   product  = unary {("*"|"/"|"%") unary}
//   unary    = member | "!"{"!"} member | "-"{"-"} member
//   member   = primary {"." IDENT ["(" args ")"] | "[" expr "]"}
// Chains of && and || become one n-ary node; an even run of ! or - is
// dropped, as cel-go drops it; a '-' before a number literal is part of
// it; has(), all(), exists() and exists_one()/existsOne() are expanded to
// their own nodes.
#ifndef DEVSHARE_SRC_DRA_CEL_PARSER_HPP_
#define DEVSHARE_SRC_DRA_CEL_PARSER_HPP_

#include <string_view>

#include "dra/cel/ast.hpp"
#include "dra/cel/errors.hpp"

namespace devshare::dra::cel {

// The AST of `expression`, or nullptr with the reason in `errors`:
// kMalformed for syntax ("syntax error: unexpected token", "invalid int
// literal", "invalid argument to has() macro"...) at the offending byte,
// kUnsupported for constructs beyond devshare's subset (map literals,
// optional syntax, message construction, nesting beyond kMaxDepth).
// Offsets in the AST are bytes of `expression`.
NodePtr Parse(std::string_view expression, Errors& errors);

}  // namespace devshare::dra::cel

#endif  // DEVSHARE_SRC_DRA_CEL_PARSER_HPP_
