// DequantizeRowFast: Q8_0 (int8 -> f32, times the block's F16 scale) and F16 (F16C) with AVX2.
#include "backend/cpu/matmul/dequantize_fast.h"

#include <immintrin.h>

#include <cstring>

#include "base/half.h"
#include "quant/dequantize.h"

namespace forge {
namespace {

__attribute__((target("avx2,f16c"))) void DequantQ8_0Avx2(const uint8_t* src, float* dst,
                                                          int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b) {
    const uint8_t* blk = src + b * 34;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const __m256 d = _mm256_set1_ps(F16ToF32(dh));
    for (int j = 0; j < 32; j += 8) {
      __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + j));
      __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
      _mm256_storeu_ps(dst + b * 32 + j, _mm256_mul_ps(q, d));
    }
  }
}

__attribute__((target("avx2,f16c"))) void DequantF16Avx2(const uint8_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = F16ToF32(h);
  }
}

bool HaveAvx2() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }();
  return have;
}

}  // namespace

void DequantizeRowFast(GgmlType type, const uint8_t* src, float* dst, int64_t n) {
  if (HaveAvx2()) {
    if (type == GgmlType::kQ8_0) return DequantQ8_0Avx2(src, dst, n / 32);
    if (type == GgmlType::kF16) return DequantF16Avx2(src, dst, n);
  }
  (void)DequantizeRow(type, src, dst, n);
}

}  // namespace forge
