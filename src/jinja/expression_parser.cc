// The expression half of the parser: jinja2's precedence climbing from conditional expressions
// down to primaries, postfix subscripts and calls, filters and tests.
#include "jinja/parser_impl.h"

namespace forge::jinja::internal {

bool Parser::IsTupleEnd(const std::vector<std::string>& extra_end) const {
  const TokenType t = cur().type;
  if (t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || IsOp(")")) return true;
  return IsNameIn(extra_end);
}

StatusOr<ExprPtr> Parser::ParseTuple(bool with_condexpr, const std::vector<std::string>& extra_end,
                                     bool explicit_parentheses) {
  const int line = cur().line;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) RETURN_IF_ERROR(ExpectOp(","));
    if (IsTupleEnd(extra_end)) break;
    ASSIGN_OR_RETURN(ExprPtr e, ParseExpression(with_condexpr));
    args.push_back(std::move(e));
    if (IsOp(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parentheses) return Error("expected an expression, got " + DescribeToken(cur()));
  }
  ExprPtr t = MakeExpr(ExprKind::kTuple, line);
  t->items = std::move(args);
  return t;
}

StatusOr<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  DepthGuard guard(this);
  RETURN_IF_ERROR(guard.Check());
  ASSIGN_OR_RETURN(ExprPtr expr1, ParseOr());
  if (!with_condexpr) return expr1;
  while (IsName("if")) {
    const int line = cur().line;
    Next();
    auto cond = MakeExpr(ExprKind::kCond, line);
    ASSIGN_OR_RETURN(cond->b, ParseOr());
    if (SkipName("else")) {
      ASSIGN_OR_RETURN(cond->c, ParseExpression(true));
    }
    cond->a = std::move(expr1);
    expr1 = std::move(cond);
  }
  return expr1;
}

StatusOr<ExprPtr> Parser::ParseLogical(std::string_view keyword, ExprKind kind,
                                       StatusOr<ExprPtr> (Parser::*operand)()) {
  ASSIGN_OR_RETURN(ExprPtr left, (this->*operand)());
  while (IsName(keyword)) {
    auto e = MakeExpr(kind, cur().line);
    Next();
    e->a = std::move(left);
    ASSIGN_OR_RETURN(e->b, (this->*operand)());
    left = std::move(e);
  }
  return left;
}

StatusOr<ExprPtr> Parser::ParseOr() { return ParseLogical("or", ExprKind::kOr, &Parser::ParseAnd); }

StatusOr<ExprPtr> Parser::ParseAnd() {
  return ParseLogical("and", ExprKind::kAnd, &Parser::ParseNot);
}

StatusOr<ExprPtr> Parser::ParseNot() {
  if (IsName("not")) {
    DepthGuard guard(this);
    RETURN_IF_ERROR(guard.Check());
    auto e = MakeExpr(ExprKind::kNot, cur().line);
    Next();
    ASSIGN_OR_RETURN(e->a, ParseNot());
    return e;
  }
  return ParseCompare();
}

StatusOr<ExprPtr> Parser::ParseCompare() {
  const int line = cur().line;
  ASSIGN_OR_RETURN(ExprPtr expr, ParseMath1());
  auto cmp = MakeExpr(ExprKind::kCompare, line);
  while (true) {
    std::string op;
    if (cur().type == TokenType::kOperator &&
        (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
         cur().value == ">" || cur().value == ">=")) {
      op = cur().value;
      Next();
    } else if (IsName("in")) {
      op = "in";
      Next();
    } else if (IsName("not") && look().type == TokenType::kName && look().value == "in") {
      op = "notin";
      Next();
      Next();
    } else {
      break;
    }
    ASSIGN_OR_RETURN(ExprPtr operand, ParseMath1());
    cmp->ops.push_back(op);
    cmp->items.push_back(std::move(operand));
  }
  if (cmp->ops.empty()) return expr;
  cmp->a = std::move(expr);
  return cmp;
}

StatusOr<ExprPtr> Parser::Binary(ExprPtr left, std::string op, ExprPtr right, int line) {
  auto e = MakeExpr(ExprKind::kBinary, line);
  e->name = std::move(op);
  e->a = std::move(left);
  e->b = std::move(right);
  return e;
}

StatusOr<ExprPtr> Parser::ParseBinaryChain(std::initializer_list<std::string_view> ops,
                                           StatusOr<ExprPtr> (Parser::*operand)()) {
  auto at_op = [&] {
    return std::any_of(ops.begin(), ops.end(), [&](auto op) { return IsOp(op); });
  };
  ASSIGN_OR_RETURN(ExprPtr left, (this->*operand)());
  while (at_op()) {
    const std::string op = cur().value;
    const int line = cur().line;
    Next();
    ASSIGN_OR_RETURN(ExprPtr right, (this->*operand)());
    ASSIGN_OR_RETURN(left, Binary(std::move(left), op, std::move(right), line));
  }
  return left;
}

StatusOr<ExprPtr> Parser::ParseMath1() {
  return ParseBinaryChain({"+", "-"}, &Parser::ParseConcat);
}

StatusOr<ExprPtr> Parser::ParseConcat() {
  const int line = cur().line;
  ASSIGN_OR_RETURN(ExprPtr first, ParseMath2());
  if (!IsOp("~")) return first;
  auto e = MakeExpr(ExprKind::kConcat, line);
  e->items.push_back(std::move(first));
  while (SkipOp("~")) {
    ASSIGN_OR_RETURN(ExprPtr next, ParseMath2());
    e->items.push_back(std::move(next));
  }
  return e;
}

StatusOr<ExprPtr> Parser::ParseMath2() {
  return ParseBinaryChain({"*", "/", "//", "%"}, &Parser::ParsePow);
}

StatusOr<ExprPtr> Parser::ParsePow() { return ParseBinaryChain({"**"}, &Parser::ParseFiltered); }

StatusOr<ExprPtr> Parser::ParseFiltered() { return ParseUnary(true); }

StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
  DepthGuard guard(this);
  RETURN_IF_ERROR(guard.Check());
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    node = MakeExpr(IsOp("-") ? ExprKind::kNeg : ExprKind::kPos, cur().line);
    Next();
    ASSIGN_OR_RETURN(node->a, ParseUnary(false));
  } else {
    ASSIGN_OR_RETURN(node, ParsePrimary());
  }
  ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
  if (with_filter) {
    ASSIGN_OR_RETURN(node, ParseFilterExpr(std::move(node)));
  }
  return node;
}

StatusOr<ExprPtr> Parser::ParsePrimary() {
  const Token& t = cur();
  ExprPtr node;
  if (t.type == TokenType::kName) {
    if (t.value == "true" || t.value == "True" || t.value == "false" || t.value == "False") {
      node = MakeExpr(ExprKind::kConst, t.line);
      node->value = Value::Bool(t.value == "true" || t.value == "True");
    } else if (t.value == "none" || t.value == "None") {
      node = MakeExpr(ExprKind::kConst, t.line);
      node->value = Value::None();
    } else {
      node = MakeExpr(ExprKind::kName, t.line);
      node->name = t.value;
    }
    Next();
  } else if (t.type == TokenType::kString) {
    node = MakeExpr(ExprKind::kConst, t.line);
    std::string s;
    while (cur().type == TokenType::kString) {
      s += cur().value;
      Next();
    }
    node->value = Value::String(std::move(s));
  } else if (t.type == TokenType::kInteger || t.type == TokenType::kFloat) {
    node = MakeExpr(ExprKind::kConst, t.line);
    node->value =
        t.type == TokenType::kInteger ? Value::Int(t.int_value) : Value::Float(t.float_value);
    Next();
  } else if (IsOp("(")) {
    Next();
    ASSIGN_OR_RETURN(node, ParseTuple(true, {}, true));
    RETURN_IF_ERROR(ExpectOp(")"));
  } else if (IsOp("[") || IsOp("{")) {
    const bool dict = IsOp("{");
    node = MakeExpr(dict ? ExprKind::kDict : ExprKind::kList, t.line);
    const std::string close = dict ? "}" : "]";
    Next();
    while (!IsOp(close)) {
      if (!node->items.empty()) RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(close)) break;
      ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
      node->items.push_back(std::move(item));
      if (dict) {
        RETURN_IF_ERROR(ExpectOp(":"));
        ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
        node->items.push_back(std::move(value));
      }
    }
    RETURN_IF_ERROR(ExpectOp(close));
  } else {
    return Error("unexpected " + DescribeToken(t));
  }
  return node;
}

StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".") || IsOp("[")) {
      ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
    } else if (IsOp("(")) {
      ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

StatusOr<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      ASSIGN_OR_RETURN(node, ParseFilter(std::move(node), false));
    } else if (IsName("is")) {
      ASSIGN_OR_RETURN(node, ParseTest(std::move(node)));
    } else if (IsOp("(")) {
      ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

StatusOr<ExprPtr> Parser::ParseSubscript(ExprPtr node) {
  const int line = cur().line;
  if (SkipOp(".")) {
    if (cur().type == TokenType::kName) {
      auto e = MakeExpr(ExprKind::kGetAttr, line);
      e->a = std::move(node);
      e->name = cur().value;
      Next();
      return e;
    }
    if (cur().type != TokenType::kInteger) return Error("expected name or number");
    auto e = MakeExpr(ExprKind::kGetItem, line);
    e->a = std::move(node);
    e->b = MakeExpr(ExprKind::kConst, line);
    e->b->value = Value::Int(cur().int_value);
    Next();
    return e;
  }
  Next();  // [
  std::vector<ExprPtr> args;
  while (!IsOp("]")) {
    if (!args.empty()) RETURN_IF_ERROR(ExpectOp(","));
    ASSIGN_OR_RETURN(ExprPtr arg, ParseSubscribed());
    args.push_back(std::move(arg));
  }
  RETURN_IF_ERROR(ExpectOp("]"));
  auto e = MakeExpr(ExprKind::kGetItem, line);
  e->a = std::move(node);
  if (args.size() == 1) {
    e->b = std::move(args[0]);
  } else {
    e->b = MakeExpr(ExprKind::kTuple, line);
    e->b->items = std::move(args);
  }
  return e;
}

StatusOr<ExprPtr> Parser::ParseSubscribed() {
  auto slice = MakeExpr(ExprKind::kSlice, cur().line);
  if (!IsOp(":")) {
    ASSIGN_OR_RETURN(ExprPtr node, ParseExpression(true));
    if (!IsOp(":")) return node;
    slice->a = std::move(node);
  }
  Next();  // the first ':'
  if (!IsOp(":") && !IsOp("]") && !IsOp(",")) {
    ASSIGN_OR_RETURN(slice->b, ParseExpression(true));
  }
  if (SkipOp(":")) {
    if (!IsOp("]") && !IsOp(",")) {
      ASSIGN_OR_RETURN(slice->c, ParseExpression(true));
    }
  }
  return slice;
}

Status Parser::ParseCallArgs(Expr* call) {
  RETURN_IF_ERROR(ExpectOp("("));
  bool require_comma = false;
  while (!IsOp(")")) {
    if (require_comma) {
      RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(")")) break;
    }
    if (IsOp("*") || IsOp("**")) {
      return UnimplementedError("line " + std::to_string(cur().line) +
                                ": *args and **kwargs in calls");
    }
    if (cur().type == TokenType::kName && look().type == TokenType::kOperator &&
        look().value == "=") {
      Keyword kw;
      kw.name = cur().value;
      Next();
      Next();
      ASSIGN_OR_RETURN(kw.value, ParseExpression(true));
      call->kwargs.push_back(std::move(kw));
    } else {
      if (!call->kwargs.empty()) return Error("invalid syntax for function call expression");
      ASSIGN_OR_RETURN(ExprPtr arg, ParseExpression(true));
      call->items.push_back(std::move(arg));
    }
    require_comma = true;
  }
  return ExpectOp(")");
}

StatusOr<ExprPtr> Parser::ParseCall(ExprPtr node) {
  auto e = MakeExpr(ExprKind::kCall, cur().line);
  e->a = std::move(node);
  RETURN_IF_ERROR(ParseCallArgs(e.get()));
  return e;
}

StatusOr<std::string> Parser::ParseDottedName() {
  ASSIGN_OR_RETURN(std::string name, ExpectName());
  while (SkipOp(".")) {
    ASSIGN_OR_RETURN(std::string part, ExpectName());
    name += "." + part;
  }
  return name;
}

StatusOr<ExprPtr> Parser::ParseFilter(ExprPtr node, bool start_inline) {
  while (IsOp("|") || start_inline) {
    if (!start_inline) Next();
    start_inline = false;
    auto e = MakeExpr(ExprKind::kFilter, cur().line);
    ASSIGN_OR_RETURN(e->name, ParseDottedName());
    if (IsOp("(")) RETURN_IF_ERROR(ParseCallArgs(e.get()));
    e->a = std::move(node);
    node = std::move(e);
  }
  return node;
}

StatusOr<ExprPtr> Parser::ParseTest(ExprPtr node) {
  const int line = cur().line;
  Next();  // is
  const bool negated = SkipName("not");
  auto e = MakeExpr(ExprKind::kTest, line);
  ASSIGN_OR_RETURN(e->name, ParseDottedName());
  const TokenType t = cur().type;
  if (IsOp("(")) {
    RETURN_IF_ERROR(ParseCallArgs(e.get()));
  } else if ((t == TokenType::kName || t == TokenType::kString || t == TokenType::kInteger ||
              t == TokenType::kFloat || IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) return Error("You cannot chain multiple tests with is");
    ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
    ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
    e->items.push_back(std::move(arg));
  }
  e->a = std::move(node);
  if (!negated) return e;
  auto n = MakeExpr(ExprKind::kNot, line);
  n->a = std::move(e);
  return n;
}

}  // namespace forge::jinja::internal
