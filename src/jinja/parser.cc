// The statement half of the parser (data, {{ }}, {% tags %}) and ParseTemplate.
#include "jinja/parser.h"

#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/parser_impl.h"

namespace forge::jinja {
namespace internal {

StatusOr<Template> Parser::Parse() {
  Template t;
  RETURN_IF_ERROR(Subparse({}, &t.body));
  RETURN_IF_ERROR(CheckNames(t.body, false));
  return t;
}

// Template data, {{ }} and statements until `{% <one of end_tokens>`, which is left current.
Status Parser::Subparse(const std::vector<std::string>& end_tokens, StmtList* body) {
  while (cur().type != TokenType::kEof) {
    const Token& t = cur();
    if (t.type == TokenType::kData) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kData;
      s->line = t.line;
      s->text = t.value;
      body->push_back(std::move(s));
      Next();
    } else if (t.type == TokenType::kVariableBegin) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kOutput;
      s->line = t.line;
      Next();
      ASSIGN_OR_RETURN(s->expr, ParseTuple(true, {}, false));
      RETURN_IF_ERROR(ExpectType(TokenType::kVariableEnd, "end of print statement"));
      body->push_back(std::move(s));
    } else if (t.type == TokenType::kBlockBegin) {
      Next();
      if (!end_tokens.empty() && IsNameIn(end_tokens)) return Status::Ok();
      RETURN_IF_ERROR(ParseStatement(body));
      RETURN_IF_ERROR(ExpectType(TokenType::kBlockEnd, "end of statement block"));
    } else {
      return Error("unexpected " + DescribeToken(t));
    }
  }
  return Status::Ok();
}

// `%}` body `{% end...`; leaves the end tag current unless drop_needle.
Status Parser::ParseStatements(const std::vector<std::string>& end_tokens, StmtList* body,
                               bool drop_needle) {
  DepthGuard guard(this);
  RETURN_IF_ERROR(guard.Check());
  SkipOp(":");
  RETURN_IF_ERROR(ExpectType(TokenType::kBlockEnd, "end of statement block"));
  RETURN_IF_ERROR(Subparse(end_tokens, body));
  if (cur().type == TokenType::kEof) {
    std::string names;
    for (const auto& n : end_tokens) names += (names.empty() ? "'" : " or '") + n + "'";
    return Error("unexpected end of template, expected " + names);
  }
  if (drop_needle) Next();
  return Status::Ok();
}

StmtPtr Parser::NewStmt(StmtKind kind) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->line = cur().line;
  return s;
}

Status Parser::ParseStatement(StmtList* body) {
  if (cur().type != TokenType::kName) return Error("tag name expected");
  const std::string tag = cur().value;
  if (tag == "for") return ParseFor(body);
  if (tag == "if") return ParseIf(body);
  if (tag == "set") return ParseSet(body);
  if (tag == "macro" || tag == "call") return ParseMacroOrCall(body, tag == "macro");
  if (tag == "filter" || tag == "with" || tag == "generation") return ParseScoped(body, tag);
  if (tag == "print") {
    Next();
    while (cur().type != TokenType::kBlockEnd) {
      auto s = NewStmt(StmtKind::kOutput);
      ASSIGN_OR_RETURN(s->expr, ParseExpression(true));
      body->push_back(std::move(s));
      if (cur().type != TokenType::kBlockEnd) RETURN_IF_ERROR(ExpectOp(","));
    }
    return Status::Ok();
  }
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return Error("'" + tag + "' outside loop");
    body->push_back(NewStmt(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue));
    Next();
    return Status::Ok();
  }
  static const std::vector<std::string> kUnsupported = {
      "block", "extends", "include", "import", "from", "autoescape", "do", "trans", "raw"};
  if (std::find(kUnsupported.begin(), kUnsupported.end(), tag) != kUnsupported.end()) {
    return UnimplementedError("line " + std::to_string(cur().line) + ": unsupported tag '" + tag +
                              "'");
  }
  return Error("unknown tag '" + tag + "'");
}

Status Parser::ParseFor(StmtList* body) {
  auto s = NewStmt(StmtKind::kFor);
  Next();
  ASSIGN_OR_RETURN(s->target, ParseTargetNames({"in"}));
  if (!SkipName("in")) return Unexpected("'in'");
  ASSIGN_OR_RETURN(s->expr, ParseTuple(false, {"recursive"}, false));
  if (SkipName("if")) {
    ASSIGN_OR_RETURN(s->cond, ParseExpression(true));
  }
  if (IsName("recursive")) {
    return UnimplementedError("line " + std::to_string(cur().line) + ": recursive for loops");
  }
  ++loop_depth_;
  Status st = ParseStatements({"endfor", "else"}, &s->body, false);
  --loop_depth_;
  RETURN_IF_ERROR(st);
  const bool has_else = IsName("else");
  Next();
  if (has_else) RETURN_IF_ERROR(ParseStatements({"endfor"}, &s->else_body, true));
  body->push_back(std::move(s));
  return Status::Ok();
}

Status Parser::ParseIf(StmtList* body) {
  auto s = NewStmt(StmtKind::kIf);
  Next();
  while (true) {
    ASSIGN_OR_RETURN(ExprPtr cond, ParseTuple(false, {}, false));
    s->conds.push_back(std::move(cond));
    s->bodies.emplace_back();
    RETURN_IF_ERROR(ParseStatements({"elif", "else", "endif"}, &s->bodies.back(), false));
    const std::string end = cur().value;
    Next();
    if (end == "elif") continue;
    if (end == "else") {
      s->bodies.emplace_back();
      RETURN_IF_ERROR(ParseStatements({"endif"}, &s->bodies.back(), true));
    }
    break;
  }
  body->push_back(std::move(s));
  return Status::Ok();
}

Status Parser::ParseSet(StmtList* body) {
  auto s = NewStmt(StmtKind::kSet);
  Next();
  if (cur().type == TokenType::kName && look().type == TokenType::kOperator &&
      look().value == ".") {
    s->target.names.push_back(cur().value);
    Next();
    Next();
    ASSIGN_OR_RETURN(s->target.attr, ExpectName());
  } else {
    ASSIGN_OR_RETURN(s->target, ParseTargetNames({}));
  }
  if (SkipOp("=")) {
    ASSIGN_OR_RETURN(s->expr, ParseTuple(true, {}, false));
  } else {
    s->kind = StmtKind::kSetBlock;
    if (IsOp("|")) {
      ASSIGN_OR_RETURN(s->expr, ParseFilter(nullptr, false));
    }
    RETURN_IF_ERROR(ParseStatements({"endset"}, &s->body, true));
  }
  body->push_back(std::move(s));
  return Status::Ok();
}

Status Parser::ParseSignature(Stmt* s) {
  RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    if (!s->params.empty()) RETURN_IF_ERROR(ExpectOp(","));
    ASSIGN_OR_RETURN(std::string name, ExpectName());
    s->params.push_back(std::move(name));
    if (SkipOp("=")) {
      ASSIGN_OR_RETURN(ExprPtr def, ParseExpression(true));
      s->defaults.push_back(std::move(def));
    } else if (!s->defaults.empty()) {
      return Error("non-default argument follows default argument");
    }
  }
  return ExpectOp(")");
}

Status Parser::ParseMacroOrCall(StmtList* body, bool macro) {
  auto s = NewStmt(macro ? StmtKind::kMacro : StmtKind::kCallBlock);
  Next();
  if (macro) {
    ASSIGN_OR_RETURN(s->text, ExpectName());
    RETURN_IF_ERROR(ParseSignature(s.get()));
  } else {
    if (IsOp("(")) RETURN_IF_ERROR(ParseSignature(s.get()));
    ASSIGN_OR_RETURN(s->expr, ParseExpression(true));
    if (s->expr->kind != ExprKind::kCall) return Error("expected call");
  }
  const int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  Status st = ParseStatements({macro ? "endmacro" : "endcall"}, &s->body, true);
  loop_depth_ = saved_loop_depth;
  RETURN_IF_ERROR(st);
  body->push_back(std::move(s));
  return Status::Ok();
}

// filter / with / generation: a body with its own scope.
Status Parser::ParseScoped(StmtList* body, const std::string& tag) {
  auto s = NewStmt(tag == "filter" ? StmtKind::kFilterBlock
                                   : (tag == "with" ? StmtKind::kWith : StmtKind::kScope));
  Next();
  if (tag == "filter") {
    ASSIGN_OR_RETURN(s->expr, ParseFilter(nullptr, true));
  }
  if (tag == "with") {
    while (cur().type != TokenType::kBlockEnd) {
      if (!s->params.empty()) RETURN_IF_ERROR(ExpectOp(","));
      ASSIGN_OR_RETURN(std::string name, ExpectName());
      s->params.push_back(std::move(name));
      RETURN_IF_ERROR(ExpectOp("="));
      ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
      s->defaults.push_back(std::move(value));
    }
  }
  RETURN_IF_ERROR(ParseStatements({"end" + tag}, &s->body, true));
  body->push_back(std::move(s));
  return Status::Ok();
}

// parse_assign_target for names: `a` or `a, b` (nested tuples are not supported).
StatusOr<Target> Parser::ParseTargetNames(const std::vector<std::string>& extra_end) {
  Target target;
  while (true) {
    if (!target.names.empty()) RETURN_IF_ERROR(ExpectOp(","));
    if (IsTupleEnd(extra_end)) break;
    if (IsOp("(")) {
      return UnimplementedError("line " + std::to_string(cur().line) +
                                ": nested tuple assignment targets");
    }
    if (cur().type != TokenType::kName) return Error("can't assign to " + DescribeToken(cur()));
    static const std::vector<std::string> kConsts = {"true",  "false", "True",
                                                     "False", "none",  "None"};
    if (IsNameIn(kConsts)) return Error("can't assign to 'const'");
    target.names.push_back(cur().value);
    Next();
    if (IsOp(",")) {
      target.unpack = true;
    } else {
      break;
    }
  }
  if (target.names.empty()) return Error("expected an assignment target");
  return target;
}

// Jinja checks filter and test names when it compiles, except in "soft" frames: the test and
// bodies of an {% if %} and the parts of an inline if, where a template may test for a filter
// before it uses one; there an unknown name fails only when evaluated.
Status Parser::CheckNames(const Expr* e, bool soft) {
  if (e == nullptr) return Status::Ok();
  if (e->kind == ExprKind::kCond) soft = true;
  if ((e->kind == ExprKind::kFilter || e->kind == ExprKind::kTest) && !soft) {
    const bool filter = e->kind == ExprKind::kFilter;
    if ((filter ? FilterSupport(e->name) : TestSupport(e->name)) == BuiltinSupport::kUnknown) {
      return InvalidArgumentError("line " + std::to_string(e->line) + ": no " +
                                  (filter ? "filter" : "test") + " named '" + e->name + "'");
    }
  }
  for (const Expr* child : {e->a.get(), e->b.get(), e->c.get()}) {
    RETURN_IF_ERROR(CheckNames(child, soft));
  }
  for (const ExprPtr& item : e->items) RETURN_IF_ERROR(CheckNames(item.get(), soft));
  for (const Keyword& kw : e->kwargs) RETURN_IF_ERROR(CheckNames(kw.value.get(), soft));
  return Status::Ok();
}

// Bodies of for, macro, call, filter, set and with blocks are new (not soft) frames.
Status Parser::CheckNames(const StmtList& body, bool soft) {
  for (const StmtPtr& s : body) {
    const bool is_if = s->kind == StmtKind::kIf;
    RETURN_IF_ERROR(CheckNames(s->expr.get(), soft));
    RETURN_IF_ERROR(CheckNames(s->cond.get(), false));
    for (const ExprPtr& c : s->conds) RETURN_IF_ERROR(CheckNames(c.get(), soft || is_if));
    for (const ExprPtr& d : s->defaults) {
      RETURN_IF_ERROR(CheckNames(d.get(), s->kind == StmtKind::kWith && soft));
    }
    for (const StmtList& b : s->bodies) RETURN_IF_ERROR(CheckNames(b, soft || is_if));
    RETURN_IF_ERROR(CheckNames(s->body, false));
    RETURN_IF_ERROR(CheckNames(s->else_body, soft));
  }
  return Status::Ok();
}

}  // namespace internal

StatusOr<Template> ParseTemplate(std::string_view source) {
  ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  return internal::Parser(std::move(tokens)).Parse();
}

}  // namespace forge::jinja
