// GgufFile's lookups: metadata by key, tensors by name, and the typed metadata accessors, each
// naming the key, the expected and the found type.
#include <limits>

#include "gguf/gguf_file.h"

namespace forge {
namespace {

Status Missing(const std::string& key) {
  return NotFoundError("metadata key '" + key + "' is missing");
}

Status WrongType(const std::string& key, const GgufValue& v, const char* expected) {
  return InvalidArgumentError("metadata key '" + key + "' has type " +
                              std::string(GgufTypeName(v.type())) + ", expected " + expected);
}

bool IsSigned(GgufType t) {
  return t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
}

template <typename T>
StatusOr<T> GetInteger(const GgufFile& f, const std::string& key, const char* name) {
  const GgufValue* v = f.Find(key);
  if (v == nullptr) return Missing(key);
  if (!GgufIsInteger(v->type())) return WrongType(key, *v, name);
  if (IsSigned(v->type())) {
    int64_t x = v->i64();
    if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (x > 0 &&
         static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      return OutOfRangeError("metadata key '" + key + "' = " + std::to_string(x) +
                             " does not fit in " + name);
    }
    return static_cast<T>(x);
  }
  uint64_t x = v->u64();
  if (x > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
    return OutOfRangeError("metadata key '" + key + "' = " + std::to_string(x) +
                           " does not fit in " + name);
  }
  return static_cast<T>(x);
}

}  // namespace

std::string GgufTensorInfo::ShapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

int64_t GgufFile::TotalTensorBytes() const {
  int64_t total = 0;
  for (const auto& t : tensors_) total += t.n_bytes;
  return total;
}

StatusOr<uint64_t> GgufFile::GetU64(const std::string& key) const {
  return GetInteger<uint64_t>(*this, key, "u64");
}
StatusOr<int64_t> GgufFile::GetI64(const std::string& key) const {
  return GetInteger<int64_t>(*this, key, "i64");
}
StatusOr<uint32_t> GgufFile::GetU32(const std::string& key) const {
  return GetInteger<uint32_t>(*this, key, "u32");
}
StatusOr<int32_t> GgufFile::GetI32(const std::string& key) const {
  return GetInteger<int32_t>(*this, key, "i32");
}

StatusOr<float> GgufFile::GetF32(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (v->type() != GgufType::kF32 && v->type() != GgufType::kF64) return WrongType(key, *v, "f32");
  return static_cast<float>(v->f64());
}

StatusOr<bool> GgufFile::GetBool(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (v->type() != GgufType::kBool) return WrongType(key, *v, "bool");
  return v->boolean();
}

StatusOr<std::string> GgufFile::GetString(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (v->type() != GgufType::kString) return WrongType(key, *v, "string");
  return v->str();
}

StatusOr<std::vector<std::string>> GgufFile::GetStringArray(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (v->type() != GgufType::kArray || v->elem_type() != GgufType::kString) {
    return WrongType(key, *v, "array of string");
  }
  std::vector<std::string> out;
  out.reserve(v->items().size());
  for (const GgufValue& item : v->items()) out.push_back(item.str());
  return out;
}

StatusOr<std::vector<float>> GgufFile::GetF32Array(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (v->type() != GgufType::kArray ||
      (v->elem_type() != GgufType::kF32 && v->elem_type() != GgufType::kF64)) {
    return WrongType(key, *v, "array of f32");
  }
  std::vector<float> out;
  out.reserve(v->items().size());
  for (const GgufValue& item : v->items()) out.push_back(static_cast<float>(item.f64()));
  return out;
}

StatusOr<std::vector<int32_t>> GgufFile::GetI32Array(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return Missing(key);
  if (v->type() != GgufType::kArray || !GgufIsInteger(v->elem_type())) {
    return WrongType(key, *v, "array of integers");
  }
  std::vector<int32_t> out;
  out.reserve(v->items().size());
  for (const GgufValue& item : v->items()) {
    int64_t x = IsSigned(item.type()) ? item.i64() : static_cast<int64_t>(item.u64());
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
      return OutOfRangeError("metadata key '" + key + "' holds " + std::to_string(x) +
                             ", which does not fit in i32");
    }
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

StatusOr<uint32_t> GgufFile::GetU32Or(const std::string& key, uint32_t def) const {
  if (!Has(key)) return def;
  return GetU32(key);
}
StatusOr<float> GgufFile::GetF32Or(const std::string& key, float def) const {
  if (!Has(key)) return def;
  return GetF32(key);
}
StatusOr<bool> GgufFile::GetBoolOr(const std::string& key, bool def) const {
  if (!Has(key)) return def;
  return GetBool(key);
}
StatusOr<std::string> GgufFile::GetStringOr(const std::string& key, const std::string& def) const {
  if (!Has(key)) return def;
  return GetString(key);
}

}  // namespace forge
