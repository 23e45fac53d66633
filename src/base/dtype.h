// DType: the element type of activations and of the KV cache (F32 on the CPU; F32, F16 or BF16
// on the GPU). Weights keep their own stored format (GgmlType).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace forge {

enum class DType : uint8_t { kF32, kF16, kBF16 };

inline size_t DTypeSize(DType t) { return t == DType::kF32 ? 4 : 2; }

inline const char* DTypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
  }
  return "?";
}

inline StatusOr<DType> ParseDType(std::string_view s) {
  if (s == "f32") return DType::kF32;
  if (s == "f16") return DType::kF16;
  if (s == "bf16") return DType::kBF16;
  return InvalidArgumentError("unknown activation dtype '" + std::string(s) +
                              "' (expected f32, f16 or bf16)");
}

// The error a backend returns for an element type its op does not implement.
inline Status UnsupportedDType(std::string_view op, DType t) {
  return UnimplementedError(std::string(op) + ": unsupported dtype=" + DTypeName(t));
}

}  // namespace forge
