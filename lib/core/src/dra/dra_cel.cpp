// The CEL device selectors of DRA (dra_cel.hpp): the phases in dra/cel/ —
// lexer and parser to an AST, the type checker, the `device` environment
// and the evaluator — joined into CompileSelector and Matches.
//
// The reference is cel-go v0.29 in Kubernetes v1.37's environment
// (k8s.io/dynamic-resource-allocation/cel/compile.go,
// k8s.io/apiserver/pkg/cel/library); comments name the Go code a rule
// follows where that is not obvious.
#include "devshare/dra_cel.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <variant>

#include "dra/cel/ast.hpp"
#include "dra/cel/checker.hpp"
#include "dra/cel/device.hpp"
#include "dra/cel/errors.hpp"
#include "dra/cel/eval.hpp"
#include "dra/cel/lexer.hpp"
#include "dra/cel/parser.hpp"

namespace devshare::dra {

Selector::Selector(std::string expression, std::shared_ptr<const cel::Node> root)
    : expression_(std::move(expression)), root_(std::move(root)) {}

Result<Selector> CompileSelector(std::string_view expression) {
  cel::Errors errors(expression);
  if (expression.size() > cel::kMaxExpressionLength) {
    errors.Malformed(cel::kMaxExpressionLength, "longer than the API's limit of 10240 bytes");
    return errors.take();
  }
  if (const auto bad = cel::InvalidUtf8(expression)) {
    errors.Malformed(*bad, "invalid UTF-8");
    return errors.take();
  }
  cel::NodePtr root = cel::Parse(expression, errors);
  if (!root) return errors.take();
  if (!cel::Check(*root, errors)) return errors.take();
  if (root->type->kind != cel::Kind::kBool && root->type->kind != cel::Kind::kDyn) {
    errors.Malformed(0, fmt::format("must evaluate to bool or the unknown type, not {}",
                                    cel::TypeName(*root->type)));
    return errors.take();
  }
  return Selector(std::string(expression), std::move(root));
}

Result<bool> Matches(const Selector& selector, std::string_view driver, const Device& device) {
  Result<cel::Value> device_value = cel::DeviceValue(driver, device);
  if (!device_value.ok()) return device_value.status();
  cel::Out out = cel::Evaluate(*selector.root_, std::move(*device_value));
  if (auto* e = std::get_if<cel::Error>(&out)) {
    if (e->unsupported) {
      return Status::Unsupported(
          fmt::format("CEL selector {:?}: {}", selector.expression(), e->message));
    }
    return Status::InvalidArgument(std::move(e->message));
  }
  const cel::Value& v = std::get<cel::Value>(out);
  if (const bool* b = cel::As<bool>(v)) return *b;
  return Status::InvalidArgument(
      fmt::format("CEL result of type {} could not be converted to bool", cel::RuntimeTypeName(v)));
}

}  // namespace devshare::dra
