// Jinja's filters over sequences and mappings: join, first/last, list, items, map, select and
// reject (attr), sum, sort, unique, min/max, dictsort and reverse.
#include "jinja/sequence_filters.h"

#include <algorithm>
#include <cstdlib>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/text.h"

namespace forge::jinja::internal {
namespace {

// environment.getitem over each part of "a.b.0", as Jinja's make_attrgetter does.
StatusOr<Value> GetAttribute(const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return GetItem(item, attribute);
  Value v = item;
  for (const std::string& part : PySplit(attribute.str(), std::string("."), 64, false)) {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    ASSIGN_OR_RETURN(
        v, GetItem(v, digits ? Value::Int(std::atoll(part.c_str())) : Value::String(part)));
  }
  return v;
}

// Sorting key of sort/unique/min/max/dictsort: strings lower-cased unless case_sensitive.
Value SortKey(const Value& v, bool case_sensitive) {
  return (!case_sensitive && v.is_string()) ? Value::String(PyLower(v.str())) : v;
}

// A Python-style stable sort whose comparison can fail.
StatusOr<ValueList> SortedBy(ValueList items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Status error;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (!error.ok()) return false;
    StatusOr<bool> less = reverse ? Value::Less(keys[b], keys[a]) : Value::Less(keys[a], keys[b]);
    if (!less.ok()) {
      error = less.status();
      return false;
    }
    return *less;
  });
  RETURN_IF_ERROR(error);
  ValueList out;
  for (size_t i : order) out.push_back(items[i]);
  return out;
}

StatusOr<ValueList> Keys(const ValueList& items, const Value& attribute, bool case_sensitive) {
  std::vector<Value> keys;
  for (const Value& item : items) {
    Value k = item;
    if (!attribute.is_none()) {
      ASSIGN_OR_RETURN(k, GetAttribute(item, attribute));
    }
    keys.push_back(SortKey(k, case_sensitive));
  }
  return keys;
}

}  // namespace

StatusOr<Value> FJoin(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("join", call, {"d", "attribute"}));
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  const std::string sep = b.get(0, Value::String("")).Str();
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (b.has(1)) {
      ASSIGN_OR_RETURN(item, GetAttribute(item, b.get(1)));
    }
    if (i) out += sep;
    out += item.Str();
    if (out.size() > kMaxStringBytes) return ResourceExhaustedError("join beyond 64 MiB");
  }
  return Value::String(std::move(out));
}

StatusOr<Value> FFirstLast(const Value& v, const CallArgs& call, bool first) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(first ? "first" : "last", call, {}));
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  if (items.empty()) {
    return Value::Undefined(first ? "No first item, sequence was empty."
                                  : "No last item, sequence was empty.");
  }
  return first ? items.front() : items.back();
}

StatusOr<Value> FList(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("list", call, {}));
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  return Value::List(std::move(items));
}

StatusOr<Value> FItems(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("items", call, {}));
  if (v.is_undefined()) return Value::List({});
  if (!v.is_dict()) return InvalidArgumentError("Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [k, val] : v.map().items()) out.push_back(Value::Tuple({Value::String(k), val}));
  return Value::List(std::move(out));
}

StatusOr<Value> FMap(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  ValueList out;
  if (call.args.empty()) {
    Value attribute, fallback;
    for (const auto& [k, val] : call.kwargs) {
      if (k == "attribute") {
        attribute = val;
      } else if (k == "default") {
        fallback = val;
      } else {
        return InvalidArgumentError("map: unexpected keyword argument '" + k + "'");
      }
    }
    if (attribute.is_undefined()) return InvalidArgumentError("map: no filter or attribute given");
    for (const Value& item : items) {
      ASSIGN_OR_RETURN(Value x, GetAttribute(item, attribute));
      out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
    }
    return Value::List(std::move(out));
  }
  if (!call.args[0].is_string()) return InvalidArgumentError("map: the filter name must be a str");
  const std::string name = call.args[0].str();
  if (FilterSupport(name) != BuiltinSupport::kSupported) {
    return InvalidArgumentError("map: no filter named '" + name + "'");
  }
  CallArgs rest{{call.args.begin() + 1, call.args.end()}, call.kwargs};
  for (const Value& item : items) {
    ASSIGN_OR_RETURN(Value x, ApplyFilter(name, item, rest));
    out.push_back(std::move(x));
  }
  return Value::List(std::move(out));
}

// select / reject / selectattr / rejectattr.
StatusOr<Value> FSelect(const Value& v, const CallArgs& call, bool attr, bool keep) {
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  size_t next = 0;
  Value attribute;
  if (attr) {
    if (call.args.empty()) return InvalidArgumentError("selectattr: missing attribute");
    attribute = call.args[next++];
  }
  std::string test;
  if (next < call.args.size()) {
    if (!call.args[next].is_string())
      return InvalidArgumentError("select: test name must be a str");
    test = call.args[next++].str();
    if (TestSupport(test) != BuiltinSupport::kSupported) {
      return InvalidArgumentError("select: no test named '" + test + "'");
    }
  }
  CallArgs rest{{call.args.begin() + next, call.args.end()}, call.kwargs};
  ValueList out;
  for (const Value& item : items) {
    Value x = item;
    if (attr) {
      ASSIGN_OR_RETURN(x, GetAttribute(item, attribute));
    }
    bool pass = x.Truthy();
    if (!test.empty()) {
      ASSIGN_OR_RETURN(pass, ApplyTest(test, x, rest));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::List(std::move(out));
}

StatusOr<Value> FSum(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind("sum", call, {"attribute", "start"}));
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  Value total = b.get(1, Value::Int(0));
  for (const Value& item : items) {
    Value x = item;
    if (b.has(0)) {
      ASSIGN_OR_RETURN(x, GetAttribute(item, b.get(0)));
    }
    ASSIGN_OR_RETURN(total, BinaryOp("+", total, x));
  }
  return total;
}

// sort / unique / min / max.
StatusOr<Value> FOrdered(const Value& v, const CallArgs& call, std::string_view which) {
  const bool sort = which == "sort";
  const std::vector<std::string_view> params =
      sort ? std::vector<std::string_view>{"reverse", "case_sensitive", "attribute"}
           : std::vector<std::string_view>{"case_sensitive", "attribute"};
  ASSIGN_OR_RETURN(BoundArgs b, BoundArgs::Bind(which, call, params));
  const size_t off = sort ? 1 : 0;
  const bool case_sensitive = b.get(off, Value::Bool(false)).Truthy();
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  ASSIGN_OR_RETURN(ValueList keys, Keys(items, b.get(off + 1), case_sensitive));
  if (which == "unique") {
    ValueList out, seen;
    for (size_t i = 0; i < items.size(); ++i) {
      if (std::any_of(seen.begin(), seen.end(),
                      [&](const Value& s) { return Value::Equal(s, keys[i]); })) {
        continue;
      }
      seen.push_back(keys[i]);
      out.push_back(items[i]);
    }
    return Value::List(std::move(out));
  }
  if (sort) {
    ASSIGN_OR_RETURN(ValueList out, SortedBy(items, keys, b.get(0, Value::Bool(false)).Truthy()));
    return Value::List(std::move(out));
  }
  if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(bool less, which == "min" ? Value::Less(keys[i], keys[best])
                                               : Value::Less(keys[best], keys[i]));
    if (less) best = i;
  }
  return items[best];
}

StatusOr<Value> FDictSort(const Value& v, const CallArgs& call) {
  ASSIGN_OR_RETURN(BoundArgs b,
                   BoundArgs::Bind("dictsort", call, {"case_sensitive", "by", "reverse"}));
  if (!v.is_dict()) return InvalidArgumentError("dictsort: not a mapping");
  const bool by_value = b.get(1, Value::String("key")).Str() == "value";
  ValueList items, keys;
  for (const auto& [k, val] : v.map().items()) {
    items.push_back(Value::Tuple({Value::String(k), val}));
    keys.push_back(SortKey(by_value ? val : Value::String(k), b.get(0).Truthy()));
  }
  ASSIGN_OR_RETURN(ValueList out, SortedBy(items, keys, b.get(2, Value::Bool(false)).Truthy()));
  return Value::List(std::move(out));
}

StatusOr<Value> FReverse(const Value& v, const CallArgs& /*call*/) {
  if (v.is_string()) {
    std::u32string t = DecodeUtf8(v.str());
    std::reverse(t.begin(), t.end());
    return Value::String(EncodeUtf8(t));
  }
  ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::List(std::move(items));
}

}  // namespace forge::jinja::internal
