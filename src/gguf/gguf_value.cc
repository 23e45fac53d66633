// GgufValue constructors, equality and printing.
#include "gguf/gguf_value.h"

#include <cstdio>

namespace forge {

namespace {

// Each type's name and bytes on disk (0: string, array), indexed by the type id.
struct TypeInfo {
  std::string_view name;
  size_t size;
};
constexpr TypeInfo kTypes[kGgufTypeCount] = {
    {"u8", 1},   {"i8", 1},     {"u16", 2},   {"i16", 2}, {"u32", 4}, {"i32", 4}, {"f32", 4},
    {"bool", 1}, {"string", 0}, {"array", 0}, {"u64", 8}, {"i64", 8}, {"f64", 8},
};

// An array of elem_type holding make(item) for each item.
template <typename T>
GgufValue ArrayOf(GgufType elem_type, const std::vector<T>& items, GgufValue (*make)(T)) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (const T& item : items) v.push_back(make(item));
  return GgufValue::Array(elem_type, std::move(v));
}

}  // namespace

std::string_view GgufTypeName(GgufType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kGgufTypeCount ? kTypes[id].name : "unknown";
}

size_t GgufScalarSize(GgufType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kGgufTypeCount ? kTypes[id].size : 0;
}

GgufValue GgufValue::String(std::string v) {
  GgufValue g;
  g.type_ = GgufType::kString;
  g.s_ = std::move(v);
  return g;
}
GgufValue GgufValue::Array(GgufType elem_type, std::vector<GgufValue> items) {
  GgufValue g;
  g.type_ = GgufType::kArray;
  g.elem_type_ = elem_type;
  g.items_ = std::move(items);
  return g;
}
GgufValue GgufValue::StringArray(const std::vector<std::string>& items) {
  return ArrayOf(GgufType::kString, items, String);
}
GgufValue GgufValue::F32Array(const std::vector<float>& items) {
  return ArrayOf(GgufType::kF32, items, F32);
}
GgufValue GgufValue::I32Array(const std::vector<int32_t>& items) {
  return ArrayOf(GgufType::kI32, items, I32);
}

bool GgufValue::operator==(const GgufValue& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case GgufType::kF32:
    case GgufType::kF64:
      return f_ == o.f_;
    case GgufType::kString:
      return s_ == o.s_;
    case GgufType::kArray:
      return elem_type_ == o.elem_type_ && items_ == o.items_;
    default:
      return u_ == o.u_;
  }
}

std::string GgufValue::ToString(size_t max_items) const {
  char buf[64];
  switch (type_) {
    case GgufType::kU8:
    case GgufType::kU16:
    case GgufType::kU32:
    case GgufType::kU64:
      return std::to_string(u_);
    case GgufType::kI8:
    case GgufType::kI16:
    case GgufType::kI32:
    case GgufType::kI64:
      return std::to_string(i64());
    case GgufType::kF32:
    case GgufType::kF64:
      std::snprintf(buf, sizeof(buf), "%g", f_);
      return buf;
    case GgufType::kBool:
      return u_ ? "true" : "false";
    case GgufType::kString: {
      std::string out = "\"";
      for (char c : s_.substr(0, 120)) {
        if (c == '\n')
          out += "\\n";
        else if (c == '"')
          out += "\\\"";
        else
          out += c;
      }
      if (s_.size() > 120) out += "...";
      return out + "\"";
    }
    case GgufType::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < items_.size() && i < max_items; ++i) {
        if (i) out += ", ";
        out += items_[i].ToString(max_items);
      }
      if (items_.size() > max_items) out += ", ...";
      out +=
          "] (" + std::to_string(items_.size()) + " " + std::string(GgufTypeName(elem_type_)) + ")";
      return out;
    }
  }
  return "?";
}

}  // namespace forge
