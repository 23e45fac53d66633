// Value: what a Jinja expression evaluates to, with Python's semantics for truthiness, str(),
// repr(), equality and ordering (templates are Python code in disguise), plus json.dumps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace forge::jinja {

class Value;
using ValueList = std::vector<Value>;

// An insertion-ordered dict with string keys (Python dicts keep insertion order).
class ValueMap {
 public:
  const Value* Find(std::string_view key) const;
  void Set(std::string key, Value value);
  // Adds a key known to be new (no lookup).
  void Append(std::string key, Value value);
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
  // Defined below Value (clang needs Value complete to instantiate these).
  size_t size() const;
  void Clear();

 private:
  std::vector<std::pair<std::string, Value>> items_;
};

// Arguments of a call: positional, then keyword.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

using NativeFunction = std::function<StatusOr<Value>(const CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kMap, kFunction };

  Value() = default;  // undefined
  // `hint` names what was missing, for the error when an undefined value is used.
  static Value Undefined(std::string hint = {});
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double d);
  static Value String(std::string s);
  static Value List(ValueList items);
  static Value Tuple(ValueList items);
  static Value Map(ValueMap map);
  // A namespace(): the one mutable object, shared by reference like a Python object.
  static Value Namespace(ValueMap map);
  static Value Function(std::string name, NativeFunction fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // bool, int or float (Python's numbers.Number).
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  // bool or int (Python's int, of which bool is a subclass).
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }  // lists and tuples
  bool is_tuple() const { return kind_ == Kind::kList && flag_; }
  bool is_map() const { return kind_ == Kind::kMap; }  // dicts and namespaces
  bool is_dict() const { return kind_ == Kind::kMap && !flag_; }
  bool is_namespace() const { return kind_ == Kind::kMap && flag_; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool bool_value() const { return b_; }
  int64_t int_value() const { return is_bool() ? (b_ ? 1 : 0) : i_; }
  double float_value() const { return f_; }
  double AsDouble() const { return is_float() ? f_ : static_cast<double>(int_value()); }
  const std::string& str() const { return s_; }  // string payload
  const std::string& undefined_hint() const { return s_; }
  const ValueList& list() const { return *list_; }
  const ValueMap& map() const { return *map_; }
  // Requires: is_namespace().
  ValueMap& mutable_namespace() const;
  const std::string& function_name() const { return s_; }
  const NativeFunction& function() const { return *fn_; }
  // The shared object behind a list, map or function (identity for `is sameas`).
  const void* identity() const;

  bool Truthy() const;
  // Python str(): strings as they are, None as "None", lists as their repr; undefined is "".
  std::string Str() const;
  // Python repr().
  std::string Repr() const;
  // Python's type name ("str", "int", "list", "dict", "NoneType", ...), for error messages.
  std::string TypeName() const;
  // The message of Jinja's UndefinedError for this undefined value.
  std::string UndefinedMessage() const;

  // Python ==.
  static bool Equal(const Value& a, const Value& b);
  // Python a < b; an error when the types do not order ("'<' not supported ...").
  static StatusOr<bool> Less(const Value& a, const Value& b);

 private:
  Kind kind_ = Kind::kUndefined;
  bool flag_ = false;  // tuple (lists), namespace (maps)
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;  // string, undefined hint or function name
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<ValueMap> map_;
  std::shared_ptr<const NativeFunction> fn_;
};

// json.dumps options, as HF's tojson filter passes them (ensure_ascii=False by default).
struct JsonOptions {
  bool pretty = false;  // indent given: newlines and `indent` per level
  std::string indent;   // the text of one indent level
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Appends json.dumps(value) to *out; an error for values JSON cannot hold (undefined, functions,
// namespaces) or nesting deeper than 128.
Status AppendJson(const Value& value, const JsonOptions& options, std::string* out);

inline size_t ValueMap::size() const { return items_.size(); }
inline void ValueMap::Clear() { items_.clear(); }

}  // namespace forge::jinja
