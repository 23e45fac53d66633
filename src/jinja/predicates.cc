// Jinja's tests, the `x is <name>` predicates (jinja2/tests.py).
#include <algorithm>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/text.h"

namespace forge::jinja {
namespace {

constexpr std::string_view kTests[] = {
    "defined", "undefined", "none",   "boolean", "false",    "true",     "integer",
    "float",   "number",    "string", "mapping", "iterable", "sequence", "callable",
    "sameas",  "escaped",   "eq",     "equalto", "==",       "ne",       "!=",
    "lt",      "lessthan",  "<",      "le",      "<=",       "gt",       "greaterthan",
    ">",       "ge",        ">=",     "in",      "odd",      "even",     "divisibleby",
    "lower",   "upper",     "filter", "test"};

StatusOr<Value> Arg(std::string_view name, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"other"}));
  if (!b.has(0)) {
    return InvalidArgumentError("test '" + std::string(name) + "' takes one argument");
  }
  return b.get(0);
}

bool SameAs(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
      return a.bool_value() == b.bool_value();
    case Value::Kind::kInt:  // CPython caches the small ints
      return a.int_value() == b.int_value() && a.int_value() >= -5 && a.int_value() <= 256;
    case Value::Kind::kFloat:
      return false;
    case Value::Kind::kString:
      return a.str() == b.str();
    default:
      return a.identity() == b.identity();
  }
}

StatusOr<bool> Compare(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return Value::Equal(a, b);
  if (op == "!=") return !Value::Equal(a, b);
  if (op == "<") return Value::Less(a, b);
  if (op == ">") return Value::Less(b, a);
  ASSIGN_OR_RETURN(bool less, op == "<=" ? Value::Less(a, b) : Value::Less(b, a));
  return less || Value::Equal(a, b);
}

StatusOr<bool> Modulo(const Value& v, const Value& divisor, int64_t want) {
  ASSIGN_OR_RETURN(Value m, BinaryOp("%", v, divisor));
  return Value::Equal(m, Value::Int(want));
}

}  // namespace

BuiltinSupport TestSupport(std::string_view name) {
  for (std::string_view t : kTests) {
    if (t == name) return BuiltinSupport::kSupported;
  }
  return BuiltinSupport::kUnknown;
}

StatusOr<bool> ApplyTest(std::string_view name, const Value& v, const CallArgs& args) {
  static constexpr std::string_view kOneArg[] = {
      "sameas",   "divisibleby", "in", "eq", "equalto", "==",          "ne", "!=", "lt",
      "lessthan", "<",           "le", "<=", "gt",      "greaterthan", ">",  "ge", ">="};
  if (std::find(std::begin(kOneArg), std::end(kOneArg), name) == std::end(kOneArg) &&
      (!args.args.empty() || !args.kwargs.empty())) {
    return InvalidArgumentError("test '" + std::string(name) + "' takes no arguments");
  }
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "false") return v.is_bool() && !v.bool_value();
  if (name == "true") return v.is_bool() && v.bool_value();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "escaped") return false;
  // Jinja's Undefined has __iter__, __len__, __getitem__ and __call__, so it passes these.
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "callable") return v.is_function() || v.is_undefined();
  if (name == "lower") return PyIsLower(v.Str());
  if (name == "upper") return PyIsUpper(v.Str());
  if (name == "odd" || name == "even") return Modulo(v, Value::Int(2), name == "odd" ? 1 : 0);
  if (name == "filter" || name == "test") {
    if (!v.is_string()) return false;
    const BuiltinSupport s = name == "filter" ? FilterSupport(v.str()) : TestSupport(v.str());
    return s == BuiltinSupport::kSupported;
  }
  ASSIGN_OR_RETURN(Value other, Arg(name, args));
  if (name == "sameas") return SameAs(v, other);
  if (name == "divisibleby") return Modulo(v, other, 0);
  if (name == "in") return Contains(other, v);
  if (name == "eq" || name == "equalto" || name == "==") return Compare("==", v, other);
  if (name == "ne" || name == "!=") return Compare("!=", v, other);
  if (name == "lt" || name == "lessthan" || name == "<") return Compare("<", v, other);
  if (name == "le" || name == "<=") return Compare("<=", v, other);
  if (name == "gt" || name == "greaterthan" || name == ">") return Compare(">", v, other);
  if (name == "ge" || name == ">=") return Compare(">=", v, other);
  return InvalidArgumentError("No test named '" + std::string(name) + "'.");
}

}  // namespace forge::jinja
