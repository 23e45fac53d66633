// GgufValue constructors, equality and printing.
#include "gguf/gguf_value.h"

#include <cstdio>

namespace forge {

std::string_view GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kU8:
      return "u8";
    case GgufType::kI8:
      return "i8";
    case GgufType::kU16:
      return "u16";
    case GgufType::kI16:
      return "i16";
    case GgufType::kU32:
      return "u32";
    case GgufType::kI32:
      return "i32";
    case GgufType::kF32:
      return "f32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kU64:
      return "u64";
    case GgufType::kI64:
      return "i64";
    case GgufType::kF64:
      return "f64";
  }
  return "unknown";
}

size_t GgufScalarSize(GgufType type) {
  switch (type) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

GgufValue GgufValue::F32(float v) {
  GgufValue g;
  g.type_ = GgufType::kF32;
  g.f_ = v;
  return g;
}
GgufValue GgufValue::F64(double v) {
  GgufValue g;
  g.type_ = GgufType::kF64;
  g.f_ = v;
  return g;
}
GgufValue GgufValue::Bool(bool v) {
  GgufValue g;
  g.type_ = GgufType::kBool;
  g.u_ = v ? 1 : 0;
  return g;
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
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(String(s));
  return Array(GgufType::kString, std::move(v));
}
GgufValue GgufValue::F32Array(const std::vector<float>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (float f : items) v.push_back(F32(f));
  return Array(GgufType::kF32, std::move(v));
}
GgufValue GgufValue::I32Array(const std::vector<int32_t>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (int32_t i : items) v.push_back(I32(i));
  return Array(GgufType::kI32, std::move(v));
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
