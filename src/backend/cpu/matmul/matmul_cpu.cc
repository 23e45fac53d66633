// matmul_cpu: block-format weights by integer dot products (int_dot.h): the activation rows
// quantized once (act_quant.h), then weight rows split over the thread pool, each dotted with
// every activation row by the active instruction set's row dot, which equals the reference's bit
// for bit. F32 / F16 / BF16 weights: F32 activations dotted with each row in a fixed 16-lane
// order (AVX2+FMA when the CPU has it, chosen once per process); half rows widened in registers
// (F16C / a shift), or into a per-thread buffer without AVX2.
// Either way a row's result depends only on its two inputs: not on m, not on the thread count.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/matmul/act_quant.h"
#include "backend/cpu/matmul/dequantize_fast.h"
#include "backend/cpu/matmul/int_dot.h"
#include "backend/cpu/matmul/matmul.h"
#include "base/half.h"
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

// The half-precision weights of a row widened in registers (exact), summed as DotAvx2 sums:
// the same bits as widening the row first and calling DotAvx2.
template <bool kBf16>
__attribute__((target("avx2,fma,f16c"))) inline __m256 Widen8(const uint8_t* w) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
  if constexpr (kBf16) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    return _mm256_cvtph_ps(h);
  }
}

template <bool kBf16>
__attribute__((target("avx2,fma,f16c"))) float DotHalfAvx2(const float* a, const uint8_t* w,
                                                           int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), Widen8<kBf16>(w + 2 * i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), Widen8<kBf16>(w + 2 * i + 16), acc1);
  }
  float acc[16];
  _mm256_storeu_ps(acc, acc0);
  _mm256_storeu_ps(acc + 8, acc1);
  for (int l = 0; i < n; ++i, ++l) {
    uint16_t h;
    std::memcpy(&h, w + 2 * i, 2);
    acc[l] += a[i] * (kBf16 ? BF16ToF32(h) : F16ToF32(h));
  }
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

// Weight rows per share of the pool: enough work per share to cover a hand-off.
constexpr int64_t kRowGrain = 8;
// Weight rows a thread runs every activation row batch over before the next rows.
constexpr int64_t kWeightTile = 16;

Status MatmulIntDot(const MatmulParams& p, int block) {
  const int64_t k = p.w.cols, n = p.w.rows, m = p.m;
  const int64_t xs = p.x_stride ? p.x_stride : k;
  const int64_t os = p.out_stride ? p.out_stride : n;
  const float* x = static_cast<const float*>(p.x);
  float* out = static_cast<float*>(p.out);
  thread_local ActRows act;  // the calling thread's (tensor-parallel ranks call concurrently)
  act.Resize(m, k, block);
  ActRows& a = act;
  ThreadPool& pool = ThreadPool::Global();
  if (m > 1) {
    pool.ParallelFor(m, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) a.Quantize(i, x + i * xs);
    });
  } else {
    a.Quantize(0, x);
  }
  const IntRowDots dots = IntRowDotsFor(p.w.type, ActiveCpuIsa());
  pool.ParallelFor(
      n,
      [&](int64_t begin, int64_t end) {
        // Tiles of weight rows (kept in cache) against batches of up to kIntDotMaxRows
        // activation rows (each weight row unpacked once per batch).
        ActRow rows[kIntDotMaxRows];
        for (int64_t j0 = begin; j0 < end; j0 += kWeightTile) {
          const int64_t j1 = std::min(end, j0 + kWeightTile);
          for (int64_t i0 = 0; i0 < m; i0 += kIntDotMaxRows) {
            const int nr = static_cast<int>(std::min<int64_t>(kIntDotMaxRows, m - i0));
            for (int r = 0; r < nr; ++r) rows[r] = a.row(i0 + r);
            for (int64_t j = j0; j < j1; ++j) {
              float* o = out + i0 * os + j;
              dots(p.w.row(j), rows, nr, o, os);
              const float bias = p.bias ? p.bias[j] : 0.0f;
              for (int r = 0; r < nr; ++r) o[r * os] += bias;
            }
          }
        }
      },
      kRowGrain);
  return Status::Ok();
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
  if (p.m <= 0 || n <= 0) return Status::Ok();
  if (const int block = ActBlockOf(p.w.type); block > 0) return MatmulIntDot(p, block);
  const float* x = static_cast<const float*>(p.x);
  float* out = static_cast<float*>(p.out);
  const bool direct = p.w.type == GgmlType::kF32;
  // F16 / BF16 rows widened in registers where DotAvx2 is the dot (the same bits).
  static const bool f16c = dot == DotAvx2 && __builtin_cpu_supports("f16c");
  if (f16c && (p.w.type == GgmlType::kF16 || p.w.type == GgmlType::kBF16)) {
    const auto half_dot = p.w.type == GgmlType::kF16 ? DotHalfAvx2<false> : DotHalfAvx2<true>;
    ThreadPool::Global().ParallelFor(
        n,
        [&](int64_t begin, int64_t end) {
          for (int64_t j = begin; j < end; ++j) {
            const float b = p.bias ? p.bias[j] : 0.0f;
            for (int64_t i = 0; i < p.m; ++i)
              out[i * os + j] = half_dot(x + i * xs, p.w.row(j), k) + b;
          }
        },
        kRowGrain);
    return Status::Ok();
  }
  ThreadPool::Global().ParallelFor(
      n,
      [&](int64_t begin, int64_t end) {
        thread_local std::vector<float> row;
        row.resize(k);
        for (int64_t j = begin; j < end; ++j) {
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
      kRowGrain);
  return Status::Ok();
}

}  // namespace forge
