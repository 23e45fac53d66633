// KernelsOf: each type's block kernels, and those of the plain types F32, F16 and BF16.
#include <cstring>

#include "base/half.h"
#include "quant/formats.h"

namespace forge::quant_internal {
namespace {

void DequantizeF32(const uint8_t* src, float* dst, int64_t n) {
  if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}

void QuantizeF32(const float* src, uint8_t* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}

template <float (*ToF32)(uint16_t)>
void DequantizeHalf(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = ToF32(h);
  }
}

template <uint16_t (*FromF32)(float)>
void QuantizeHalf(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = FromF32(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

}  // namespace

BlockKernels KernelsOf(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
      return {DequantizeF32, QuantizeF32};
    case GgmlType::kF16:
      return {DequantizeHalf<F16ToF32>, QuantizeHalf<F32ToF16>};
    case GgmlType::kBF16:
      return {DequantizeHalf<BF16ToF32>, QuantizeHalf<F32ToBF16>};
    case GgmlType::kQ4_0:
      return {DequantizeQ4_0, QuantizeQ4_0};
    case GgmlType::kQ4_1:
      return {DequantizeQ4_1, QuantizeQ4_1};
    case GgmlType::kQ5_0:
      return {DequantizeQ5_0, QuantizeQ5_0};
    case GgmlType::kQ5_1:
      return {DequantizeQ5_1, QuantizeQ5_1};
    case GgmlType::kQ8_0:
      return {DequantizeQ8_0, QuantizeQ8_0};
    case GgmlType::kQ2_K:
      return {DequantizeQ2_K, QuantizeQ2_K};
    case GgmlType::kQ3_K:
      return {DequantizeQ3_K, QuantizeQ3_K};
    case GgmlType::kQ4_K:
      return {DequantizeQ4_K, QuantizeQ4_K};
    case GgmlType::kQ5_K:
      return {DequantizeQ5_K, QuantizeQ5_K};
    case GgmlType::kQ6_K:
      return {DequantizeQ6_K, QuantizeQ6_K};
    case GgmlType::kQ8_K:
      return {DequantizeQ8_K, QuantizeQ8_K};
    default:
      return {};
  }
}

}  // namespace forge::quant_internal
