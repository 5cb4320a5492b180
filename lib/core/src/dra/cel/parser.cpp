// The parser of CEL selectors (parser.hpp).
#include "dra/cel/parser.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/text.hpp"
#include "dra/cel/lexer.hpp"

namespace devshare::dra::cel {
namespace {

using devshare::internal::IsAsciiDigit;

class Parser {
 public:
  Parser(std::string_view src, Errors& errors) : lexer_(src, errors), errors_(errors) {
    tok_ = lexer_.Next();
  }

  NodePtr Parse() {
    NodePtr root = Expr();
    if (root && tok_.kind != Tok::kEnd) return SyntaxError();
    return errors_.failed() ? nullptr : std::move(root);
  }

 private:
  void Advance() { tok_ = lexer_.Next(); }

  bool Accept(Tok kind) {
    if (tok_.kind != kind) return false;
    Advance();
    return true;
  }

  std::nullptr_t SyntaxError() {
    if (tok_.kind == Tok::kEnd)
      return errors_.Malformed(tok_.offset, "syntax error: unexpected end of input");
    return errors_.Malformed(tok_.offset, "syntax error: unexpected token");
  }

  // A node over `args`, refused beyond kMaxDepth levels of nesting.
  NodePtr Make(Op op, std::size_t offset, std::vector<NodePtr> args, std::string name = {}) {
    auto node = std::make_unique<Node>();
    node->op = op;
    node->offset = offset;
    node->name = std::move(name);
    for (const NodePtr& a : args) node->depth = std::max(node->depth, a->depth + 1);
    node->args = std::move(args);
    if (node->depth > kMaxDepth) return TooDeep();
    return node;
  }

  std::nullptr_t TooDeep() {
    return errors_.Unsupported("an expression nested more than 100 levels deep");
  }

  NodePtr Expr() {
    if (nesting_ >= kMaxDepth) return TooDeep();
    ++nesting_;
    NodePtr e = Conditional();
    --nesting_;
    return e;
  }

  NodePtr Conditional() {
    NodePtr cond = Logical(Tok::kOr);
    if (!cond || tok_.kind != Tok::kQuestion) return cond;
    const std::size_t offset = tok_.offset;
    Advance();
    NodePtr then = Logical(Tok::kOr);
    if (!then) return nullptr;
    if (!Accept(Tok::kColon)) return SyntaxError();
    NodePtr otherwise = Expr();
    if (!otherwise) return nullptr;
    std::vector<NodePtr> args;
    args.push_back(std::move(cond));
    args.push_back(std::move(then));
    args.push_back(std::move(otherwise));
    return Make(Op::kCond, offset, std::move(args));
  }

  // A chain of || (or of &&) as one n-ary node: the operators are
  // associative, also in how they absorb errors.
  NodePtr Logical(Tok op) {
    std::vector<NodePtr> terms;
    std::size_t offset = tok_.offset;
    while (true) {
      NodePtr term = op == Tok::kOr ? Logical(Tok::kAnd) : Relation();
      if (!term) return nullptr;
      terms.push_back(std::move(term));
      if (tok_.kind != op) break;
      if (terms.size() == 1) offset = tok_.offset;
      Advance();
    }
    if (terms.size() == 1) return std::move(terms[0]);
    return Make(op == Tok::kOr ? Op::kOr : Op::kAnd, offset, std::move(terms));
  }

  struct BinaryOp {
    Tok tok;
    Op op;
  };

  template <std::size_t N>
  NodePtr LeftAssociative(const BinaryOp (&ops)[N], NodePtr (Parser::*operand)()) {
    NodePtr left = (this->*operand)();
    while (left) {
      const BinaryOp* match = nullptr;
      for (const BinaryOp& b : ops) {
        if (tok_.kind == b.tok) match = &b;
      }
      if (match == nullptr) return left;
      const std::size_t offset = tok_.offset;
      Advance();
      NodePtr right = (this->*operand)();
      if (!right) return nullptr;
      std::vector<NodePtr> args;
      args.push_back(std::move(left));
      args.push_back(std::move(right));
      left = Make(match->op, offset, std::move(args));
    }
    return left;
  }

  NodePtr Relation() {
    static constexpr BinaryOp kOps[] = {
        {Tok::kLt, Op::kLt}, {Tok::kLe, Op::kLe}, {Tok::kGt, Op::kGt}, {Tok::kGe, Op::kGe},
        {Tok::kEq, Op::kEq}, {Tok::kNe, Op::kNe}, {Tok::kIn, Op::kIn}};
    return LeftAssociative(kOps, &Parser::Calc);
  }
  NodePtr Calc() {
    static constexpr BinaryOp kOps[] = {{Tok::kPlus, Op::kAdd}, {Tok::kMinus, Op::kSub}};
    return LeftAssociative(kOps, &Parser::Product);
  }
  NodePtr Product() {
    static constexpr BinaryOp kOps[] = {
        {Tok::kStar, Op::kMul}, {Tok::kSlash, Op::kDiv}, {Tok::kPercent, Op::kMod}};
    return LeftAssociative(kOps, &Parser::Unary);
  }

  // Whether the token after the current one is a number a '-' signs.
  bool NextIsSignedNumber() const {
    Lexer peek = lexer_;
    const Tok next = peek.Next().kind;
    return next == Tok::kInt || next == Tok::kDouble;
  }

  // An even run of '!' or '-' is dropped, as cel-go's parser drops it.
  NodePtr Unary() {
    const std::size_t offset = tok_.offset;
    int count = 0;
    Op op = Op::kNot;
    if (tok_.kind == Tok::kNot) {
      while (Accept(Tok::kNot)) ++count;
    } else {
      op = Op::kNeg;
      while (tok_.kind == Tok::kMinus && !NextIsSignedNumber()) {
        Advance();
        ++count;
      }
    }
    NodePtr operand = Member();
    if (!operand || count % 2 == 0) return operand;
    std::vector<NodePtr> args;
    args.push_back(std::move(operand));
    return Make(op, offset, std::move(args));
  }

  NodePtr Member() {
    NodePtr node = Primary();
    while (node) {
      const std::size_t offset = tok_.offset;
      if (Accept(Tok::kDot)) {
        if (tok_.kind == Tok::kQuestion)
          return errors_.Unsupported("optional field selection (.?)");
        if (tok_.kind != Tok::kIdent) return SyntaxError();
        std::string name = std::move(tok_.text);
        const std::size_t name_offset = tok_.offset;
        Advance();
        if (tok_.kind == Tok::kLBrace) return errors_.Unsupported("message construction");
        if (tok_.kind != Tok::kLParen) {
          std::vector<NodePtr> args;
          args.push_back(std::move(node));
          node = Make(Op::kSelect, name_offset, std::move(args), std::move(name));
          continue;
        }
        std::vector<NodePtr> args;
        args.push_back(std::move(node));
        if (!Arguments(args)) return nullptr;
        node = MemberCall(name_offset, std::move(name), std::move(args));
      } else if (Accept(Tok::kLBracket)) {
        if (tok_.kind == Tok::kQuestion) return errors_.Unsupported("optional index ([?])");
        NodePtr index = Expr();
        if (!index) return nullptr;
        if (!Accept(Tok::kRBracket)) return SyntaxError();
        std::vector<NodePtr> args;
        args.push_back(std::move(node));
        args.push_back(std::move(index));
        node = Make(Op::kIndex, offset, std::move(args));
      } else {
        return node;
      }
    }
    return nullptr;
  }

  // `args` holds the receiver; appends "(" expr {"," expr} ")".
  bool Arguments(std::vector<NodePtr>& args) {
    Advance();  // (
    if (Accept(Tok::kRParen)) return true;
    while (true) {
      NodePtr arg = Expr();
      if (!arg) return false;
      args.push_back(std::move(arg));
      if (Accept(Tok::kRParen)) return true;
      if (!Accept(Tok::kComma)) {
        SyntaxError();
        return false;
      }
    }
  }

  NodePtr MemberCall(std::size_t offset, std::string name, std::vector<NodePtr> args) {
    static constexpr std::pair<std::string_view, Op> kMacros[] = {{"all", Op::kAll},
                                                                  {"exists", Op::kExists},
                                                                  {"exists_one", Op::kExistsOne},
                                                                  {"existsOne", Op::kExistsOne}};
    for (const auto& [macro, op] : kMacros) {
      if (name != macro || args.size() != 3) continue;
      if (args[1]->op != Op::kIdent)
        return errors_.Malformed(args[1]->offset, "argument must be a simple name");
      std::string var = std::move(args[1]->name);
      args.erase(args.begin() + 1);
      return Make(op, offset, std::move(args), std::move(var));
    }
    NodePtr call = Make(Op::kCall, offset, std::move(args), std::move(name));
    if (call) call->member = true;
    return call;
  }

  NodePtr Primary() {
    const std::size_t offset = tok_.offset;
    auto literal = [&](Value v) {
      NodePtr n = Make(Op::kConst, offset, {});
      n->value = std::move(v);
      Advance();
      return n;
    };
    switch (tok_.kind) {
      case Tok::kMinus:
        Advance();
        return Number(offset, /*negative=*/true);
      case Tok::kInt:
      case Tok::kUint:
      case Tok::kDouble:
        return Number(offset, /*negative=*/false);
      case Tok::kString:
        return literal(Value{std::move(tok_.text)});
      case Tok::kTrue:
        return literal(Value{true});
      case Tok::kFalse:
        return literal(Value{false});
      case Tok::kNull:
        return literal(Value{Null{}});
      case Tok::kIdent: {
        std::string name = std::move(tok_.text);
        Advance();
        if (tok_.kind == Tok::kLBrace) return errors_.Unsupported("message construction");
        if (tok_.kind != Tok::kLParen) return Make(Op::kIdent, offset, {}, std::move(name));
        std::vector<NodePtr> args;
        if (!Arguments(args)) return nullptr;
        if (name == "has" && args.size() == 1) {
          if (args[0]->op != Op::kSelect)
            return errors_.Malformed(args[0]->offset, "invalid argument to has() macro");
          NodePtr select = std::move(args[0]);
          return Make(Op::kHas, offset, std::move(select->args), std::move(select->name));
        }
        return Make(Op::kCall, offset, std::move(args), std::move(name));
      }
      case Tok::kLParen: {
        Advance();
        NodePtr inner = Expr();
        if (!inner) return nullptr;
        if (!Accept(Tok::kRParen)) return SyntaxError();
        return inner;
      }
      case Tok::kLBracket:
        return ListLiteral();
      case Tok::kLBrace:
        return errors_.Unsupported("a map literal");
      case Tok::kDot:
        return errors_.Unsupported("a leading-dot identifier");
      default:
        return SyntaxError();
    }
  }

  NodePtr ListLiteral() {
    const std::size_t offset = tok_.offset;
    Advance();  // [
    std::vector<NodePtr> elems;
    while (!Accept(Tok::kRBracket)) {
      if (tok_.kind == Tok::kQuestion)
        return errors_.Unsupported("an optional list element ([?x])");
      NodePtr e = Expr();
      if (!e) return nullptr;
      elems.push_back(std::move(e));
      if (Accept(Tok::kRBracket)) break;
      if (!Accept(Tok::kComma)) return SyntaxError();
    }
    return Make(Op::kList, offset, std::move(elems));
  }

  // An int, uint or double literal, as strconv parses it in cel-go.
  NodePtr Number(std::size_t offset, bool negative) {
    if (tok_.kind != Tok::kInt && tok_.kind != Tok::kDouble &&
        (negative || tok_.kind != Tok::kUint)) {
      return SyntaxError();
    }
    std::string_view text = tok_.text;
    Value value;
    if (tok_.kind == Tok::kDouble) {
      const auto d = ParseDouble(text, negative);
      if (!d) return errors_.Malformed(offset, "invalid double literal");
      value.v = *d;
    } else {
      const bool is_uint = tok_.kind == Tok::kUint;
      if (is_uint) text.remove_suffix(1);
      int base = 10;
      if (text.size() > 2 && text[0] == '0' && text[1] == 'x') {
        base = 16;
        text.remove_prefix(2);
      }
      std::uint64_t magnitude = 0;
      const auto [end, ec] =
          std::from_chars(text.data(), text.data() + text.size(), magnitude, base);
      const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
      if (ec != std::errc() || end != text.data() + text.size() ||
          (!is_uint && magnitude > limit)) {
        return errors_.Malformed(offset, is_uint ? "invalid uint literal" : "invalid int literal");
      }
      if (is_uint) {
        value.v = magnitude;
      } else {
        value.v = negative ? static_cast<std::int64_t>(0 - magnitude)
                           : static_cast<std::int64_t>(magnitude);
      }
    }
    NodePtr n = Make(Op::kConst, offset, {});
    n->value = std::move(value);
    Advance();
    return n;
  }

  // strconv.ParseFloat: nullopt when the magnitude overflows; a value too
  // small for a double is 0.
  static std::optional<double> ParseDouble(std::string_view text, bool negative) {
    double d = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec == std::errc::result_out_of_range) {
      // Decimal exponent of the leading significant digit.
      const std::size_t e = text.find_first_of("eE");
      const std::string_view mantissa = text.substr(0, e);
      std::int64_t exponent = 0;  // saturates: only its sign matters far out
      if (e != std::string_view::npos) {
        const bool minus = text[e + 1] == '-';
        for (char c : text.substr(e + 1)) {
          if (IsAsciiDigit(c)) {
            exponent = std::min<std::int64_t>(exponent * 10 + (c - '0'), 1000000000);
          }
        }
        if (minus) exponent = -exponent;
      }
      const std::size_t dot = std::min(mantissa.find('.'), mantissa.size());
      const std::size_t first = mantissa.find_first_of("123456789");
      if (first == std::string_view::npos) return negative ? -0.0 : 0.0;
      exponent += first < dot ? static_cast<std::int64_t>(dot - first)
                              : -static_cast<std::int64_t>(first - dot);
      if (exponent > 0) return std::nullopt;
      d = 0;
    } else if (ec != std::errc() || end != text.data() + text.size()) {
      return std::nullopt;
    }
    return negative ? -d : d;
  }

  Lexer lexer_;
  Errors& errors_;
  Token tok_;
  int nesting_ = 0;
};

}  // namespace

NodePtr Parse(std::string_view expression, Errors& errors) {
  return Parser(expression, errors).Parse();
}

}  // namespace devshare::dra::cel
