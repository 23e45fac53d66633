// The syntax tree the parser builds and the evaluator walks: expressions and statements, shaped
// after jinja2.nodes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace forge::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

enum class ExprKind {
  kConst,    // value
  kName,     // name
  kList,     // items
  kTuple,    // items
  kDict,     // items: key0, value0, key1, value1, ...
  kGetAttr,  // a.name
  kGetItem,  // a[b]
  kSlice,    // a:b:c, each part optional (null); only as the index of kGetItem
  kCall,     // a(items..., kwargs...)
  kFilter,   // a | name(items..., kwargs...); a is null in filter blocks and set blocks
  kTest,     // a is name(items..., kwargs...)
  kNot,      // not a
  kNeg,      // -a
  kPos,      // +a
  kBinary,   // a name b, name one of + - * / // % **
  kConcat,   // items joined with ~
  kCompare,  // a ops[0] items[0] ops[1] items[1] ... (chained, like Python)
  kAnd,      // a and b
  kOr,       // a or b
  kCond,     // a if b else c (c may be null)
};

struct Keyword {
  std::string name;
  ExprPtr value;
};

struct Expr {
  ExprKind kind = ExprKind::kConst;
  int line = 0;
  Value value;       // kConst
  std::string name;  // variable, attribute, filter, test or operator
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<std::string> ops;  // kCompare: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
  std::vector<Keyword> kwargs;
};

// What `for` and `set` assign to: one name, several names (tuple unpacking), or ns.attr.
struct Target {
  std::vector<std::string> names;
  bool unpack = false;
  std::string attr;  // set: names[0].attr (namespace attribute); empty otherwise
};

enum class StmtKind {
  kData,         // text
  kOutput,       // {{ expr }}
  kIf,           // conds[i] -> bodies[i]; bodies.back() is the else branch when there is one
  kFor,          // for target in expr [if cond]: body [else else_body]
  kSet,          // set target = expr
  kSetBlock,     // set target [| filter]: body  (expr holds the filter chain, or null)
  kMacro,        // macro name(params = defaults): body
  kCallBlock,    // call(params) expr: body
  kFilterBlock,  // filter expr: body
  kWith,         // with params = defaults: body
  kScope,        // a body run in its own scope (HF's {% generation %})
  kBreak,
  kContinue,
};

struct Stmt {
  StmtKind kind = StmtKind::kData;
  int line = 0;
  std::string text;  // kData; kMacro: the macro's name
  ExprPtr expr;
  ExprPtr cond;
  Target target;
  std::vector<ExprPtr> conds;
  std::vector<StmtList> bodies;
  StmtList body;
  StmtList else_body;
  std::vector<std::string> params;  // macro / call block parameters, with-block names
  std::vector<ExprPtr> defaults;    // defaults of the last params (all of them for `with`)
};

// A parsed template: the top-level statements.
struct Template {
  StmtList body;
};

}  // namespace forge::jinja
