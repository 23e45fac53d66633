// The type table itself; block sizes follow the GGUF/ggml definitions of each format.
#include "quant/type_table.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace forge {
namespace {

constexpr std::array<TypeTraits, 31> kTable = {{
    {GgmlType::kF32, "F32", 1, 4, true},
    {GgmlType::kF16, "F16", 1, 2, true},
    {GgmlType::kBF16, "BF16", 1, 2, true},
    {GgmlType::kQ4_0, "Q4_0", 32, 18, true},
    {GgmlType::kQ4_1, "Q4_1", 32, 20, true},
    {GgmlType::kQ5_0, "Q5_0", 32, 22, true},
    {GgmlType::kQ5_1, "Q5_1", 32, 24, true},
    {GgmlType::kQ8_0, "Q8_0", 32, 34, true},
    {GgmlType::kQ2_K, "Q2_K", 256, 84, true},
    {GgmlType::kQ3_K, "Q3_K", 256, 110, true},
    {GgmlType::kQ4_K, "Q4_K", 256, 144, true},
    {GgmlType::kQ5_K, "Q5_K", 256, 176, true},
    {GgmlType::kQ6_K, "Q6_K", 256, 210, true},
    {GgmlType::kQ8_K, "Q8_K", 256, 292, true},
    // Known to ggml, refused by Forge (sizes kept for messages only).
    {GgmlType::kQ8_1, "Q8_1", 32, 36, false},
    {GgmlType::kIQ2_XXS, "IQ2_XXS", 256, 66, false},
    {GgmlType::kIQ2_XS, "IQ2_XS", 256, 74, false},
    {GgmlType::kIQ3_XXS, "IQ3_XXS", 256, 98, false},
    {GgmlType::kIQ1_S, "IQ1_S", 256, 50, false},
    {GgmlType::kIQ4_NL, "IQ4_NL", 32, 18, false},
    {GgmlType::kIQ3_S, "IQ3_S", 256, 110, false},
    {GgmlType::kIQ2_S, "IQ2_S", 256, 82, false},
    {GgmlType::kIQ4_XS, "IQ4_XS", 256, 136, false},
    {GgmlType::kI8, "I8", 1, 1, false},
    {GgmlType::kI16, "I16", 1, 2, false},
    {GgmlType::kI32, "I32", 1, 4, false},
    {GgmlType::kI64, "I64", 1, 8, false},
    {GgmlType::kF64, "F64", 1, 8, false},
    {GgmlType::kIQ1_M, "IQ1_M", 256, 56, false},
    {GgmlType::kTQ1_0, "TQ1_0", 256, 54, false},
    {GgmlType::kTQ2_0, "TQ2_0", 256, 66, false},
}};

constexpr std::array<GgmlType, 14> kSupported = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0, GgmlType::kQ4_1,
    GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K,
    GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ8_K};

}  // namespace

const TypeTraits* FindTypeTraits(uint32_t id) {
  for (const TypeTraits& t : kTable) {
    if (static_cast<uint32_t>(t.type) == id) return &t;
  }
  static constexpr TypeTraits kMxfp4 = {GgmlType::kMXFP4, "MXFP4", 32, 17, false};
  if (id == static_cast<uint32_t>(GgmlType::kMXFP4)) return &kMxfp4;
  return nullptr;
}

const TypeTraits& GetTypeTraits(GgmlType type) {
  const TypeTraits* t = FindTypeTraits(static_cast<uint32_t>(type));
  CHECK(t != nullptr) << "type id " << static_cast<uint32_t>(type) << " not in the type table";
  return *t;
}

std::string_view TypeName(GgmlType type) {
  const TypeTraits* t = FindTypeTraits(static_cast<uint32_t>(type));
  return t ? std::string_view(t->name) : std::string_view("UNKNOWN");
}

StatusOr<GgmlType> ParseTypeName(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (GgmlType t : kSupported) {
    if (upper == GetTypeTraits(t).name) return t;
  }
  return InvalidArgumentError("unknown weight type '" + std::string(name) +
                              "' (expected one of F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
                              "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K)");
}

std::span<const GgmlType> SupportedTypes() { return kSupported; }

StatusOr<int64_t> RowBytes(GgmlType type, int64_t n) {
  const TypeTraits& t = GetTypeTraits(type);
  if (n < 0 || n % t.block_elems != 0) {
    return InvalidArgumentError("row of " + std::to_string(n) + " elements is not a multiple of " +
                                std::string(t.name) + "'s block of " +
                                std::to_string(t.block_elems));
  }
  return n / t.block_elems * t.block_bytes;
}

}  // namespace forge
