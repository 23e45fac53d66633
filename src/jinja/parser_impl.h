// Parser internals shared by the statement parser (parser.cc) and the expression parser
// (expression_parser.cc): one recursive-descent Parser over the token list, mirroring
// jinja2/parser.py function for function.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace forge::jinja::internal {

inline constexpr int kMaxNesting = 96;  // expression and block nesting, well inside the C++ stack

inline ExprPtr MakeExpr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  // The whole template; then the filter and test names are checked (CheckNames).
  StatusOr<Template> Parse();

 private:
  // Counts nesting; Check() is an error past kMaxNesting.
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : p(p) { ++p->depth_; }
    ~DepthGuard() { --p->depth_; }
    Status Check() const {
      if (p->depth_ > kMaxNesting) return p->Error("templates nest deeper than 96 levels");
      return Status::Ok();
    }
    Parser* p;
  };

  // The token stream.
  const Token& cur() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  void Next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool IsName(std::string_view v) const {
    return cur().type == TokenType::kName && cur().value == v;
  }
  bool IsNameIn(const std::vector<std::string>& names) const {
    return cur().type == TokenType::kName &&
           std::find(names.begin(), names.end(), cur().value) != names.end();
  }
  bool IsOp(std::string_view op) const {
    return cur().type == TokenType::kOperator && cur().value == op;
  }
  bool SkipOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(std::string_view v) {
    if (!IsName(v)) return false;
    Next();
    return true;
  }
  Status Error(const std::string& message) const {
    return InvalidArgumentError("line " + std::to_string(cur().line) + ": " + message);
  }
  Status Unexpected(const std::string& expected) const {
    return Error("expected " + expected + ", got " + DescribeToken(cur()));
  }
  Status ExpectOp(std::string_view op) {
    if (!SkipOp(op)) return Unexpected("'" + std::string(op) + "'");
    return Status::Ok();
  }
  Status ExpectType(TokenType type, const char* what) {
    if (cur().type != type) return Unexpected(what);
    Next();
    return Status::Ok();
  }
  StatusOr<std::string> ExpectName() {
    if (cur().type != TokenType::kName) return Unexpected("a name");
    std::string v = cur().value;
    Next();
    return v;
  }

  // Statements (parser.cc).
  // Template data, {{ }} and statements until `{% <one of end_tokens>`, which is left current.
  Status Subparse(const std::vector<std::string>& end_tokens, StmtList* body);
  // `%}` body `{% end...`; leaves the end tag current unless drop_needle.
  Status ParseStatements(const std::vector<std::string>& end_tokens, StmtList* body,
                         bool drop_needle);
  StmtPtr NewStmt(StmtKind kind);
  Status ParseStatement(StmtList* body);
  Status ParseFor(StmtList* body);
  Status ParseIf(StmtList* body);
  Status ParseSet(StmtList* body);
  Status ParseSignature(Stmt* s);
  Status ParseMacroOrCall(StmtList* body, bool macro);
  // filter / with / generation: a body with its own scope.
  Status ParseScoped(StmtList* body, const std::string& tag);
  // parse_assign_target for names: `a` or `a, b` (nested tuples are not supported).
  StatusOr<Target> ParseTargetNames(const std::vector<std::string>& extra_end);
  // Jinja checks filter and test names when it compiles, except in "soft" frames: the test and
  // bodies of an {% if %} and the parts of an inline if, where a template may test for a filter
  // before it uses one; there an unknown name fails only when evaluated.
  static Status CheckNames(const Expr* e, bool soft);
  // Bodies of for, macro, call, filter, set and with blocks are new (not soft) frames.
  static Status CheckNames(const StmtList& body, bool soft);

  // Expressions (expression_parser.cc).
  bool IsTupleEnd(const std::vector<std::string>& extra_end) const;
  StatusOr<ExprPtr> ParseTuple(bool with_condexpr, const std::vector<std::string>& extra_end,
                               bool explicit_parentheses);
  StatusOr<ExprPtr> ParseExpression(bool with_condexpr);
  // A left-associative chain of `keyword` (or, and) over operands parsed by `operand`.
  StatusOr<ExprPtr> ParseLogical(std::string_view keyword, ExprKind kind,
                                 StatusOr<ExprPtr> (Parser::*operand)());
  StatusOr<ExprPtr> ParseOr();
  StatusOr<ExprPtr> ParseAnd();
  StatusOr<ExprPtr> ParseNot();
  StatusOr<ExprPtr> ParseCompare();
  StatusOr<ExprPtr> Binary(ExprPtr left, std::string op, ExprPtr right, int line);
  // A left-associative chain of the binary operators `ops` over operands parsed by `operand`.
  StatusOr<ExprPtr> ParseBinaryChain(std::initializer_list<std::string_view> ops,
                                     StatusOr<ExprPtr> (Parser::*operand)());
  StatusOr<ExprPtr> ParseMath1();
  StatusOr<ExprPtr> ParseConcat();
  StatusOr<ExprPtr> ParseMath2();
  StatusOr<ExprPtr> ParsePow();
  StatusOr<ExprPtr> ParseUnary(bool with_filter);
  StatusOr<ExprPtr> ParseFiltered();  // ParseUnary(true): an operand of **
  StatusOr<ExprPtr> ParsePrimary();
  StatusOr<ExprPtr> ParsePostfix(ExprPtr node);
  StatusOr<ExprPtr> ParseFilterExpr(ExprPtr node);
  StatusOr<ExprPtr> ParseSubscript(ExprPtr node);
  StatusOr<ExprPtr> ParseSubscribed();
  Status ParseCallArgs(Expr* call);
  StatusOr<ExprPtr> ParseCall(ExprPtr node);
  StatusOr<std::string> ParseDottedName();
  StatusOr<ExprPtr> ParseFilter(ExprPtr node, bool start_inline);
  StatusOr<ExprPtr> ParseTest(ExprPtr node);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // for break / continue
};

}  // namespace forge::jinja::internal
