// Arithmetic with Python's rules (floor division, modulo signs, str and list repetition) and the
// global functions: range, namespace, dict, raise_exception, strftime_now.
#include <cmath>
#include <ctime>

#include "jinja/args.h"
#include "jinja/builtins.h"

namespace forge::jinja {
namespace {

constexpr int64_t kMaxItems = int64_t{1} << 20;
constexpr int64_t kMaxBytes = int64_t{1} << 26;
constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

Status Overflow() {
  return UnimplementedError("integer overflow: Forge's templates use 64-bit integers");
}

Status Unsupported(std::string_view op, const Value& a, const Value& b) {
  return InvalidArgumentError("unsupported operand type(s) for " + std::string(op) + ": '" +
                              a.TypeName() + "' and '" + b.TypeName() + "'");
}

StatusOr<Value> Repeat(const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    if (times > 0 && static_cast<int64_t>(seq.str().size()) > kMaxBytes / times) {
      return ResourceExhaustedError("string repetition beyond 64 MiB");
    }
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value::String(std::move(out));
  }
  if (times > 0 && static_cast<int64_t>(seq.list().size()) > kMaxItems / times) {
    return ResourceExhaustedError("list repetition beyond 2^20 items");
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return seq.is_tuple() ? Value::Tuple(std::move(out)) : Value::List(std::move(out));
}

// Python's float // and % (floatobject.c float_divmod).
void FloatDivMod(double vx, double wx, double* floordiv, double* mod) {
  double m = std::fmod(vx, wx);
  double div = (vx - m) / wx;
  if (m != 0) {
    if ((wx < 0) != (m < 0)) {
      m += wx;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, wx);
  }
  if (div != 0) {
    double f = std::floor(div);
    if (div - f > 0.5) f += 1.0;
    div = f;
  } else {
    div = std::copysign(0.0, vx / wx);
  }
  *floordiv = div;
  *mod = m;
}

StatusOr<Value> IntPow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) return Overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) return Overflow();
  }
  return Value::Int(result);
}

StatusOr<Value> Arithmetic(std::string_view op, const Value& a, const Value& b) {
  const bool ints = a.is_integral() && b.is_integral();
  const int64_t x = a.int_value(), y = b.int_value();
  const double fx = a.AsDouble(), fy = b.AsDouble();
  int64_t r = 0;
  if (op == "+") {
    if (!ints) return Value::Float(fx + fy);
    if (__builtin_add_overflow(x, y, &r)) return Overflow();
    return Value::Int(r);
  }
  if (op == "-") {
    if (!ints) return Value::Float(fx - fy);
    if (__builtin_sub_overflow(x, y, &r)) return Overflow();
    return Value::Int(r);
  }
  if (op == "*") {
    if (!ints) return Value::Float(fx * fy);
    if (__builtin_mul_overflow(x, y, &r)) return Overflow();
    return Value::Int(r);
  }
  if (op == "/") {
    if (fy == 0) return InvalidArgumentError("division by zero");
    return Value::Float(fx / fy);
  }
  if (op == "//" || op == "%") {
    if (ints) {
      if (y == 0) return InvalidArgumentError("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) {
        if (op == "%") return Value::Int(0);
        return Overflow();
      }
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) m += y, q -= 1;
      return Value::Int(op == "//" ? q : m);
    }
    if (fy == 0) {
      return InvalidArgumentError(op == "//" ? "float floor division by zero" : "float modulo");
    }
    double div, mod;
    FloatDivMod(fx, fy, &div, &mod);
    return Value::Float(op == "//" ? div : mod);
  }
  // **
  if (ints && y >= 0) return IntPow(x, y);
  if (fx == 0 && fy < 0) return InvalidArgumentError("0.0 cannot be raised to a negative power");
  if (fx < 0 && std::floor(fy) != fy) {
    return UnimplementedError("a negative number to a fractional power (a complex result)");
  }
  return Value::Float(std::pow(fx, fy));
}

}  // namespace

StatusOr<Value> BinaryOp(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) return InvalidArgumentError(a.UndefinedMessage());
  if (b.is_undefined()) return InvalidArgumentError(b.UndefinedMessage());
  if (a.is_number() && b.is_number()) return Arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (static_cast<int64_t>(a.str().size() + b.str().size()) > kMaxBytes) {
        return ResourceExhaustedError("string beyond 64 MiB");
      }
      return Value::String(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      if (static_cast<int64_t>(a.list().size() + b.list().size()) > kMaxItems) {
        return ResourceExhaustedError("list beyond 2^20 items");
      }
      ValueList out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return a.is_tuple() ? Value::Tuple(std::move(out)) : Value::List(std::move(out));
    }
    if (a.is_string() || a.is_list()) {
      return InvalidArgumentError("can only concatenate " + a.TypeName() + " (not \"" +
                                  b.TypeName() + "\") to " + a.TypeName());
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && b.is_integral()) return Repeat(a, b.int_value());
    if (a.is_integral() && (b.is_string() || b.is_list())) return Repeat(b, a.int_value());
  }
  if (op == "%" && a.is_string()) {
    return UnimplementedError("printf-style string formatting (str % value)");
  }
  return Unsupported(op, a, b);
}

StatusOr<Value> UnaryOp(std::string_view op, const Value& a) {
  if (a.is_undefined()) return InvalidArgumentError(a.UndefinedMessage());
  if (!a.is_number()) {
    return InvalidArgumentError("bad operand type for unary " + std::string(op) + ": '" +
                                a.TypeName() + "'");
  }
  if (a.is_float()) return Value::Float(op == "-" ? -a.float_value() : a.float_value());
  if (op == "-" && a.int_value() == INT64_MIN) return Overflow();
  return Value::Int(op == "-" ? -a.int_value() : a.int_value());
}

void AddGlobals(std::time_t now, ValueMap* globals) {
  globals->Set("range", Value::Function("range", [](const CallArgs& call) -> StatusOr<Value> {
                 if (!call.kwargs.empty())
                   return InvalidArgumentError("range() takes no keyword arguments");
                 if (call.args.empty() || call.args.size() > 3) {
                   return InvalidArgumentError("range expected 1 to 3 arguments");
                 }
                 for (const Value& v : call.args) {
                   if (!v.is_integral()) {
                     return InvalidArgumentError("'" + v.TypeName() +
                                                 "' object cannot be interpreted as an integer");
                   }
                 }
                 int64_t start = 0, stop, step = 1;
                 if (call.args.size() == 1) {
                   stop = call.args[0].int_value();
                 } else {
                   start = call.args[0].int_value();
                   stop = call.args[1].int_value();
                   if (call.args.size() == 3) step = call.args[2].int_value();
                 }
                 if (step == 0) return InvalidArgumentError("range() arg 3 must not be zero");
                 const double count =
                     std::ceil((static_cast<double>(stop) - static_cast<double>(start)) /
                               static_cast<double>(step));
                 if (count > kMaxRange) {
                   return InvalidArgumentError(
                       "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
                 }
                 ValueList out;
                 for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
                   out.push_back(Value::Int(i));
                 return Value::List(std::move(out));
               }));
  auto make_map = [](std::string_view fn, const CallArgs& call) -> StatusOr<ValueMap> {
    if (call.args.size() > 1) {
      return InvalidArgumentError(std::string(fn) + " expected at most 1 argument");
    }
    ValueMap map;
    if (!call.args.empty()) {
      const Value& init = call.args[0];
      if (init.is_undefined()) return InvalidArgumentError(init.UndefinedMessage());
      if (init.is_dict()) {
        for (const auto& [k, v] : init.map().items()) map.Set(k, v);
      } else {
        ASSIGN_OR_RETURN(ValueList pairs, Iterate(init));
        for (const Value& pair : pairs) {
          if (!pair.is_list() || pair.list().size() != 2) {
            return InvalidArgumentError(std::string(fn) + "() needs a sequence of key/value pairs");
          }
          if (!pair.list()[0].is_string()) {
            return UnimplementedError("dict keys that are not strings");
          }
          map.Set(pair.list()[0].str(), pair.list()[1]);
        }
      }
    }
    for (const auto& [k, v] : call.kwargs) map.Set(k, v);
    return map;
  };
  globals->Set("namespace",
               Value::Function("namespace", [make_map](const CallArgs& call) -> StatusOr<Value> {
                 ASSIGN_OR_RETURN(ValueMap map, make_map("namespace", call));
                 return Value::Namespace(std::move(map));
               }));
  globals->Set("dict", Value::Function("dict", [make_map](const CallArgs& call) -> StatusOr<Value> {
                 ASSIGN_OR_RETURN(ValueMap map, make_map("dict", call));
                 return Value::Map(std::move(map));
               }));
  globals->Set("raise_exception",
               Value::Function("raise_exception", [](const CallArgs& call) -> StatusOr<Value> {
                 ASSIGN_OR_RETURN(BoundArgs b,
                                  BoundArgs::Bind("raise_exception", call, {"message"}));
                 return InvalidArgumentError(std::string(kRaisedPrefix) +
                                             b.get(0, Value::Undefined()).Str());
               }));
  globals->Set("strftime_now",
               Value::Function("strftime_now", [now](const CallArgs& call) -> StatusOr<Value> {
                 ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("strftime_now", call, {"format"}));
                 const Value format = b.get(0, Value::Undefined());
                 if (!format.is_string())
                   return InvalidArgumentError("strftime_now() format must be a str");
                 std::tm tm{};
                 localtime_r(&now, &tm);
                 std::string out(256 + 4 * format.str().size(), '\0');
                 const size_t n = format.str().empty() ? 0
                                                       : std::strftime(out.data(), out.size(),
                                                                       format.str().c_str(), &tm);
                 out.resize(n);
                 return Value::String(std::move(out));
               }));
}

}  // namespace forge::jinja
