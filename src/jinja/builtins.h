// Builtin filters, tests, methods and globals of the interpreter (Jinja's, HF's and Python's
// str/dict methods), with the Python semantics that the reference renderer has.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "jinja/value.h"

namespace forge::jinja {

enum class BuiltinSupport {
  kSupported,
  kUnsupported,  // Jinja has it; Forge does not (an Unimplemented error when used)
  kUnknown,      // Jinja has no such filter or test either
};
BuiltinSupport FilterSupport(std::string_view name);
BuiltinSupport TestSupport(std::string_view name);

// Calls filter `name` on `input`. Filters that apply other filters or tests (map, select, ...)
// call back into these functions.
StatusOr<Value> ApplyFilter(std::string_view name, const Value& input, const CallArgs& args);
StatusOr<bool> ApplyTest(std::string_view name, const Value& input, const CallArgs& args);

// Jinja's getattr(obj, name) then obj[name]; and getitem obj[key] then getattr. Both give an
// undefined value (never an error) when nothing is found, except on an undefined `obj`.
StatusOr<Value> GetAttr(const Value& obj, std::string_view name);
StatusOr<Value> GetItem(const Value& obj, const Value& key);
// obj[start:stop:step] on a list, tuple or string.
StatusOr<Value> GetSlice(const Value& obj, const Value& start, const Value& stop,
                         const Value& step);

// Python's a <op> b for + - * / // % **, and unary - and +: errors where Python raises
// (TypeError, ZeroDivisionError), for integers beyond 64 bits and for results past the size
// limits (2^20 items, 2^26 bytes).
StatusOr<Value> BinaryOp(std::string_view op, const Value& a, const Value& b);
StatusOr<Value> UnaryOp(std::string_view op, const Value& a);

// The iteration of `v` as a for loop sees it: items of a list, keys of a dict, code points of
// a string; nothing for undefined; an error for other values.
StatusOr<ValueList> Iterate(const Value& v);

// Python's `needle in container`.
StatusOr<bool> Contains(const Value& container, const Value& needle);

// The global functions every template sees: range, namespace, dict, raise_exception and
// strftime_now (which formats `now`, local time, as HF's does).
void AddGlobals(std::time_t now, ValueMap* globals);

// The message of a raise_exception() call is carried in a Status with this prefix, so that the
// caller can return the template's own message unchanged.
inline constexpr std::string_view kRaisedPrefix = "raise_exception: ";

}  // namespace forge::jinja
