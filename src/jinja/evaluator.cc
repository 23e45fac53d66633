// Statement execution: output, if, for (with loop variables), set, macros and call blocks,
// filter/with/generation blocks, break and continue; and Render.
#include "jinja/evaluator.h"

#include <memory>

#include "jinja/builtins.h"
#include "jinja/evaluator_impl.h"

namespace forge::jinja {
namespace internal {

Evaluator::Evaluator(const ValueMap& variables, std::time_t now, const RenderLimits& limits)
    : limits_(limits), globals_(nullptr), root_(&globals_) {
  ValueMap builtins;
  AddGlobals(now, &builtins);
  for (const auto& [name, value] : builtins.items()) {
    if (name != "namespace") {
      globals_.Set(name, value);
      continue;
    }
    const NativeFunction make = value.function();  // keep each namespace to break cycles
    globals_.Set(name, Value::Function(name, [this, make](const CallArgs& call) -> StatusOr<Value> {
                   ASSIGN_OR_RETURN(Value ns, make(call));
                   namespaces_.push_back(ns);
                   return ns;
                 }));
  }
  for (const auto& [name, value] : variables.items()) globals_.Set(name, value);
}

Evaluator::~Evaluator() {
  // A namespace may hold itself (set ns.a = ns); clearing them all frees every cycle.
  for (const Value& ns : namespaces_) ns.mutable_namespace().Clear();
}

Status Evaluator::Run(const Template& tmpl, std::string* out) {
  Flow flow = Flow::kNormal;
  return Exec(tmpl.body, &root_, out, &flow);
}

Status Evaluator::Step() {
  if (++steps_ > limits_.max_steps) {
    return ResourceExhaustedError("template evaluation ran past " +
                                  std::to_string(limits_.max_steps) + " steps");
  }
  return Status::Ok();
}

Status Evaluator::Annotate(Status st, int line) {
  if (st.ok() || st.message().starts_with(kRaisedPrefix) || st.message().starts_with("line ")) {
    return st;
  }
  return Status(st.code(), "line " + std::to_string(line) + ": " + st.message());
}

Status Evaluator::Exec(const StmtList& body, Scope* scope, std::string* out, Flow* flow) {
  for (const StmtPtr& s : body) {
    RETURN_IF_ERROR(Annotate(ExecStmt(*s, scope, out, flow), s->line));
    if (*flow != Flow::kNormal) return Status::Ok();
  }
  return Status::Ok();
}

Status Evaluator::Append(std::string_view text, std::string* out) const {
  if (out->size() + text.size() > limits_.max_output_bytes) {
    return ResourceExhaustedError("template output beyond " +
                                  std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out->append(text);
  return Status::Ok();
}

// Renders `body` in a new scope under `parent` into a string.
StatusOr<std::string> Evaluator::Capture(const StmtList& body, const Scope* parent) {
  Scope scope(parent);
  std::string text;
  Flow flow = Flow::kNormal;
  RETURN_IF_ERROR(Exec(body, &scope, &text, &flow));
  return text;
}

Status Evaluator::ExecStmt(const Stmt& s, Scope* scope, std::string* out, Flow* flow) {
  RETURN_IF_ERROR(Step());
  switch (s.kind) {
    case StmtKind::kData:
      return Append(s.text, out);
    case StmtKind::kOutput: {
      ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
      return Append(v.Str(), out);
    }
    case StmtKind::kIf:
      for (size_t i = 0; i < s.bodies.size(); ++i) {
        if (i < s.conds.size()) {
          ASSIGN_OR_RETURN(Value c, Eval(*s.conds[i], scope));
          if (!c.Truthy()) continue;
        }
        return Exec(s.bodies[i], scope, out, flow);
      }
      return Status::Ok();
    case StmtKind::kFor:
      return ExecFor(s, scope, out);
    case StmtKind::kSet: {
      ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
      return Assign(s.target, std::move(v), scope);
    }
    case StmtKind::kSetBlock: {
      ASSIGN_OR_RETURN(std::string text, Capture(s.body, scope));
      Value v = Value::String(std::move(text));
      if (s.expr != nullptr) {
        ASSIGN_OR_RETURN(v, ApplyChain(*s.expr, std::move(v), scope));
      }
      return Assign(s.target, std::move(v), scope);
    }
    case StmtKind::kMacro:
      scope->Set(s.text, MakeMacro(s));
      return Status::Ok();
    case StmtKind::kCallBlock: {
      const Expr& call = *s.expr;
      ASSIGN_OR_RETURN(Value callee, Eval(*call.a, scope));
      ASSIGN_OR_RETURN(CallArgs args, EvalArgs(call, scope));
      // `caller` may outlive this statement (stored in a namespace); it refuses to run then.
      auto alive = std::make_shared<bool>(true);
      args.kwargs.emplace_back(
          "caller",
          Value::Function("caller", [this, &s, scope, alive](const CallArgs& a) -> StatusOr<Value> {
            if (!*alive) return InvalidArgumentError("caller() used after its call block");
            return CallBody(s, a, scope);
          }));
      StatusOr<Value> v = Invoke(callee, args);
      *alive = false;
      RETURN_IF_ERROR(v.status());
      return Append(v->Str(), out);
    }
    case StmtKind::kFilterBlock: {
      ASSIGN_OR_RETURN(std::string text, Capture(s.body, scope));
      ASSIGN_OR_RETURN(Value v, ApplyChain(*s.expr, Value::String(std::move(text)), scope));
      return Append(v.Str(), out);
    }
    case StmtKind::kWith: {
      Scope inner(scope);
      for (size_t i = 0; i < s.params.size(); ++i) {
        ASSIGN_OR_RETURN(Value v, Eval(*s.defaults[i], scope));
        inner.Set(s.params[i], std::move(v));
      }
      Flow inner_flow = Flow::kNormal;
      return Exec(s.body, &inner, out, &inner_flow);
    }
    case StmtKind::kScope: {
      ASSIGN_OR_RETURN(std::string text, Capture(s.body, scope));
      return Append(text, out);
    }
    case StmtKind::kBreak:
      *flow = Flow::kBreak;
      return Status::Ok();
    case StmtKind::kContinue:
      *flow = Flow::kContinue;
      return Status::Ok();
  }
  return InternalError("unknown statement");
}

Status Evaluator::Assign(const Target& t, Value v, Scope* scope) {
  if (!t.attr.empty()) {
    const Value* ns = scope->Find(t.names[0]);
    if (ns == nullptr || !ns->is_namespace()) {
      return InvalidArgumentError("cannot assign attribute on non-namespace object");
    }
    ns->mutable_namespace().Set(t.attr, std::move(v));
    return Status::Ok();
  }
  if (!t.unpack) {
    scope->Set(t.names[0], std::move(v));
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  if (items.size() != t.names.size()) {
    return InvalidArgumentError(
        std::string(items.size() < t.names.size() ? "not enough" : "too many") +
        " values to unpack (expected " + std::to_string(t.names.size()) + ", got " +
        std::to_string(items.size()) + ")");
  }
  for (size_t i = 0; i < items.size(); ++i) scope->Set(t.names[i], std::move(items[i]));
  return Status::Ok();
}

Status Evaluator::ExecFor(const Stmt& s, Scope* scope, std::string* out) {
  ASSIGN_OR_RETURN(Value seq, Eval(*s.expr, scope));
  ASSIGN_OR_RETURN(ValueList all, Iterate(seq));
  ValueList items;
  if (s.cond == nullptr) {
    items = std::move(all);
  } else {
    for (Value& item : all) {
      Scope probe(scope);
      RETURN_IF_ERROR(Assign(s.target, item, &probe));
      ASSIGN_OR_RETURN(Value keep, Eval(*s.cond, &probe));
      if (keep.Truthy()) items.push_back(std::move(item));
    }
  }
  const int64_t n = static_cast<int64_t>(items.size());
  // loop.cycle() reads the current iteration, as Jinja's one mutable LoopContext does.
  auto current = std::make_shared<int64_t>(0);
  const Value cycle =
      Value::Function("loop.cycle", [current](const CallArgs& call) -> StatusOr<Value> {
        if (call.args.empty()) return InvalidArgumentError("no items for cycling given");
        return call.args[*current % static_cast<int64_t>(call.args.size())];
      });
  for (int64_t i = 0; i < n; ++i) {
    RETURN_IF_ERROR(Step());
    *current = i;
    Scope iteration(scope);
    ValueMap loop;
    loop.Append("index", Value::Int(i + 1));
    loop.Append("index0", Value::Int(i));
    loop.Append("revindex", Value::Int(n - i));
    loop.Append("revindex0", Value::Int(n - i - 1));
    loop.Append("first", Value::Bool(i == 0));
    loop.Append("last", Value::Bool(i == n - 1));
    loop.Append("length", Value::Int(n));
    loop.Append("depth", Value::Int(1));
    loop.Append("depth0", Value::Int(0));
    if (i > 0) loop.Append("previtem", items[i - 1]);
    if (i + 1 < n) loop.Append("nextitem", items[i + 1]);
    loop.Append("cycle", cycle);
    iteration.Set("loop", Value::Map(std::move(loop)));
    RETURN_IF_ERROR(Assign(s.target, items[i], &iteration));
    Flow flow = Flow::kNormal;
    RETURN_IF_ERROR(Exec(s.body, &iteration, out, &flow));
    if (flow == Flow::kBreak) break;
  }
  if (n == 0 && !s.else_body.empty()) {
    Scope inner(scope);
    Flow flow = Flow::kNormal;
    return Exec(s.else_body, &inner, out, &flow);
  }
  return Status::Ok();
}

Value Evaluator::MakeMacro(const Stmt& m) {
  return Value::Function(m.text, [this, &m](const CallArgs& call) -> StatusOr<Value> {
    Scope scope(&root_);
    Value caller;
    if (call.args.size() > m.params.size()) {
      return InvalidArgumentError("macro '" + m.text + "' takes not more than " +
                                  std::to_string(m.params.size()) + " argument(s)");
    }
    std::vector<bool> given(m.params.size(), false);
    for (size_t i = 0; i < call.args.size(); ++i) {
      scope.Set(m.params[i], call.args[i]);
      given[i] = true;
    }
    for (const auto& [name, value] : call.kwargs) {
      size_t i = 0;
      while (i < m.params.size() && m.params[i] != name) ++i;
      if (i < m.params.size()) {
        if (given[i])
          return InvalidArgumentError("macro '" + m.text +
                                      "' got multiple values "
                                      "for argument '" +
                                      name + "'");
        scope.Set(name, value);
        given[i] = true;
      } else if (name == "caller") {
        scope.Set(name, value);
      } else {
        return InvalidArgumentError("macro '" + m.text + "' takes no keyword argument '" + name +
                                    "'");
      }
    }
    const size_t first_default = m.params.size() - m.defaults.size();
    for (size_t i = 0; i < m.params.size(); ++i) {
      if (given[i]) continue;
      if (i >= first_default) {
        ASSIGN_OR_RETURN(Value v, Eval(*m.defaults[i - first_default], &scope));
        scope.Set(m.params[i], std::move(v));
      } else {
        scope.Set(m.params[i],
                  Value::Undefined("parameter '" + m.params[i] + "' was not provided"));
      }
    }
    return RunBody(m.body, &scope);
  });
}

// The body of a {% call %} block, run when the macro calls caller(...).
StatusOr<Value> Evaluator::CallBody(const Stmt& s, const CallArgs& call, const Scope* parent) {
  Scope scope(parent);
  for (size_t i = 0; i < s.params.size(); ++i) {
    scope.Set(s.params[i], i < call.args.size() ? call.args[i] : Value::Undefined());
  }
  return RunBody(s.body, &scope);
}

StatusOr<Value> Evaluator::RunBody(const StmtList& body, Scope* scope) {
  if (depth_ >= limits_.max_call_depth) {
    return ResourceExhaustedError("macro calls nest deeper than " +
                                  std::to_string(limits_.max_call_depth));
  }
  ++depth_;
  std::string text;
  Flow flow = Flow::kNormal;
  Status st = Exec(body, scope, &text, &flow);
  --depth_;
  RETURN_IF_ERROR(st);
  return Value::String(std::move(text));
}

}  // namespace internal

StatusOr<std::string> Render(const Template& tmpl, const ValueMap& variables, std::time_t now,
                             const RenderLimits& limits) {
  internal::Evaluator evaluator(variables, now, limits);
  std::string out;
  RETURN_IF_ERROR(evaluator.Run(tmpl, &out));
  return out;
}

}  // namespace forge::jinja
