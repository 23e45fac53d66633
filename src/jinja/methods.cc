// Attribute and item access (jinja2.sandbox getattr/getitem), slicing, iteration, `in`, and the
// Python str/dict/list methods templates call (.strip(), .split(), .items(), ...).
#include <algorithm>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/text.h"

namespace forge::jinja {
namespace {

const std::vector<std::string_view> kStrMethods = {
    "strip",    "lstrip",  "rstrip",  "split",  "rsplit",     "splitlines", "startswith",
    "endswith", "upper",   "lower",   "title",  "capitalize", "replace",    "find",
    "rfind",    "index",   "count",   "join",   "isdigit",    "isalpha",    "isalnum",
    "isspace",  "islower", "isupper", "format", "zfill"};
const std::vector<std::string_view> kDictMethods = {
    "items", "keys", "values", "get", "copy", "pop", "update", "setdefault", "clear", "popitem"};
const std::vector<std::string_view> kListMethods = {"index",  "count",  "copy",   "append",
                                                    "extend", "insert", "pop",    "remove",
                                                    "clear",  "sort",   "reverse"};

bool Contains(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool HasMethod(const Value& obj, std::string_view name) {
  if (obj.is_string()) return Contains(kStrMethods, name);
  if (obj.is_dict()) return Contains(kDictMethods, name);
  if (obj.is_list() && !obj.is_tuple()) return Contains(kListMethods, name);
  if (obj.is_tuple()) return name == "index" || name == "count";
  return false;
}

StatusOr<std::optional<std::string>> OptionalString(const BoundArgs& b, size_t i,
                                                    std::string_view what) {
  const Value v = b.get(i);
  if (v.is_none()) return std::optional<std::string>();
  if (!v.is_string()) {
    return InvalidArgumentError(std::string(what) + " arg must be None or str, not " +
                                v.TypeName());
  }
  return std::optional<std::string>(v.str());
}

StatusOr<std::string> StringArg(const BoundArgs& b, size_t i, std::string_view fn) {
  const Value v = b.get(i, Value::Undefined());
  if (!v.is_string()) {
    return InvalidArgumentError(std::string(fn) + "() argument must be str, not " + v.TypeName());
  }
  return v.str();
}

int64_t CodePointIndex(std::string_view s, size_t byte_pos) {
  return static_cast<int64_t>(CodePointCount(s.substr(0, byte_pos)));
}

StatusOr<Value> CallStrMethod(const std::string& s, std::string_view name, const CallArgs& call) {
  static constexpr std::string_view kNoArgs[] = {"upper",   "lower",   "title",     "capitalize",
                                                 "isdigit", "isalpha", "isalnum",   "isspace",
                                                 "islower", "isupper", "splitlines"};
  for (std::string_view n : kNoArgs) {
    if (n == name && (!call.args.empty() || !call.kwargs.empty())) {
      if (name == "splitlines") return UnimplementedError("str.splitlines(keepends)");
      return InvalidArgumentError("str." + std::string(name) + "() takes no arguments");
    }
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"chars"}));
    ASSIGN_OR_RETURN(auto chars, OptionalString(b, 0, name));
    return Value::String(PyStrip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"sep", "maxsplit"}));
    ASSIGN_OR_RETURN(auto sep, OptionalString(b, 0, "sep"));
    if (sep && sep->empty()) return InvalidArgumentError("empty separator");
    const Value maxsplit = b.get(1, Value::Int(-1));
    if (!maxsplit.is_integral()) return InvalidArgumentError("maxsplit must be an integer");
    std::vector<std::string> pieces =
        PySplit(s, sep, maxsplit.int_value(), name == "rsplit", kMaxStringItems);
    if (pieces.size() > kMaxStringItems) return ResourceExhaustedError("split into too many parts");
    ValueList parts;
    for (auto& p : pieces) {
      parts.push_back(Value::String(std::move(p)));
    }
    return Value::List(std::move(parts));
  }
  if (name == "splitlines") {
    std::vector<std::string> lines = PySplitLines(s, kMaxStringItems);
    if (lines.size() > kMaxStringItems) return ResourceExhaustedError("too many lines");
    ValueList parts;
    for (auto& p : lines) parts.push_back(Value::String(std::move(p)));
    return Value::List(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"prefix"}, 1));
    const Value p = b.get(0, Value::Undefined());
    ValueList options = p.is_tuple() ? p.list() : ValueList{p};
    for (const Value& o : options) {
      if (!o.is_string()) {
        return InvalidArgumentError(std::string(name) + " first arg must be str or a tuple of str");
      }
      const bool hit = name == "startswith" ? std::string_view(s).starts_with(o.str())
                                            : std::string_view(s).ends_with(o.str());
      if (hit) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (name == "upper") return Value::String(PyUpper(s));
  if (name == "lower") return Value::String(PyLower(s));
  if (name == "title") return Value::String(PyTitle(s));
  if (name == "capitalize") return Value::String(PyCapitalize(s));
  if (name == "replace") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"old", "new", "count"}, 2));
    ASSIGN_OR_RETURN(std::string old_text, StringArg(b, 0, name));
    ASSIGN_OR_RETURN(std::string new_text, StringArg(b, 1, name));
    const Value count = b.get(2, Value::Int(-1));
    if (!count.is_integral()) return InvalidArgumentError("replace() count must be an integer");
    if (PyReplaceSize(s, old_text, new_text, count.int_value()) > kMaxStringBytes) {
      return ResourceExhaustedError("replace() result beyond 64 MiB");
    }
    return Value::String(PyReplace(s, old_text, new_text, count.int_value()));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "count") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"sub"}, 1));
    ASSIGN_OR_RETURN(std::string sub, StringArg(b, 0, name));
    if (name == "count") {
      if (sub.empty()) return Value::Int(static_cast<int64_t>(CodePointCount(s)) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value::Int(n);
    }
    const size_t hit = name == "rfind" ? s.rfind(sub) : s.find(sub);
    if (hit == std::string::npos) {
      if (name == "index") return InvalidArgumentError("substring not found");
      return Value::Int(-1);
    }
    return Value::Int(CodePointIndex(s, hit));
  }
  if (name == "join") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"iterable"}, 1));
    ASSIGN_OR_RETURN(ValueList items, Iterate(b.get(0, Value::Undefined())));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        return InvalidArgumentError("sequence item " + std::to_string(i) +
                                    ": expected str instance, " + items[i].TypeName() + " found");
      }
      if (i) out += s;
      out += items[i].str();
      if (out.size() > kMaxStringBytes) return ResourceExhaustedError("join() beyond 64 MiB");
    }
    return Value::String(std::move(out));
  }
  if (name == "zfill") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"width"}, 1));
    const Value w = b.get(0, Value::Undefined());
    if (!w.is_integral()) return InvalidArgumentError("zfill() width must be an integer");
    const int64_t len = static_cast<int64_t>(CodePointCount(s));
    if (w.int_value() <= len) return Value::String(s);
    if (w.int_value() > static_cast<int64_t>(kMaxStringBytes)) {
      return ResourceExhaustedError("zfill() beyond 64 MiB");
    }
    const size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    return Value::String(s.substr(0, sign) + std::string(w.int_value() - len, '0') +
                         s.substr(sign));
  }
  if (name == "format") return UnimplementedError("str.format() is not supported");
  // The is* predicates.
  const std::u32string text = DecodeUtf8(s);
  if (name == "islower") return Value::Bool(PyIsLower(s));
  if (name == "isupper") return Value::Bool(PyIsUpper(s));
  auto all = [&](auto pred) {
    return !text.empty() && std::all_of(text.begin(), text.end(), pred);
  };
  auto alpha = [](char32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= 0xC0 && c != 0xD7 && c != 0xF7);
  };
  auto digit = [](char32_t c) { return c >= '0' && c <= '9'; };
  if (name == "isdigit") return Value::Bool(all(digit));
  if (name == "isalpha") return Value::Bool(all(alpha));
  if (name == "isalnum") return Value::Bool(all([&](char32_t c) { return alpha(c) || digit(c); }));
  if (name == "isspace") return Value::Bool(all(IsPySpace));
  return InternalError("str method '" + std::string(name) + "' has no implementation");
}

StatusOr<Value> CallDictMethod(const Value& obj, std::string_view name, const CallArgs& call) {
  const ValueMap& map = obj.map();
  if (name == "items" || name == "keys" || name == "values") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {}));
    ValueList out;
    for (const auto& [key, value] : map.items()) {
      if (name == "items") {
        out.push_back(Value::Tuple({Value::String(key), value}));
      } else {
        out.push_back(name == "keys" ? Value::String(key) : value);
      }
    }
    return Value::List(std::move(out));
  }
  if (name == "get") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"key", "default"}, 1));
    const Value key = b.get(0, Value::Undefined());
    if (key.is_string()) {
      if (const Value* v = map.Find(key.str())) return *v;
    }
    return b.get(1);
  }
  if (name == "copy") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {}));
    return Value::Map(map);
  }
  return InvalidArgumentError("access to attribute '" + std::string(name) +
                              "' of 'dict' object is unsafe.");
}

StatusOr<Value> CallListMethod(const Value& obj, std::string_view name, const CallArgs& call) {
  if (name == "index" || name == "count") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {"value"}, 1));
    const Value x = b.get(0, Value::Undefined());
    int64_t n = 0;
    for (size_t i = 0; i < obj.list().size(); ++i) {
      if (!Value::Equal(obj.list()[i], x)) continue;
      if (name == "index") return Value::Int(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") return InvalidArgumentError(x.Repr() + " is not in list");
    return Value::Int(n);
  }
  if (name == "copy") {
    ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(name, call, {}));
    return Value::List(obj.list());
  }
  return InvalidArgumentError("access to attribute '" + std::string(name) +
                              "' of 'list' object is unsafe.");
}

Value BoundMethod(const Value& obj, std::string_view name) {
  std::string method(name);
  return Value::Function(obj.TypeName() + "." + method,
                         [obj, method](const CallArgs& call) -> StatusOr<Value> {
                           if (obj.is_string()) return CallStrMethod(obj.str(), method, call);
                           if (obj.is_dict()) return CallDictMethod(obj, method, call);
                           return CallListMethod(obj, method, call);
                         });
}

Value Missing(const Value& obj, const std::string& what) {
  return Value::Undefined("'" + obj.TypeName() + " object' has no " + what);
}

}  // namespace

StatusOr<Value> GetAttr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) return InvalidArgumentError(obj.UndefinedMessage());
  if (obj.is_namespace()) {
    if (const Value* v = obj.map().Find(name)) return *v;
    return Missing(obj, "attribute '" + std::string(name) + "'");
  }
  if (HasMethod(obj, name)) return BoundMethod(obj, name);
  if (obj.is_dict()) {
    if (const Value* v = obj.map().Find(name)) return *v;
  }
  return Missing(obj, "attribute '" + std::string(name) + "'");
}

StatusOr<Value> GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return InvalidArgumentError(obj.UndefinedMessage());
  if ((obj.is_list() || obj.is_string()) && key.is_integral()) {
    int64_t i = key.int_value();
    if (obj.is_list()) {
      const int64_t n = static_cast<int64_t>(obj.list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.list()[i];
    } else {
      const std::u32string text = DecodeUtf8(obj.str());
      const int64_t n = static_cast<int64_t>(text.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value::String(EncodeUtf8(text.substr(i, 1)));
    }
    return Missing(obj, "element " + key.Repr());
  }
  if (obj.is_dict() && key.is_string()) {
    if (const Value* v = obj.map().Find(key.str())) return *v;
  }
  if (key.is_string()) return GetAttr(obj, key.str());
  return Missing(obj, "element " + key.Repr());
}

StatusOr<Value> GetSlice(const Value& obj, const Value& start, const Value& stop,
                         const Value& step) {
  if (obj.is_undefined()) return InvalidArgumentError(obj.UndefinedMessage());
  for (const Value* v : {&start, &stop, &step}) {
    if (!v->is_none() && !v->is_integral()) {
      return InvalidArgumentError(
          "slice indices must be integers or None or have an __index__ method");
    }
  }
  if (!obj.is_list() && !obj.is_string()) {
    return InvalidArgumentError("'" + obj.TypeName() + "' object is not subscriptable");
  }
  const int64_t st = step.is_none() ? 1 : step.int_value();
  if (st == 0) return InvalidArgumentError("slice step cannot be zero");
  std::u32string text;
  if (obj.is_string()) text = DecodeUtf8(obj.str());
  const int64_t n =
      obj.is_string() ? static_cast<int64_t>(text.size()) : static_cast<int64_t>(obj.list().size());
  auto adjust = [&](const Value& v, int64_t fallback) {
    if (v.is_none()) return fallback;
    int64_t x = v.int_value();
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t b = adjust(start, st < 0 ? n - 1 : 0);
  const int64_t e = adjust(stop, st < 0 ? -1 : n);
  std::u32string out_text;
  ValueList out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    if (obj.is_string()) {
      out_text.push_back(text[i]);
    } else {
      out.push_back(obj.list()[i]);
    }
  }
  if (obj.is_string()) return Value::String(EncodeUtf8(out_text));
  return obj.is_tuple() ? Value::Tuple(std::move(out)) : Value::List(std::move(out));
}

StatusOr<ValueList> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return ValueList();
    case Value::Kind::kList:
      return v.list();
    case Value::Kind::kString: {
      const std::u32string text = DecodeUtf8(v.str());
      if (text.size() > kMaxStringItems) {
        return ResourceExhaustedError("iterating a string of more than 2^21 characters");
      }
      ValueList out;
      for (char32_t c : text) out.push_back(Value::String(EncodeUtf8({&c, 1})));
      return out;
    }
    case Value::Kind::kMap:
      if (v.is_dict()) {
        ValueList out;
        for (const auto& item : v.map().items()) out.push_back(Value::String(item.first));
        return out;
      }
      break;
    default:
      break;
  }
  return InvalidArgumentError("'" + v.TypeName() + "' object is not iterable");
}

StatusOr<bool> Contains(const Value& container, const Value& needle) {
  if (container.is_string()) {
    if (!needle.is_string()) {
      return InvalidArgumentError("'in <string>' requires string as left operand, not " +
                                  needle.TypeName());
    }
    return container.str().find(needle.str()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& v : container.list()) {
      if (Value::Equal(v, needle)) return true;
    }
    return false;
  }
  if (container.is_dict()) {
    if (needle.is_list() && !needle.is_tuple())
      return InvalidArgumentError("unhashable type: 'list'");
    if (needle.is_dict()) return InvalidArgumentError("unhashable type: 'dict'");
    return needle.is_string() && container.map().Find(needle.str()) != nullptr;
  }
  if (container.is_undefined()) return false;
  return InvalidArgumentError("argument of type '" + container.TypeName() + "' is not iterable");
}

}  // namespace forge::jinja
