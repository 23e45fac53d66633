// Expression evaluation: names, literals, attribute and item access, slices, calls, filters,
// tests, arithmetic, comparisons, and/or/not and inline if.
#include "jinja/builtins.h"
#include "jinja/evaluator_impl.h"

namespace forge::jinja::internal {

// Applies a filter chain parsed with a null innermost input to `input`.
StatusOr<Value> Evaluator::ApplyChain(const Expr& chain, Value input, Scope* scope) {
  Value in = std::move(input);
  if (chain.a != nullptr) {
    ASSIGN_OR_RETURN(in, ApplyChain(*chain.a, std::move(in), scope));
  }
  ASSIGN_OR_RETURN(CallArgs args, EvalArgs(chain, scope));
  return ApplyFilter(chain.name, in, args);
}

StatusOr<Value> Evaluator::Invoke(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) return InvalidArgumentError(callee.UndefinedMessage());
  if (!callee.is_function()) {
    return InvalidArgumentError("'" + callee.TypeName() + "' object is not callable");
  }
  return callee.function()(args);
}

StatusOr<CallArgs> Evaluator::EvalArgs(const Expr& e, Scope* scope) {
  CallArgs args;
  for (const ExprPtr& item : e.items) {
    ASSIGN_OR_RETURN(Value v, Eval(*item, scope));
    args.args.push_back(std::move(v));
  }
  for (const Keyword& kw : e.kwargs) {
    ASSIGN_OR_RETURN(Value v, Eval(*kw.value, scope));
    args.kwargs.emplace_back(kw.name, std::move(v));
  }
  return args;
}

StatusOr<Value> Evaluator::EvalOptional(const ExprPtr& e, Scope* scope) {
  if (e == nullptr) return Value::None();
  return Eval(*e, scope);
}

// Charges work in proportion to the size of what an expression built, so that the step budget
// also bounds templates that grow big lists or strings in a loop.
StatusOr<Value> Evaluator::Eval(const Expr& e, Scope* scope) {
  RETURN_IF_ERROR(Step());
  ASSIGN_OR_RETURN(Value v, EvalUncharged(e, scope));
  if (e.kind == ExprKind::kBinary || e.kind == ExprKind::kCall || e.kind == ExprKind::kFilter ||
      e.kind == ExprKind::kConcat || e.kind == ExprKind::kList) {
    if (v.is_list()) steps_ += static_cast<int64_t>(v.list().size() / 16);
    if (v.is_string()) steps_ += static_cast<int64_t>(v.str().size() / 1024);
  }
  return v;
}

StatusOr<Value> Evaluator::EvalUncharged(const Expr& e, Scope* scope) {
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName: {
      const Value* v = scope->Find(e.name);
      if (v == nullptr) return Value::Undefined("'" + e.name + "' is undefined");
      return *v;
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (const ExprPtr& item : e.items) {
        ASSIGN_OR_RETURN(Value v, Eval(*item, scope));
        items.push_back(std::move(v));
      }
      return e.kind == ExprKind::kList ? Value::List(std::move(items))
                                       : Value::Tuple(std::move(items));
    }
    case ExprKind::kDict: {
      ValueMap map;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        ASSIGN_OR_RETURN(Value key, Eval(*e.items[i], scope));
        ASSIGN_OR_RETURN(Value value, Eval(*e.items[i + 1], scope));
        if (!key.is_string()) return UnimplementedError("dict keys that are not strings");
        map.Set(key.str(), std::move(value));
      }
      return Value::Map(std::move(map));
    }
    case ExprKind::kGetAttr: {
      ASSIGN_OR_RETURN(Value obj, Eval(*e.a, scope));
      return GetAttr(obj, e.name);
    }
    case ExprKind::kGetItem: {
      ASSIGN_OR_RETURN(Value obj, Eval(*e.a, scope));
      if (e.b->kind == ExprKind::kSlice) {
        ASSIGN_OR_RETURN(Value start, EvalOptional(e.b->a, scope));
        ASSIGN_OR_RETURN(Value stop, EvalOptional(e.b->b, scope));
        ASSIGN_OR_RETURN(Value step, EvalOptional(e.b->c, scope));
        return GetSlice(obj, start, stop, step);
      }
      ASSIGN_OR_RETURN(Value key, Eval(*e.b, scope));
      return GetItem(obj, key);
    }
    case ExprKind::kSlice:
      return InternalError("a slice outside a subscript");
    case ExprKind::kCall: {
      ASSIGN_OR_RETURN(Value callee, Eval(*e.a, scope));
      ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, scope));
      return Invoke(callee, args);
    }
    case ExprKind::kFilter: {
      ASSIGN_OR_RETURN(Value input, Eval(*e.a, scope));
      ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, scope));
      return ApplyFilter(e.name, input, args);
    }
    case ExprKind::kTest: {
      ASSIGN_OR_RETURN(Value input, Eval(*e.a, scope));
      ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, scope));
      ASSIGN_OR_RETURN(bool pass, ApplyTest(e.name, input, args));
      return Value::Bool(pass);
    }
    case ExprKind::kNot: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.a, scope));
      return Value::Bool(!v.Truthy());
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.a, scope));
      return UnaryOp(e.kind == ExprKind::kNeg ? "-" : "+", v);
    }
    case ExprKind::kBinary: {
      ASSIGN_OR_RETURN(Value a, Eval(*e.a, scope));
      ASSIGN_OR_RETURN(Value b, Eval(*e.b, scope));
      return BinaryOp(e.name, a, b);
    }
    case ExprKind::kConcat: {
      std::string out;
      for (const ExprPtr& item : e.items) {
        ASSIGN_OR_RETURN(Value v, Eval(*item, scope));
        out += v.Str();
        if (out.size() > limits_.max_output_bytes) {
          return ResourceExhaustedError("string beyond the output limit");
        }
      }
      return Value::String(std::move(out));
    }
    case ExprKind::kCompare: {
      ASSIGN_OR_RETURN(Value left, Eval(*e.a, scope));
      for (size_t i = 0; i < e.ops.size(); ++i) {
        ASSIGN_OR_RETURN(Value right, Eval(*e.items[i], scope));
        const std::string& op = e.ops[i];
        bool pass;
        if (op == "in" || op == "notin") {
          ASSIGN_OR_RETURN(pass, Contains(right, left));
          if (op == "notin") pass = !pass;
        } else {
          CallArgs other;
          other.args.push_back(right);
          ASSIGN_OR_RETURN(pass, ApplyTest(op, left, other));
        }
        if (!pass) return Value::Bool(false);
        left = std::move(right);
      }
      return Value::Bool(true);
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      ASSIGN_OR_RETURN(Value left, Eval(*e.a, scope));
      if (left.Truthy() == (e.kind == ExprKind::kOr)) return left;
      return Eval(*e.b, scope);
    }
    case ExprKind::kCond: {
      ASSIGN_OR_RETURN(Value test, Eval(*e.b, scope));
      if (test.Truthy()) return Eval(*e.a, scope);
      if (e.c != nullptr) return Eval(*e.c, scope);
      return Value::Undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return InternalError("unknown expression");
}

}  // namespace forge::jinja::internal
