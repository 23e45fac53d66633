// Evaluator internals shared by statement execution (evaluator.cc) and expression evaluation
// (expression_evaluator.cc): scopes, loop-control flow and the Evaluator itself.
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jinja/ast.h"
#include "jinja/evaluator.h"
#include "jinja/value.h"

namespace forge::jinja::internal {

// A level of variables: the globals, the template's top level, a loop iteration, a macro call.
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Value* Find(std::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent_) {
      if (const Value* v = s->vars_.Find(name)) return v;
    }
    return nullptr;
  }
  void Set(std::string name, Value value) { vars_.Set(std::move(name), std::move(value)); }

 private:
  ValueMap vars_;
  const Scope* parent_;
};

enum class Flow { kNormal, kBreak, kContinue };

// Renders one template once: owns the globals and the top-level scope, counts steps and depth.
class Evaluator {
 public:
  Evaluator(const ValueMap& variables, std::time_t now, const RenderLimits& limits);
  ~Evaluator();
  Status Run(const Template& tmpl, std::string* out);

 private:
  // Counts one step of work; an error past limits_.max_steps.
  Status Step();
  // Prefixes "line N: " to an error, unless it has a line already or was raised by the template.
  static Status Annotate(Status st, int line);
  // Runs statements; stops early on break/continue, reported in *flow.
  Status Exec(const StmtList& body, Scope* scope, std::string* out, Flow* flow);
  // Appends to the output; an error past limits_.max_output_bytes.
  Status Append(std::string_view text, std::string* out) const;
  // Renders `body` in a new scope under `parent` into a string.
  StatusOr<std::string> Capture(const StmtList& body, const Scope* parent);
  // Applies a filter chain parsed with a null innermost input to `input`.
  StatusOr<Value> ApplyChain(const Expr& chain, Value input, Scope* scope);
  Status ExecStmt(const Stmt& s, Scope* scope, std::string* out, Flow* flow);
  Status Assign(const Target& t, Value v, Scope* scope);
  Status ExecFor(const Stmt& s, Scope* scope, std::string* out);
  // A macro as a callable value; its body runs in a scope under the template's top level.
  Value MakeMacro(const Stmt& m);
  // The body of a {% call %} block, run when the macro calls caller(...).
  StatusOr<Value> CallBody(const Stmt& s, const CallArgs& call, const Scope* parent);
  // Renders a macro or caller body to a string, within limits_.max_call_depth.
  StatusOr<Value> RunBody(const StmtList& body, Scope* scope);
  StatusOr<Value> Invoke(const Value& callee, const CallArgs& args);
  StatusOr<CallArgs> EvalArgs(const Expr& e, Scope* scope);
  // None for a missing slice part.
  StatusOr<Value> EvalOptional(const ExprPtr& e, Scope* scope);
  // EvalUncharged plus steps charged in proportion to the size of what was built.
  StatusOr<Value> Eval(const Expr& e, Scope* scope);
  StatusOr<Value> EvalUncharged(const Expr& e, Scope* scope);

  const RenderLimits& limits_;
  Scope globals_;
  Scope root_;
  std::vector<Value> namespaces_;
  int64_t steps_ = 0;
  int depth_ = 0;
};

}  // namespace forge::jinja::internal
