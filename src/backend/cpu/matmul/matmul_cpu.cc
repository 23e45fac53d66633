// matmul_cpu: weight rows split over the thread pool; each row is dequantized into a per-thread
// buffer and dotted with every activation row by DotF32 (fixed 16-lane order, AVX2+FMA when the
// CPU has it, chosen once per process so every call sums the same way).
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "backend/cpu/matmul/dequantize_fast.h"
#include "backend/cpu/matmul/matmul.h"
#include "base/thread_pool.h"

namespace forge {
namespace {

float DotScalar(const float* a, const float* b, int64_t n) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int l = 0; l < 16; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
  float s8[8];
  for (int l = 0; l < 8; ++l) s8[l] = acc[l] + acc[l + 8];
  float s4[4];
  for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

__attribute__((target("avx2,fma"))) float DotAvx2(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  float acc[16];
  _mm256_storeu_ps(acc, acc0);
  _mm256_storeu_ps(acc + 8, acc1);
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
  float s8[8];
  for (int l = 0; l < 8; ++l) s8[l] = acc[l] + acc[l + 8];
  float s4[4];
  for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// Eight int8 weights times the block scale, as floats.
__attribute__((target("avx2,fma,f16c"))) inline __m256 Q8x8(const uint8_t* q, __m256 d) {
  __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), d);
}

// x . dequant(Q8_0 row) with the dequantized weights formed in registers: each weight is
// (float)q * d, exactly the value DequantizeRowFast stores, and lands in the same lane of the
// same accumulator as in DotAvx2, so the result is bit-identical to dequantize-then-DotAvx2.
__attribute__((target("avx2,fma,f16c"))) float DotQ8_0Avx2(const float* x, const uint8_t* w,
                                                           int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = w + b * 34;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(dh)));
    const float* xb = x + b * 32;
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(xb), Q8x8(blk + 2, d), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 8), Q8x8(blk + 10, d), acc1);
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 16), Q8x8(blk + 18, d), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(xb + 24), Q8x8(blk + 26, d), acc1);
  }
  float acc[16];
  _mm256_storeu_ps(acc, acc0);
  _mm256_storeu_ps(acc + 8, acc1);
  float s8[8];
  for (int l = 0; l < 8; ++l) s8[l] = acc[l] + acc[l + 8];
  float s4[4];
  for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

using DotFn = float (*)(const float*, const float*, int64_t);

DotFn ChooseDot() {
  __builtin_cpu_init();
  return (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? DotAvx2 : DotScalar;
}

}  // namespace

Status matmul_cpu(const MatmulParams& p) {
  static const DotFn dot = ChooseDot();
  const int64_t k = p.w.cols, n = p.w.rows;
  const int64_t xs = p.x_stride ? p.x_stride : k;
  const int64_t os = p.out_stride ? p.out_stride : n;
  if (k % GetTypeTraits(p.w.type).block_elems != 0) {
    return InvalidArgumentError("matmul: k=" + std::to_string(k) + " is not a multiple of " +
                                std::string(TypeName(p.w.type)) + "'s block");
  }
  if (p.x_type != DType::kF32) return UnsupportedDType("matmul", p.x_type);
  if (p.out_type != DType::kF32) return UnsupportedDType("matmul", p.out_type);
  const float* x = static_cast<const float*>(p.x);
  float* out = static_cast<float*>(p.out);
  const bool direct = p.w.type == GgmlType::kF32;
  // Few activation rows: Q8_0 weights are dequantized in registers (bit-identical, see above).
  static const bool avx2 = dot == DotAvx2 && __builtin_cpu_supports("f16c");
  const bool fused_q8 = avx2 && p.w.type == GgmlType::kQ8_0 && p.m <= 4;
  ThreadPool::Global().ParallelFor(
      n,
      [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> row;
        row.resize(k);
        for (int64_t j = begin; j < end; ++j) {
          if (fused_q8) {
            const float b = p.bias ? p.bias[j] : 0.0f;
            for (int64_t i = 0; i < p.m; ++i) {
              out[i * os + j] = DotQ8_0Avx2(x + i * xs, p.w.row(j), k) + b;
            }
            continue;
          }
          const float* w;
          if (direct) {
            w = reinterpret_cast<const float*>(p.w.row(j));
          } else {
            DequantizeRowFast(p.w.type, p.w.row(j), row.data(), k);
            w = row.data();
          }
          const float b = p.bias ? p.bias[j] : 0.0f;
          for (int64_t i = 0; i < p.m; ++i) out[i * os + j] = dot(x + i * xs, w, k) + b;
        }
      },
      8);
  return Status::Ok();
}

}  // namespace forge
