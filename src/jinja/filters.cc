// Jinja's builtin filters on strings and numbers (jinja2/filters.py), HF's tojson, and the
// table of every filter (the sequence filters live in sequence_filters.cc).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/sequence_filters.h"
#include "jinja/text.h"

namespace forge::jinja {
namespace {

using FilterFn = StatusOr<Value> (*)(const Value&, const CallArgs&);

StatusOr<int64_t> Length(const Value& v) {
  if (v.is_string()) return static_cast<int64_t>(CodePointCount(v.str()));
  if (v.is_list()) return static_cast<int64_t>(v.list().size());
  if (v.is_dict()) return static_cast<int64_t>(v.map().size());
  if (v.is_undefined()) return 0;
  return InvalidArgumentError("object of type '" + v.TypeName() + "' has no len()");
}

StatusOr<Value> FLength(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("length", call, {}));
  ASSIGN_OR_RETURN(int64_t n, Length(v));
  return Value::Int(n);
}

StatusOr<Value> FDefault(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("default", call, {"default_value", "boolean"}));
  if (v.is_undefined() || (b.get(1, Value::Bool(false)).Truthy() && !v.Truthy())) {
    return b.get(0, Value::String(""));
  }
  return v;
}

StatusOr<Value> FTrim(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("trim", call, {"chars"}));
  const Value chars = b.get(0);
  if (!chars.is_none() && !chars.is_string()) {
    return InvalidArgumentError("strip arg must be None or str");
  }
  return Value::String(
      PyStrip(v.Str(), chars.is_none() ? std::nullopt : std::optional<std::string>(chars.str()),
              true, true));
}

StatusOr<Value> FCase(const Value& v, const CallArgs& call, std::string (*fn)(std::string_view)) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("filter", call, {}));
  return Value::String(fn(v.Str()));
}

// Jinja's title: a capital after each run of -, whitespace, (, {, [ or <.
std::string JinjaTitle(std::string_view s) {
  const std::u32string text = DecodeUtf8(s);
  auto sep = [](char32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || IsPySpace(c);
  };
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    const bool is_sep = sep(text[i]);
    while (j < text.size() && sep(text[j]) == is_sep) ++j;
    const std::string piece = EncodeUtf8(std::u32string_view(text).substr(i, j - i));
    const std::string first = EncodeUtf8(std::u32string_view(text).substr(i, 1));
    out += PyUpper(first) + PyLower(std::string_view(piece).substr(first.size()));
    i = j;
  }
  return out;
}

StatusOr<Value> FToJson(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(
      BoundArgs b,
      BoundArgs::Bind("tojson", call, {"ensure_ascii", "indent", "separators", "sort_keys"}));
  JsonOptions o;
  o.ensure_ascii = b.get(0, Value::Bool(false)).Truthy();
  const Value indent = b.get(1);
  if (!indent.is_none()) {
    o.pretty = true;
    o.item_separator = ",";
    if (indent.is_string()) {
      if (indent.str().size() > 1024) return UnimplementedError("tojson: indent beyond 1024 bytes");
      o.indent = indent.str();
    } else if (indent.is_integral()) {
      o.indent = std::string(std::max<int64_t>(0, std::min<int64_t>(indent.int_value(), 64)), ' ');
    } else {
      return InvalidArgumentError("tojson: indent must be an int or a str");
    }
  }
  const Value seps = b.get(2);
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.list().size() != 2 || !seps.list()[0].is_string() ||
        !seps.list()[1].is_string()) {
      return InvalidArgumentError("tojson: separators must be a pair of strings");
    }
    o.item_separator = seps.list()[0].str();
    o.key_separator = seps.list()[1].str();
  }
  o.sort_keys = b.get(3, Value::Bool(false)).Truthy();
  std::string out;
  RETURN_IF_ERROR(AppendJson(v, o, &out));
  return Value::String(std::move(out));
}

// Python int(str): optional sign, digits with single underscores, surrounding whitespace.
bool ParsePyInt(std::string_view s, int base, int64_t* out) {
  const std::string t = PyStrip(s, std::nullopt, true, true);
  std::string digits;
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) digits.push_back(t[i++]);
  if (base == 16 && t.size() > i + 1 && t[i] == '0' && (t[i + 1] | 0x20) == 'x') i += 2;
  bool prev_digit = false;
  for (; i < t.size(); ++i) {
    if (t[i] == '_' && prev_digit && i + 1 < t.size() && t[i + 1] != '_') {
      prev_digit = false;
      continue;
    }
    digits.push_back(t[i]);
    prev_digit = true;
  }
  if (digits.empty() || digits == "+" || digits == "-") return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (*end != '\0' || errno == ERANGE || !(isalnum(static_cast<unsigned char>(digits.back())))) {
    return false;
  }
  *out = v;
  return true;
}

bool ParsePyFloat(std::string_view s, double* out) {
  std::string t = PyStrip(s, std::nullopt, true, true);
  t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
  if (t.empty() || (t.size() > 1 && (t[1] == 'x' || t[1] == 'X'))) return false;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

StatusOr<Value> FInt(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("int", call, {"default", "base"}));
  const Value fallback = b.get(0, Value::Int(0));
  const int base = static_cast<int>(b.get(1, Value::Int(10)).int_value());
  if (v.is_undefined()) return InvalidArgumentError(v.UndefinedMessage());  // int(Undefined)
  if (v.is_integral()) return Value::Int(v.int_value());
  if (v.is_float()) {
    if (!std::isfinite(v.float_value())) return InvalidArgumentError("cannot convert float to int");
    if (std::fabs(v.float_value()) >= 9.2e18) return UnimplementedError("integer overflow");
    return Value::Int(static_cast<int64_t>(v.float_value()));
  }
  if (v.is_string()) {
    int64_t i;
    if (base >= 2 && base <= 36 && ParsePyInt(v.str(), base, &i)) return Value::Int(i);
    double d;
    if (ParsePyFloat(v.str(), &d) && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value::Int(static_cast<int64_t>(d));
    }
  }
  return fallback;
}

StatusOr<Value> FFloat(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("float", call, {"default"}));
  if (v.is_undefined()) return InvalidArgumentError(v.UndefinedMessage());  // float(Undefined)
  if (v.is_number()) return Value::Float(v.AsDouble());
  double d;
  if (v.is_string() && ParsePyFloat(v.str(), &d)) return Value::Float(d);
  return b.get(0, Value::Float(0.0));
}

StatusOr<Value> FReplace(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("replace", call, {"old", "new", "count"}));
  const Value count = b.get(2);
  if (!count.is_none() && !count.is_integral()) {
    return InvalidArgumentError("replace: count must be an integer");
  }
  const std::string text = v.Str(), old_text = b.get(0, Value::Undefined()).Str(),
                    new_text = b.get(1, Value::Undefined()).Str();
  const int64_t n = count.is_none() ? -1 : count.int_value();
  if (PyReplaceSize(text, old_text, new_text, n) > kMaxStringBytes) {
    return ResourceExhaustedError("replace beyond 64 MiB");
  }
  return Value::String(PyReplace(text, old_text, new_text, n));
}

StatusOr<Value> FAbs(const Value& v, const CallArgs&) {
  if (v.is_float()) return Value::Float(std::fabs(v.float_value()));
  if (v.is_integral()) return UnaryOp(v.int_value() < 0 ? "-" : "+", Value::Int(v.int_value()));
  return InvalidArgumentError("bad operand type for abs(): '" + v.TypeName() + "'");
}

StatusOr<Value> FRound(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("round", call, {"precision", "method"}));
  const int64_t precision = b.get(0, Value::Int(0)).int_value();
  const std::string method = b.get(1, Value::String("common")).Str();
  if (!v.is_number()) return InvalidArgumentError("round: not a number");
  if (method == "common") {
    if (v.is_integral() && precision >= 0) return Value::Int(v.int_value());
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f",
                  static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), v.AsDouble());
    return Value::Float(std::strtod(buf, nullptr));
  }
  if (method != "ceil" && method != "floor") {
    return InvalidArgumentError("method must be common, ceil or floor");
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.AsDouble() * scale;
  return Value::Float((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

StatusOr<Value> FIndent(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("indent", call, {"width", "first", "blank"}));
  const Value width = b.get(0, Value::Int(4));
  const std::string pad = width.is_string()
                              ? width.str()
                              : std::string(std::clamp<int64_t>(width.int_value(), 0, 1024), ' ');
  if (!v.is_string()) {  // Jinja appends "\n" to the value itself
    if (v.is_undefined()) return InvalidArgumentError(v.UndefinedMessage());
    return InvalidArgumentError("unsupported operand type(s) for +=: '" + v.TypeName() +
                                "' and 'str'");
  }
  const std::vector<std::string> lines = PySplitLines(v.str() + "\n", kMaxStringItems);
  if (lines.size() > kMaxStringItems) return ResourceExhaustedError("indent: too many lines");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    if (i > 0 && (b.get(2, Value::Bool(false)).Truthy() || !lines[i].empty())) out += pad;
    out += lines[i];
    if (out.size() > kMaxStringBytes) return ResourceExhaustedError("indent beyond 64 MiB");
  }
  if (b.get(1, Value::Bool(false)).Truthy()) out = pad + out;
  return Value::String(std::move(out));
}

StatusOr<Value> FAttr(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("attr", call, {"name"}, 1));
  if (!b.get(0).is_string()) return InvalidArgumentError("attribute name must be string");
  const std::string name = b.get(0).str();
  if (v.is_dict() && v.map().Find(name) != nullptr) {  // attr() does not look at dict items
    return Value::Undefined("'dict object' has no attribute '" + name + "'");
  }
  return GetAttr(v, name);
}

StatusOr<Value> FEscape(const Value& v, const CallArgs&) {
  std::string out;
  for (char c : v.Str()) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return Value::String(std::move(out));
}

const std::vector<std::pair<std::string_view, FilterFn>>& Filters() {
  static const auto* kFilters = new std::vector<std::pair<std::string_view, FilterFn>>{
      {"length", FLength},
      {"count", FLength},
      {"default", FDefault},
      {"d", FDefault},
      {"trim", FTrim},
      {"tojson", FToJson},
      {"join", internal::FJoin},
      {"upper", [](const Value& v, const CallArgs& c) { return FCase(v, c, PyUpper); }},
      {"lower", [](const Value& v, const CallArgs& c) { return FCase(v, c, PyLower); }},
      {"capitalize", [](const Value& v, const CallArgs& c) { return FCase(v, c, PyCapitalize); }},
      {"title", [](const Value& v, const CallArgs& c) { return FCase(v, c, JinjaTitle); }},
      {"string",
       [](const Value& v, const CallArgs&) { return StatusOr<Value>(Value::String(v.Str())); }},
      {"safe",
       [](const Value& v, const CallArgs&) { return StatusOr<Value>(Value::String(v.Str())); }},
      {"first", [](const Value& v, const CallArgs& c) { return internal::FFirstLast(v, c, true); }},
      {"last", [](const Value& v, const CallArgs& c) { return internal::FFirstLast(v, c, false); }},
      {"int", FInt},
      {"float", FFloat},
      {"replace", FReplace},
      {"list", internal::FList},
      {"items", internal::FItems},
      {"map", internal::FMap},
      {"select",
       [](const Value& v, const CallArgs& c) { return internal::FSelect(v, c, false, true); }},
      {"reject",
       [](const Value& v, const CallArgs& c) { return internal::FSelect(v, c, false, false); }},
      {"selectattr",
       [](const Value& v, const CallArgs& c) { return internal::FSelect(v, c, true, true); }},
      {"rejectattr",
       [](const Value& v, const CallArgs& c) { return internal::FSelect(v, c, true, false); }},
      {"abs", FAbs},
      {"round", FRound},
      {"sum", internal::FSum},
      {"sort", [](const Value& v, const CallArgs& c) { return internal::FOrdered(v, c, "sort"); }},
      {"unique",
       [](const Value& v, const CallArgs& c) { return internal::FOrdered(v, c, "unique"); }},
      {"min", [](const Value& v, const CallArgs& c) { return internal::FOrdered(v, c, "min"); }},
      {"max", [](const Value& v, const CallArgs& c) { return internal::FOrdered(v, c, "max"); }},
      {"dictsort", internal::FDictSort},
      {"reverse", internal::FReverse},
      {"indent", FIndent},
      {"attr", FAttr},
      {"escape", FEscape},
      {"e", FEscape},
  };
  return *kFilters;
}

}  // namespace

BuiltinSupport FilterSupport(std::string_view name) {
  for (const auto& [n, fn] : Filters()) {
    if (n == name) return BuiltinSupport::kSupported;
  }
  static constexpr std::string_view kJinjaOnly[] = {
      "batch",  "center",    "filesizeformat", "forceescape", "format",   "groupby",
      "pprint", "random",    "slice",          "striptags",   "truncate", "urlencode",
      "urlize", "wordcount", "wordwrap",       "xmlattr"};
  for (std::string_view n : kJinjaOnly) {
    if (n == name) return BuiltinSupport::kUnsupported;
  }
  return BuiltinSupport::kUnknown;
}

StatusOr<Value> ApplyFilter(std::string_view name, const Value& input, const CallArgs& args) {
  for (const auto& [n, fn] : Filters()) {
    if (n == name) return fn(input, args);
  }
  if (FilterSupport(name) == BuiltinSupport::kUnsupported) {
    return UnimplementedError("unsupported filter '" + std::string(name) + "'");
  }
  return InvalidArgumentError("No filter named '" + std::string(name) + "'.");
}

}  // namespace forge::jinja
