// A GGUF metadata value: one of the 13 GGUF value types, arrays (of any type, nested) included.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace forge {

// Values are the type ids stored in GGUF files.
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;

std::string_view GgufTypeName(GgufType type);
// Bytes of a fixed-size scalar type on disk; 0 for string and array.
size_t GgufScalarSize(GgufType type);
inline bool GgufIsInteger(GgufType t) {
  return t == GgufType::kU8 || t == GgufType::kI8 || t == GgufType::kU16 || t == GgufType::kI16 ||
         t == GgufType::kU32 || t == GgufType::kI32 || t == GgufType::kU64 || t == GgufType::kI64;
}

class GgufValue {
 public:
  GgufValue() = default;
  static GgufValue U8(uint8_t v) { return Unsigned(GgufType::kU8, v); }
  static GgufValue U16(uint16_t v) { return Unsigned(GgufType::kU16, v); }
  static GgufValue U32(uint32_t v) { return Unsigned(GgufType::kU32, v); }
  static GgufValue U64(uint64_t v) { return Unsigned(GgufType::kU64, v); }
  static GgufValue I8(int8_t v) { return Signed(GgufType::kI8, v); }
  static GgufValue I16(int16_t v) { return Signed(GgufType::kI16, v); }
  static GgufValue I32(int32_t v) { return Signed(GgufType::kI32, v); }
  static GgufValue I64(int64_t v) { return Signed(GgufType::kI64, v); }
  static GgufValue F32(float v) { return Floating(GgufType::kF32, v); }
  static GgufValue F64(double v) { return Floating(GgufType::kF64, v); }
  static GgufValue Bool(bool v) { return Unsigned(GgufType::kBool, v ? 1 : 0); }
  static GgufValue String(std::string v);
  // An array whose elements all have elem_type (checked by the writer).
  static GgufValue Array(GgufType elem_type, std::vector<GgufValue> items);
  static GgufValue StringArray(const std::vector<std::string>& items);
  static GgufValue F32Array(const std::vector<float>& items);
  static GgufValue I32Array(const std::vector<int32_t>& items);

  GgufType type() const { return type_; }
  // Integers: the value as stored (sign-extended for signed types).
  uint64_t u64() const { return u_; }
  int64_t i64() const { return static_cast<int64_t>(u_); }
  double f64() const { return f_; }
  bool boolean() const { return u_ != 0; }
  const std::string& str() const { return s_; }
  GgufType elem_type() const { return elem_type_; }
  const std::vector<GgufValue>& items() const { return items_; }

  bool operator==(const GgufValue& o) const;
  // Short human-readable form: numbers, "quoted strings", arrays as [a, b, ... (n items)].
  std::string ToString(size_t max_items = 8) const;

 private:
  static GgufValue Unsigned(GgufType t, uint64_t v) {
    GgufValue g;
    g.type_ = t;
    g.u_ = v;
    return g;
  }
  static GgufValue Signed(GgufType t, int64_t v) {
    GgufValue g;
    g.type_ = t;
    g.u_ = static_cast<uint64_t>(v);
    return g;
  }
  static GgufValue Floating(GgufType t, double v) {
    GgufValue g;
    g.type_ = t;
    g.f_ = v;
    return g;
  }
  GgufType type_ = GgufType::kU8;
  uint64_t u_ = 0;
  double f_ = 0;
  std::string s_;
  GgufType elem_type_ = GgufType::kU8;
  std::vector<GgufValue> items_;
};

}  // namespace forge
