// The one-row DP4A GEMV's form of its activations (gemv_quant_dp4a.h): x as two int8 terms per
// element, x = scale (q1 + q2 / 254) to within scale / 508 (scale = amax / 127 of its 32-element
// block): xq[FormOffset(e)] = q1, xq[k + FormOffset(e)] = q2, then per block xs[b] = (scale /
// 254, sum of its F32 values) at xq + 2k. ActQuantBytes(k) bytes in all. The GEMV computes it from
// the F16 row in every CTA (into shared memory, flat: offset e), or takes it from the op that
// wrote the row (MatmulParams::xq), which computes it once with the same function from the same
// F16 values: the GEMV's result is the same either way, bit for bit.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace forge::cuda {

__host__ __device__ constexpr int64_t ActQuantBytes(int64_t k) { return 2 * k + (k / 32) * 8; }

// The byte of element e within a term of the form (k elements): lane-major in runs of 8
// super-blocks of 256 (the last run has ns = min(8, (k - base) / 256)): the 16-element piece i
// (< 4) of quarter j (< 4) of super-block s (< ns) of the run at base lies at base + 64 ns i +
// 16 (4 s + j). A warp step of the GEMV (lane 4 s + j takes quarter j of super-block s) then reads
// its lanes' i-th pieces as one contiguous run of 64 ns bytes: 4 global-memory wavefronts, where
// the flat order spreads them over 16 lines. Where k is not a multiple of 256: e.
__host__ __device__ constexpr int FormOffset(int e, int k) {
  if (k % 256 != 0) return e;
  const int base = e / 2048 * 2048;
  const int ns = (k - base) / 256 < 8 ? (k - base) / 256 : 8;
  const int r = e - base;
  return base + 64 * ns * ((r >> 4) & 3) + 16 * (4 * (r >> 8) + ((r >> 6) & 3)) + (r & 15);
}

// The element at byte o within a term of the form (FormOffset's inverse).
__host__ __device__ constexpr int FormElement(int o, int k) {
  if (k % 256 != 0) return o;
  const int base = o / 2048 * 2048;
  const int ns = (k - base) / 256 < 8 ? (k - base) / 256 : 8;
  const int r = o - base;
  const int i = r / (64 * ns), lane = (r - 64 * ns * i) >> 4;
  return base + 256 * (lane >> 2) + 64 * (lane & 3) + 16 * i + (r & 15);
}

// The form of the 8-element unit at e (f: its F16 values as F32) into xq (k elements in all).
// The 4 units of a 32-element block are held by 4 consecutive lanes (e / 8 = lane % 4 of its
// block), and every lane of the warp calls this together (the shuffles need them all); a lane with
// write false (a whole block's 4 lanes, past the row's last unit) writes nothing. flat: the terms
// at offset e (the GEMV's own shared-memory copy), not FormOffset(e).
__device__ __forceinline__ void QuantizeUnit(const float (&f)[8], int e, int k, int8_t* xq,
                                             bool write = true, bool flat = false) {
  float amax = 0.0f, sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    amax = fmaxf(amax, fabsf(f[i]));
    sum = __fadd_rn(sum, f[i]);
  }
  amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 2));
  sum = __fadd_rn(sum, __shfl_xor_sync(0xFFFFFFFFu, sum, 1));
  sum = __fadd_rn(sum, __shfl_xor_sync(0xFFFFFFFFu, sum, 2));
  if (!write) return;
  const float inv = amax > 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
  uint32_t p1[2] = {0, 0}, p2[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float t = __fmul_rn(f[i], inv);  // in [-127, 127]
    const float q1 = rintf(t);
    const float q2 = rintf(__fmul_rn(__fsub_rn(t, q1), 254.0f));  // in [-127, 127]
    p1[i / 4] |= (static_cast<uint32_t>(static_cast<int>(q1)) & 0xFFu) << (8 * (i % 4));
    p2[i / 4] |= (static_cast<uint32_t>(static_cast<int>(q2)) & 0xFFu) << (8 * (i % 4));
  }
  const int o = flat ? e : FormOffset(e, k);
  *reinterpret_cast<uint2*>(xq + o) = make_uint2(p1[0], p1[1]);
  *reinterpret_cast<uint2*>(xq + k + o) = make_uint2(p2[0], p2[1]);
  // A NaN in the block (the sum is NaN; the max skips it) makes its scale NaN, so it reaches
  // every output as it would through F16 arithmetic.
  const float scale = sum != sum ? sum : __fdiv_rn(amax, 127.0f * 254.0f);
  if ((e / 8) % 4 == 0) reinterpret_cast<float2*>(xq + 2 * k)[e / 32] = make_float2(scale, sum);
}

// 8 F16 values (16 bytes) as F32.
__device__ __forceinline__ void HalvesToF32(const uint4& v, float (&f)[8]) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __half22float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

// Writes the form of x[0, k) (k a multiple of 256) into xq (ActQuantBytes(k) bytes: the terms,
// flat, then the block pairs at xq + 2k, 8-byte aligned), the GEMV's shared memory, with threads
// [0, nthreads) of the block (nthreads a multiple of 32). Thread t takes 8-element units t,
// t + nthreads, ...: the 4 of a block are 4 consecutive lanes of one warp, and as k / 8 is a
// multiple of 32 a warp's lanes all take a unit or none do. x was written by an earlier kernel
// (the read-only path); kBatch: units a thread loads at once.
template <int kBatch = 8>
__device__ __forceinline__ void QuantizeActivations(const __half* x, int k, int8_t* xq, int tid,
                                                    int nthreads) {
  for (int u0 = tid; u0 < k / 8; u0 += kBatch * nthreads) {
    uint4 vb[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int u = u0 + b * nthreads;
      if (u < k / 8) vb[b] = __ldg(reinterpret_cast<const uint4*>(x + u * 8));
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int u = u0 + b * nthreads;
      if (u >= k / 8) break;
      float f[8];
      HalvesToF32(vb[b], f);
      QuantizeUnit(f, u * 8, k, xq, /*write=*/true, /*flat=*/true);
    }
  }
}

// Units [0, units) of 8 F16 values at x (16-byte aligned) into the form of the row they belong
// to (k elements; unit u at element e0 + 8u, e0 a multiple of 32), with all threads of the block
// (whole warps to the end: lanes past the last unit take part in the shuffles only). x was
// written by this block or an earlier kernel (plain loads).
__device__ __forceinline__ void QuantizeUnits(const __half* x, int units, int e0, int k,
                                              int8_t* xq) {
  const int lane = threadIdx.x & 31;
  for (int base = threadIdx.x - lane; base < units; base += blockDim.x) {
    const int u = base + lane;
    float f[8] = {};
    if (u < units) HalvesToF32(reinterpret_cast<const uint4*>(x)[u], f);
    QuantizeUnit(f, e0 + 8 * u, k, xq, u < units);
  }
}

}  // namespace forge::cuda
