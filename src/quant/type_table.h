// The weight/tensor type table: GGUF type id, name, elements and bytes per block, for every
// type Forge reads, plus the names of known types it refuses (IQ formats and others).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace forge {

// Values are the GGUF/ggml type ids stored in files.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct TypeTraits {
  GgmlType type;
  const char* name;     // as llama.cpp prints it: "Q4_K", "F16", ...
  int64_t block_elems;  // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
  bool supported;       // Forge reads and computes with this type
};

// Traits of a type id read from a file, or nullptr if the id is unknown to ggml.
const TypeTraits* FindTypeTraits(uint32_t id);
// Traits of a known type. Requires: the type is in the table.
const TypeTraits& GetTypeTraits(GgmlType type);
std::string_view TypeName(GgmlType type);
// Parses "q4_k", "Q4_K", "f16", ...; only supported types.
StatusOr<GgmlType> ParseTypeName(std::string_view name);
// Every type Forge supports, in table order.
std::span<const GgmlType> SupportedTypes();

// Bytes of a row of n elements. Error when n is not a multiple of the block size.
StatusOr<int64_t> RowBytes(GgmlType type, int64_t n);

}  // namespace forge
