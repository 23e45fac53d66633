// Value semantics (Python's) and json.dumps: see value.h.
#include "jinja/value.h"

#include <algorithm>
#include <cmath>

#include "jinja/text.h"

namespace forge::jinja {
namespace {

constexpr int kMaxDepth = 128;                 // containers nest at most this deep in repr/==/json
constexpr size_t kMaxText = size_t{64} << 20;  // repr and json stop growing past 64 MiB
constexpr int64_t kEqualBudget = 10'000'000;   // == visits at most this many values

// Python's reprlib guard: a container already being printed prints as {...} or [...] (only a
// namespace can hold itself), and printing stops at kMaxText.
struct ReprState {
  std::vector<const void*> open;
};

void AppendRepr(const Value& v, int depth, ReprState* state, std::string* out);

void AppendSequenceRepr(const Value& v, int depth, ReprState* state, std::string* out) {
  const bool tuple = v.is_tuple();
  out->push_back(tuple ? '(' : '[');
  const ValueList& items = v.list();
  for (size_t i = 0; i < items.size() && out->size() < kMaxText; ++i) {
    if (i) out->append(", ");
    AppendRepr(items[i], depth + 1, state, out);
  }
  if (tuple && items.size() == 1) out->push_back(',');
  out->push_back(tuple ? ')' : ']');
}

void AppendMapRepr(const ValueMap& map, int depth, ReprState* state, std::string* out) {
  out->push_back('{');
  bool first = true;
  for (const auto& [key, value] : map.items()) {
    if (out->size() >= kMaxText) break;
    if (!first) out->append(", ");
    first = false;
    out->append(PyRepr(key)).append(": ");
    AppendRepr(value, depth + 1, state, out);
  }
  out->push_back('}');
}

void AppendRepr(const Value& v, int depth, ReprState* state, std::string* out) {
  if (depth > kMaxDepth || out->size() >= kMaxText) {
    out->append("...");
    return;
  }
  switch (v.kind()) {
    case Value::Kind::kString:
      out->append(PyRepr(v.str()));
      return;
    case Value::Kind::kList:
    case Value::Kind::kMap: {
      const void* id = v.identity();
      if (std::find(state->open.begin(), state->open.end(), id) != state->open.end()) {
        out->append(v.is_list() ? "[...]" : "{...}");
        return;
      }
      state->open.push_back(id);
      if (v.is_list()) {
        AppendSequenceRepr(v, depth, state, out);
      } else {
        if (v.is_namespace()) out->append("<Namespace ");
        AppendMapRepr(v.map(), depth, state, out);
        if (v.is_namespace()) out->push_back('>');
      }
      state->open.pop_back();
      return;
    }
    case Value::Kind::kUndefined:
      out->append("Undefined");
      return;
    default:
      out->append(v.Str());
      return;
  }
}

bool EqualAt(const Value& a, const Value& b, int depth, int64_t* budget) {
  if (depth > kMaxDepth || --*budget < 0) return false;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.AsDouble() == b.AsDouble();
    return a.int_value() == b.int_value();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.list().size() != b.list().size()) return false;
      if (a.identity() == b.identity()) return true;
      for (size_t i = 0; i < a.list().size(); ++i) {
        if (!EqualAt(a.list()[i], b.list()[i], depth + 1, budget)) return false;
      }
      return true;
    }
    case Value::Kind::kMap: {
      if (a.is_namespace() || b.is_namespace()) return a.identity() == b.identity();
      if (a.map().size() != b.map().size()) return false;
      if (a.identity() == b.identity()) return true;
      for (const auto& [key, value] : a.map().items()) {
        const Value* other = b.map().Find(key);
        if (other == nullptr || !EqualAt(value, *other, depth + 1, budget)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

Status AppendJsonAt(const Value& v, const JsonOptions& o, int depth, std::string* out) {
  if (depth > kMaxDepth) return InvalidArgumentError("tojson: nesting deeper than 128");
  if (out->size() >= kMaxText) return ResourceExhaustedError("tojson: output beyond 64 MiB");
  auto newline = [&](int level) {
    if (!o.pretty) return;
    out->push_back('\n');
    for (int i = 0; i < level; ++i) out->append(o.indent);
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      out->append("null");
      return Status::Ok();
    case Value::Kind::kBool:
      out->append(v.bool_value() ? "true" : "false");
      return Status::Ok();
    case Value::Kind::kInt:
      out->append(std::to_string(v.int_value()));
      return Status::Ok();
    case Value::Kind::kFloat: {
      const double d = v.float_value();
      if (std::isnan(d)) {
        out->append("NaN");
      } else if (std::isinf(d)) {
        out->append(d < 0 ? "-Infinity" : "Infinity");
      } else {
        out->append(PyFloatRepr(d));
      }
      return Status::Ok();
    }
    case Value::Kind::kString:
      AppendJsonString(v.str(), o.ensure_ascii, out);
      return Status::Ok();
    case Value::Kind::kList: {
      if (v.list().empty()) {
        out->append("[]");
        return Status::Ok();
      }
      out->push_back('[');
      for (size_t i = 0; i < v.list().size(); ++i) {
        if (i) out->append(o.item_separator);
        newline(depth + 1);
        RETURN_IF_ERROR(AppendJsonAt(v.list()[i], o, depth + 1, out));
      }
      newline(depth);
      out->push_back(']');
      return Status::Ok();
    }
    case Value::Kind::kMap: {
      if (v.is_namespace()) {
        return InvalidArgumentError("tojson: Object of type Namespace is not JSON serializable");
      }
      if (v.map().size() == 0) {
        out->append("{}");
        return Status::Ok();
      }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& item : v.map().items()) items.push_back(&item);
      if (o.sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      out->push_back('{');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out->append(o.item_separator);
        newline(depth + 1);
        AppendJsonString(items[i]->first, o.ensure_ascii, out);
        out->append(o.key_separator);
        RETURN_IF_ERROR(AppendJsonAt(items[i]->second, o, depth + 1, out));
      }
      newline(depth);
      out->push_back('}');
      return Status::Ok();
    }
    case Value::Kind::kUndefined:
      return InvalidArgumentError("tojson: Object of type Undefined is not JSON serializable");
    case Value::Kind::kFunction:
      return InvalidArgumentError("tojson: Object of type function is not JSON serializable");
  }
  return InternalError("tojson: unknown value kind");
}

}  // namespace

const Value* ValueMap::Find(std::string_view key) const {
  for (const auto& item : items_) {
    if (item.first == key) return &item.second;
  }
  return nullptr;
}

void ValueMap::Set(std::string key, Value value) {
  for (auto& item : items_) {
    if (item.first == key) {
      item.second = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

void ValueMap::Append(std::string key, Value value) {
  items_.emplace_back(std::move(key), std::move(value));
}

Value Value::Undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}

Value Value::Float(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = d;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::move(s);
  return v;
}

Value Value::List(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::Tuple(ValueList items) {
  Value v = List(std::move(items));
  v.flag_ = true;
  return v;
}

Value Value::Map(ValueMap map) {
  Value v;
  v.kind_ = Kind::kMap;
  v.map_ = std::make_shared<ValueMap>(std::move(map));
  return v;
}

Value Value::Namespace(ValueMap map) {
  Value v = Map(std::move(map));
  v.flag_ = true;
  return v;
}

Value Value::Function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.s_ = std::move(name);
  v.fn_ = std::make_shared<const NativeFunction>(std::move(fn));
  return v;
}

ValueMap& Value::mutable_namespace() const {
  CHECK(is_namespace());
  return *map_;
}

const void* Value::identity() const {
  if (list_) return list_.get();
  if (map_) return map_.get();
  return fn_.get();
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0;
    case Kind::kString:
      return !s_.empty();
    case Kind::kList:
      return !list_->empty();
    case Kind::kMap:
      return is_namespace() || map_->size() != 0;
    case Kind::kFunction:
      return true;
  }
  return false;
}

std::string Value::Str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(i_);
    case Kind::kFloat:
      return PyFloatRepr(f_);
    case Kind::kString:
      return s_;
    case Kind::kFunction:
      return "<function " + s_ + ">";
    default:
      return Repr();
  }
}

std::string Value::Repr() const {
  std::string out;
  ReprState state;
  AppendRepr(*this, 0, &state, &out);
  return out;
}

std::string Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return flag_ ? "tuple" : "list";
    case Kind::kMap:
      return flag_ ? "Namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "object";
}

std::string Value::UndefinedMessage() const {
  return s_.empty() ? std::string("value is undefined") : s_;
}

bool Value::Equal(const Value& a, const Value& b) {
  int64_t budget = kEqualBudget;
  return EqualAt(a, b, 0, &budget);
}

StatusOr<bool> Value::Less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.AsDouble() < b.AsDouble();
    return a.int_value() < b.int_value();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const ValueList& x = a.list();
    const ValueList& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equal(x[i], y[i])) continue;
      return Less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined() || b.is_undefined()) {
    return InvalidArgumentError((a.is_undefined() ? a : b).UndefinedMessage());
  }
  return InvalidArgumentError("'<' not supported between instances of '" + a.TypeName() +
                              "' and '" + b.TypeName() + "'");
}

Status AppendJson(const Value& value, const JsonOptions& options, std::string* out) {
  return AppendJsonAt(value, options, 0, out);
}

}  // namespace forge::jinja
