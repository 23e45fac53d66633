// The formats' parts of the one-row DP4A GEMV (gemv_quant_dp4a.cu, design in gemv_quant_dp4a.h):
// for Q4_K / Q5_K (Q45K), Q6_K (Q6KR), Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 (Legacy) and Q2_K / Q3_K
// (Q23K), the bytes of a super-block, the rows a warp reads per stage, the lane's activations from
// shared memory (Load) or from the form in global memory (LoadForm), and a stage's rows dotted
// with them (Rows). Included by gemv_quant_dp4a.cu only.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "backend/cuda/act_quant/act_quant.cuh"

namespace forge::cuda::dp4a {

constexpr int kSbElems = 256;
constexpr int kChunk = 8;  // super-blocks of each row per stage: one warp step
constexpr uint32_t kLowNibbles = 0x0F0F0F0Fu;

// Sum over 4 words of dp4a(w_i, x_i).
__device__ __forceinline__ int Dot16(const uint4& w, const int4& x, int acc) {
  acc = __dp4a(static_cast<int>(w.x), x.x, acc);
  acc = __dp4a(static_cast<int>(w.y), x.y, acc);
  acc = __dp4a(static_cast<int>(w.z), x.z, acc);
  return __dp4a(static_cast<int>(w.w), x.w, acc);
}

__device__ __forceinline__ uint4 Nibbles(const uint4& q, int shift) {
  return make_uint4((q.x >> shift) & kLowNibbles, (q.y >> shift) & kLowNibbles,
                    (q.z >> shift) & kLowNibbles, (q.w >> shift) & kLowNibbles);
}

// A format's part of the kernel: its super-block bytes, the rows a warp reads per stage (sharing
// the activations' registers), the lane's activations for super-block sb (X, Load), and the
// stage's rows dotted with them (Rows: b is the lane's super-block in the stage's first row,
// rows kChunk super-blocks apart). Lane (s, j): s = lane / 4 the super-block of the warp step,
// j = lane % 4 its quarter.

// A lane's 64 consecutive activations e = 256 sb + 64 j + [0, 64), both terms, and the (scale /
// 254, sum) of their two 32-element blocks; with kSums also 254 sum(x1) + sum(x2) per block.
struct X64 {
  int4 x1[4], x2[4];
  float4 s;
  int sum[2];
};

template <bool kSums, bool kForm = false>
__device__ __forceinline__ X64 LoadX64(const int8_t* xq, const float2* xs, int kx, int sb, int j,
                                       int pad) {
  const int e = sb * kSbElems + 64 * j;  // the lane's first element
  // Its byte in each term and the step between its 16-byte pieces: in shared memory, flat with
  // `pad` bytes after each super-block; in the form (kForm: global memory, kx = k), lane-major.
  int o = sb * (kSbElems + pad) + 64 * j, step = 16;
  if constexpr (kForm) {
    o = (sb >> 3) * 2048 + 16 * (4 * (sb & 7) + j);
    step = 64 * min(8, kx / kSbElems - (sb & ~7));
  }
  X64 x;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x.x1[i] = *reinterpret_cast<const int4*>(xq + o + step * i);
    x.x2[i] = *reinterpret_cast<const int4*>(xq + kx + o + step * i);
  }
  x.s = *reinterpret_cast<const float4*>(xs + e / 32);
  if constexpr (kSums) {
    const uint4 ones = make_uint4(0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u);
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      x.sum[b] = 254 * Dot16(ones, x.x1[2 * b + 1], Dot16(ones, x.x1[2 * b], 0)) +
                 Dot16(ones, x.x2[2 * b + 1], Dot16(ones, x.x2[2 * b], 0));
    }
  }
  return x;
}

// Q4_K (144 bytes): header d, dmin (F16), scales[12] (8 six-bit scales and mins), then qs[128].
// Element 64j + l (j < 4, l < 32) is the low nibble of qs[32j + l] (sub-block 2j), element 64j +
// 32 + l its high nibble (sub-block 2j + 1). Q5_K (176 bytes) has qh[32] between the header and
// qs: bit 2j of qh[l] is element 64j + l's fifth bit, bit 2j + 1 element 64j + 32 + l's. Quarter
// j: qs bytes [32j, 32j + 32) (and all of qh), all 64 elements of sub-blocks 2j and 2j + 1.
template <bool kFive>
struct Q45K {
  static constexpr int kSbBytes = kFive ? 176 : 144;
  static constexpr int kQs = kFive ? 48 : 16;  // offset of qs
  static constexpr int kRows = kFive ? 3 : 4;
  static constexpr int kStageBytes = kRows * kChunk * kSbBytes;
  using X = X64;
  __device__ static X Load(const int8_t* xq, const float2* xs, int kx, int sb, int j, int pad) {
    return LoadX64<false>(xq, xs, kx, sb, j, pad);
  }
  // From the form in global memory (act_quant.cuh's lane-major layout).
  __device__ static X LoadForm(const int8_t* xq, const float2* xs, int k, int sb, int j) {
    return LoadX64<false, true>(xq, xs, k, sb, j, 0);
  }
  // Bit `bit` of each byte of w moved to bit 4 (0x10 of each byte).
  __device__ static uint32_t FifthBits(uint32_t w, int bit) {
    return (bit <= 4 ? w << (4 - bit) : w >> (bit - 4)) & 0x10101010u;
  }
  __device__ static uint4 WithFifth(const uint4& v, const uint4& qh, int bit) {
    return make_uint4(v.x | FifthBits(qh.x, bit), v.y | FifthBits(qh.y, bit),
                      v.z | FifthBits(qh.z, bit), v.w | FifthBits(qh.w, bit));
  }
  // The lane's weight bytes of kRows rows, row_stride apart from b (a stage in shared memory, or
  // the matrix in global memory where kGlobal: streamed past L1).
  struct W {
    uint4 h[kRows], q0[kRows], q1[kRows], qh0[kRows], qh1[kRows];
  };
  template <bool kGlobal>
  __device__ static uint4 Ld(const uint8_t* p) {
    if constexpr (kGlobal) {
      return __ldcs(reinterpret_cast<const uint4*>(p));
    } else {
      return *reinterpret_cast<const uint4*>(p);
    }
  }
  template <bool kGlobal>
  __device__ static void LoadW(const uint8_t* b, int64_t row_stride, int rows, int j, W& w) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      // Rows past `rows` read the last one again (their sums are never written).
      const uint8_t* br = b + (r < rows ? r : rows - 1) * row_stride;
      w.h[r] = Ld<kGlobal>(br);
      w.q0[r] = Ld<kGlobal>(br + kQs + 32 * j);
      w.q1[r] = Ld<kGlobal>(br + kQs + 16 + 32 * j);
      if constexpr (kFive) {
        w.qh0[r] = Ld<kGlobal>(br + 16);
        w.qh1[r] = Ld<kGlobal>(br + 32);
      }
    }
  }
  __device__ static void Rows(const uint8_t* b, int j, const X& x, float (&acc)[kRows]) {
    // The rows are independent: loaded together, their DP4A chains interleave.
    W w;
    LoadW<false>(b, kChunk * kSbBytes, kRows, j, w);
    Compute(w, j, x, acc);
  }
  __device__ static void Compute(const W& w, int j, const X& x, float (&acc)[kRows]) {
    // Byte selectors of sub-blocks 2j and 2j + 1 in the packed scales.
    const bool upper = j >= 2;
    const uint32_t sel_lo = 0x4440u | (2 * (j & 1)), sel_hi = sel_lo + 1;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const uint4& hr = w.h[r];
      const uint32_t sc4 =
          upper ? (hr.w & kLowNibbles) | ((hr.y >> 2) & 0x30303030u) : hr.y & 0x3F3F3F3Fu;
      const uint32_t mn4 =
          upper ? ((hr.w >> 4) & kLowNibbles) | ((hr.z >> 2) & 0x30303030u) : hr.z & 0x3F3F3F3Fu;
      uint4 l0 = Nibbles(w.q0[r], 0), l1 = Nibbles(w.q1[r], 0);
      uint4 h0 = Nibbles(w.q0[r], 4), h1 = Nibbles(w.q1[r], 4);
      if constexpr (kFive) {
        l0 = WithFifth(l0, w.qh0[r], 2 * j);
        l1 = WithFifth(l1, w.qh1[r], 2 * j);
        h0 = WithFifth(h0, w.qh0[r], 2 * j + 1);
        h1 = WithFifth(h1, w.qh1[r], 2 * j + 1);
      }
      const int lo1 = Dot16(l0, x.x1[0], 0) + Dot16(l1, x.x1[1], 0);
      const int lo2 = Dot16(l0, x.x2[0], 0) + Dot16(l1, x.x2[1], 0);
      const int hi1 = Dot16(h0, x.x1[2], 0) + Dot16(h1, x.x1[3], 0);
      const int hi2 = Dot16(h0, x.x2[2], 0) + Dot16(h1, x.x2[3], 0);
      // |254 lo1 + lo2| <= 255 * 32 * 31 * 127: exact in int32; times a 6-bit scale < 2^31.
      const int il = (254 * lo1 + lo2) * static_cast<int>(__byte_perm(sc4, 0, sel_lo));
      const int ih = (254 * hi1 + hi2) * static_cast<int>(__byte_perm(sc4, 0, sel_hi));
      const float tq =
          __fmaf_rn(static_cast<float>(il), x.s.x, __fmul_rn(static_cast<float>(ih), x.s.z));
      const float tm = __fmaf_rn(static_cast<float>(__byte_perm(mn4, 0, sel_lo)), x.s.y,
                                 __fmul_rn(static_cast<float>(__byte_perm(mn4, 0, sel_hi)), x.s.w));
      const float2 dm = __half22float2(*reinterpret_cast<const __half2*>(&hr.x));
      acc[r] = __fmaf_rn(-dm.y, tm, __fmaf_rn(dm.x, tq, acc[r]));
    }
  }
};
using Q4K = Q45K<false>;
using Q5K = Q45K<true>;

// 16 bytes at a 2-byte-aligned shared address: five aligned words, funnel-shifted.
__device__ __forceinline__ uint4 Load16At2(const uint8_t* p) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~3ull);
  const uint32_t sh = (reinterpret_cast<uintptr_t>(p) & 2) * 8;
  const uint32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
  return make_uint4(__funnelshift_r(w0, w1, sh), __funnelshift_r(w1, w2, sh),
                    __funnelshift_r(w2, w3, sh), __funnelshift_r(w3, w4, sh));
}

// 8 bytes at a 2-byte-aligned shared address: three aligned words, funnel-shifted.
__device__ __forceinline__ uint2 Load8At2(const uint8_t* p) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~3ull);
  const uint32_t sh = (reinterpret_cast<uintptr_t>(p) & 2) * 8;
  const uint32_t w0 = w[0], w1 = w[1], w2 = w[2];
  return make_uint2(__funnelshift_r(w0, w1, sh), __funnelshift_r(w1, w2, sh));
}

// Q6_K (210 bytes, so 2-byte aligned in the stage): ql[128], qh[64], scales[16] (int8), d (F16).
// In half n (128 elements), element 128n + 32t + l (t < 4, l < 32) is q - 32 with q the low
// (t = 0, 1) or high (t = 2, 3) nibble of ql[64n + 32 (t & 1) + l] plus bits 2t, 2t + 1 of
// qh[32n + l] as bits 4, 5; its sub-block scale is scales[8n + 2t + l / 16]. Quarter j: n = j / 2,
// l in [16 (j & 1), + 16) for every t: 64 elements in 4 runs of 16, one sub-block each.
// kR rows a stage (WithFormat picks 2 or 3).
template <int kR>
struct Q6KR {
  static constexpr int kSbBytes = 210;
  static constexpr int kRows = kR;
  static constexpr int kStageBytes = kRows * kChunk * kSbBytes;
  struct X {
    int4 x1[4], x2[4];  // both terms of the run of t
    int sum[4];         // 254 * sum(x1) + sum(x2) over the run of t (for the -32 offset)
    float s[4];         // scale / 254 of the 32-element block holding the run of t
  };
  // The lane's runs t < 4 (elements e + 32 t + [0, 16), e its first) with run t of each term at
  // byte off(t) (term 2 at kx).
  template <class Off>
  __device__ static X Runs(const int8_t* xq, const float2* xs, int kx, int e, Off off) {
    X x;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int o = off(t);
      x.x1[t] = *reinterpret_cast<const int4*>(xq + o);
      x.x2[t] = *reinterpret_cast<const int4*>(xq + kx + o);
      const uint4 ones = make_uint4(0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u);
      x.sum[t] = 254 * Dot16(ones, x.x1[t], 0) + Dot16(ones, x.x2[t], 0);
      x.s[t] = xs[e / 32 + t].x;
    }
    return x;
  }
  __device__ static X Load(const int8_t* xq, const float2* xs, int kx, int sb, int j, int pad) {
    const int e = sb * kSbElems + 128 * (j >> 1) + 16 * (j & 1);
    return Runs(xq, xs, kx, e, [&](int t) { return e + pad * sb + 32 * t; });
  }
  // From the form in global memory (act_quant.cuh: each run of 16 elements is contiguous there).
  __device__ static X LoadForm(const int8_t* xq, const float2* xs, int k, int sb, int j) {
    const int e = sb * kSbElems + 128 * (j >> 1) + 16 * (j & 1);
    return Runs(xq, xs, k, e, [&](int t) { return FormOffset(e + 32 * t, k); });
  }
  __device__ static void Rows(const uint8_t* b, int j, const X& x, float (&acc)[kRows]) {
    const int n = j >> 1, hl = j & 1;
    uint4 a[kRows], bq[kRows], c[kRows];
    uint32_t sc[kRows];
    float d[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const uint8_t* br = b + r * kChunk * kSbBytes;
      a[r] = Load16At2(br + 64 * n + 16 * hl);
      bq[r] = Load16At2(br + 64 * n + 32 + 16 * hl);
      c[r] = Load16At2(br + 128 + 32 * n + 16 * hl);
      // scales[8n + hl + 2t], t = 0..3: bytes hl, hl + 2, hl + 4, hl + 6 of scales[8n ..].
      const uint2 s8 = Load8At2(br + 192 + 8 * n);
      sc[r] = __byte_perm(s8.x, s8.y, 0x6420 + 0x1111 * hl);
      d[r] = __half2float(*reinterpret_cast<const __half*>(br + 208));
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      uint4 v[4];  // the 6-bit values of run t, as bytes
      v[0] = make_uint4((a[r].x & kLowNibbles) | ((c[r].x << 4) & 0x30303030u),
                        (a[r].y & kLowNibbles) | ((c[r].y << 4) & 0x30303030u),
                        (a[r].z & kLowNibbles) | ((c[r].z << 4) & 0x30303030u),
                        (a[r].w & kLowNibbles) | ((c[r].w << 4) & 0x30303030u));
      v[1] = make_uint4((bq[r].x & kLowNibbles) | ((c[r].x << 2) & 0x30303030u),
                        (bq[r].y & kLowNibbles) | ((c[r].y << 2) & 0x30303030u),
                        (bq[r].z & kLowNibbles) | ((c[r].z << 2) & 0x30303030u),
                        (bq[r].w & kLowNibbles) | ((c[r].w << 2) & 0x30303030u));
      v[2] = make_uint4(((a[r].x >> 4) & kLowNibbles) | (c[r].x & 0x30303030u),
                        ((a[r].y >> 4) & kLowNibbles) | (c[r].y & 0x30303030u),
                        ((a[r].z >> 4) & kLowNibbles) | (c[r].z & 0x30303030u),
                        ((a[r].w >> 4) & kLowNibbles) | (c[r].w & 0x30303030u));
      v[3] = make_uint4(((bq[r].x >> 4) & kLowNibbles) | ((c[r].x >> 2) & 0x30303030u),
                        ((bq[r].y >> 4) & kLowNibbles) | ((c[r].y >> 2) & 0x30303030u),
                        ((bq[r].z >> 4) & kLowNibbles) | ((c[r].z >> 2) & 0x30303030u),
                        ((bq[r].w >> 4) & kLowNibbles) | ((c[r].w >> 2) & 0x30303030u));
      float t_sum = 0.0f;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        // sum((q - 32) (254 x1 + x2)): |.| <= 16 * 32 * 255 * 127 < 2^24, exact as F32.
        const int i = 254 * Dot16(v[t], x.x1[t], 0) + Dot16(v[t], x.x2[t], 0) - 32 * x.sum[t];
        const float scale = static_cast<float>(static_cast<int8_t>(sc[r] >> (8 * t)));
        t_sum = __fmaf_rn(__fmul_rn(static_cast<float>(i), scale), x.s[t], t_sum);
      }
      acc[r] = __fmaf_rn(d[r], t_sum, acc[r]);
    }
  }
};

// The legacy block formats in groups of 8 blocks (256 elements): Q8_0 (34 bytes: d (F16), qs[32]
// int8), Q4_0 (18: d, qs[16]; element l < 16 the low nibble of qs[l] - 8, element 16 + l its high
// nibble - 8), Q4_1 (20: d, m, qs[16]; d q + m), Q5_0 (22: d, qh[4], qs[16]; the nibble plus bit l
// (element l) or 16 + l (element 16 + l) of qh as bit 4, minus 16) and Q5_1 (24: d, m, qh[4],
// qs[16]; d q + m). Quarter j: blocks 2j and 2j + 1 (2-byte aligned in the stage).
enum class LegacyKind { kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1 };

// Bits 0..3 of b as bit 4 of bytes 0..3 (the copies b << 7i do not overlap: no carries).
__device__ __forceinline__ uint32_t FifthBitBytes(uint32_t b) {
  return ((b & 0xFu) * 0x00204081u << 4) & 0x10101010u;
}

template <LegacyKind K>
struct Legacy {
  static constexpr bool kQ8 = K == LegacyKind::kQ8_0;
  static constexpr bool kMin = K == LegacyKind::kQ4_1 || K == LegacyKind::kQ5_1;    // d q + m
  static constexpr bool kFifth = K == LegacyKind::kQ5_0 || K == LegacyKind::kQ5_1;  // qh
  static constexpr int kBlockBytes = kQ8                      ? 34
                                     : K == LegacyKind::kQ4_0 ? 18
                                     : K == LegacyKind::kQ4_1 ? 20
                                     : K == LegacyKind::kQ5_0 ? 22
                                                              : 24;
  static constexpr int kQs = kBlockBytes - (kQ8 ? 32 : 16);  // qs last in every layout
  static constexpr int kQh = kMin ? 4 : 2;                   // qh after d (and m)
  // Subtracted from each stored value (Q4_0: 8, Q5_0: 16).
  static constexpr int kOffset = K == LegacyKind::kQ4_0 ? 8 : K == LegacyKind::kQ5_0 ? 16 : 0;
  static constexpr int kSbBytes = 8 * kBlockBytes;
  static constexpr int kRows = kQ8 ? 2 : 4;
  static constexpr int kStageBytes = kRows * kChunk * kSbBytes;
  using X = X64;
  __device__ static X Load(const int8_t* xq, const float2* xs, int kx, int sb, int j, int pad) {
    return LoadX64<kOffset != 0>(xq, xs, kx, sb, j, pad);
  }
  // From the form in global memory (act_quant.cuh's lane-major layout).
  __device__ static X LoadForm(const int8_t* xq, const float2* xs, int k, int sb, int j) {
    return LoadX64<kOffset != 0, true>(xq, xs, k, sb, j, 0);
  }
  __device__ static void Rows(const uint8_t* b, int j, const X& x, float (&acc)[kRows]) {
    uint4 q[kRows][2][kQ8 ? 2 : 1];
    float d[kRows][2], mn[kRows][2];
    uint32_t qh[kRows][2];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint8_t* blk = b + r * kChunk * kSbBytes + (2 * j + h) * kBlockBytes;
        d[r][h] = __half2float(*reinterpret_cast<const __half*>(blk));
        mn[r][h] = kMin ? __half2float(*reinterpret_cast<const __half*>(blk + 2)) : 0.0f;
        q[r][h][0] = Load16At2(blk + kQs);
        if constexpr (kQ8) q[r][h][kQ8 ? 1 : 0] = Load16At2(blk + kQs + 16);
        if constexpr (kFifth) {
          const uint16_t* p = reinterpret_cast<const uint16_t*>(blk + kQh);
          qh[r][h] = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 16);
        } else {
          qh[r][h] = 0;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float t = 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // Block h's 32 values against activations x[2h], x[2h + 1] (16 each).
        uint4 v0 = kQ8 ? q[r][h][0] : Nibbles(q[r][h][0], 0);
        uint4 v1 = kQ8 ? q[r][h][kQ8 ? 1 : 0] : Nibbles(q[r][h][0], 4);
        if constexpr (kFifth) {
          const uint32_t lo = qh[r][h], hi = qh[r][h] >> 16;
          v0 = make_uint4(v0.x | FifthBitBytes(lo), v0.y | FifthBitBytes(lo >> 4),
                          v0.z | FifthBitBytes(lo >> 8), v0.w | FifthBitBytes(lo >> 12));
          v1 = make_uint4(v1.x | FifthBitBytes(hi), v1.y | FifthBitBytes(hi >> 4),
                          v1.z | FifthBitBytes(hi >> 8), v1.w | FifthBitBytes(hi >> 12));
        }
        int i = 254 * (Dot16(v0, x.x1[2 * h], 0) + Dot16(v1, x.x1[2 * h + 1], 0)) +
                Dot16(v0, x.x2[2 * h], 0) + Dot16(v1, x.x2[2 * h + 1], 0);
        if constexpr (kOffset != 0) i -= kOffset * x.sum[h];
        // |i| <= 32 * 255 * 127 * 128 < 2^31; as F32 within 2^-24 of itself.
        t = __fmaf_rn(__fmul_rn(d[r][h], static_cast<float>(i)), h == 0 ? x.s.x : x.s.z, t);
        // d q + m: m times the block's F32 sum of x.
        if constexpr (kMin) t = __fmaf_rn(mn[r][h], h == 0 ? x.s.y : x.s.w, t);
      }
      acc[r] = __fadd_rn(acc[r], t);
    }
  }
};
using Q80 = Legacy<LegacyKind::kQ8_0>;
using Q40 = Legacy<LegacyKind::kQ4_0>;
using Q41 = Legacy<LegacyKind::kQ4_1>;
using Q50 = Legacy<LegacyKind::kQ5_0>;
using Q51 = Legacy<LegacyKind::kQ5_1>;

// 16 bytes at a 4-byte-aligned shared address: four aligned words.
__device__ __forceinline__ uint4 Load16At4(const uint8_t* p) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(p);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// 32 bytes at a 2-byte-aligned shared address: nine aligned words, funnel-shifted.
__device__ __forceinline__ void Load32At2(const uint8_t* p, uint4& lo, uint4& hi) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~3ull);
  const uint32_t sh = (reinterpret_cast<uintptr_t>(p) & 2) * 8;
  uint32_t v[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) v[i] = w[i];
  lo = make_uint4(__funnelshift_r(v[0], v[1], sh), __funnelshift_r(v[1], v[2], sh),
                  __funnelshift_r(v[2], v[3], sh), __funnelshift_r(v[3], v[4], sh));
  hi = make_uint4(__funnelshift_r(v[4], v[5], sh), __funnelshift_r(v[5], v[6], sh),
                  __funnelshift_r(v[6], v[7], sh), __funnelshift_r(v[7], v[8], sh));
}

// X64's activations with, per run i of 16 (elements 256 sb + 64 j + 16 i + [0, 16)), 254 sum(x1)
// + sum(x2): the sums of the k-quants' 16-element groups (Q2_K's min term, Q3_K's -4 offset).
// The second 32-element block's (runs 2, 3) sums are 4 times that and its scale / 254 (s.z) a
// quarter, for weights read 4 times their value there (Q23K: masked in place, not shifted down).
struct X64G {
  int4 x1[4], x2[4];
  float4 s;
  int gsum[4];
};

template <bool kForm>
__device__ __forceinline__ X64G LoadX64G(const int8_t* xq, const float2* xs, int kx, int sb, int j,
                                         int pad) {
  const X64 b = LoadX64<false, kForm>(xq, xs, kx, sb, j, pad);
  X64G x;
  const uint4 ones = make_uint4(0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x.x1[i] = b.x1[i];
    x.x2[i] = b.x2[i];
    // |.| <= 16 * 255 * 127 < 2^19 (times 4: < 2^21).
    x.gsum[i] = (i < 2 ? 1 : 4) * (254 * Dot16(ones, b.x1[i], 0) + Dot16(ones, b.x2[i], 0));
  }
  x.s = make_float4(b.s.x, b.s.y, __fmul_rn(b.s.z, 0.25f), b.s.w);  // exact: a power of 2
  return x;
}

// Q2_K (84 bytes, so 4-byte aligned in the stage): scales[16] (per 16-element group g: low nibble
// the scale, high nibble the min), qs[64], d, dmin (F16); element 128h + 32t + l (h < 2, t < 4,
// l < 32) is q = bits 2t, 2t + 1 of qs[32h + l], in group (128h + 32t + l) / 16, value d (sc & 15)
// q - dmin (sc >> 4). Q3_K (110 bytes, 2-byte aligned): hmask[32], qs[64], scales[12], d (F16);
// q as Q2_K's plus bit h * 4 + t of hmask[l] as bit 2, value d (s - 32) (q - 4) with s the
// group's 6-bit scale: low 4 bits scales[g] (g < 8) or scales[g - 8] >> 4, high 2 bits bits
// 2 (g / 4), + 1 of scales[8 + g % 4]. Quarter j (h = j / 2): run i (elements 64j + 16i + [0, 16),
// group 4j + i) is bits 4 (j & 1) + 2 (i / 2), + 1 of qs[32h + 16 (i & 1) + [0, 16)] (and bit
// 2j + i / 2 of hmask[16 (i & 1) + [0, 16)]): 32 qs bytes, 4 scale bytes (Q3_K: their low bits
// in scales[4 (j & 1) ..] nibble j / 2, their high bits bits 2j, 2j + 1 of scales[8..12)), all
// 32 hmask bytes. kR rows a stage.
template <bool kThree, int kR>
struct Q23K {
  static constexpr int kSbBytes = kThree ? 110 : 84;
  static constexpr int kQs = kThree ? 32 : 16;  // offset of qs
  static constexpr int kRows = kR;
  static constexpr int kStageBytes = kRows * kChunk * kSbBytes;
  using X = X64G;
  __device__ static X Load(const int8_t* xq, const float2* xs, int kx, int sb, int j, int pad) {
    return LoadX64G<false>(xq, xs, kx, sb, j, pad);
  }
  // From the form in global memory (act_quant.cuh's lane-major layout).
  __device__ static X LoadForm(const int8_t* xq, const float2* xs, int k, int sb, int j) {
    return LoadX64G<true>(xq, xs, k, sb, j, 0);
  }
  // w rotated right by r (mod 32): with a byte mask after it, bit b of every byte to bit b - r.
  __device__ static uint32_t Rot(uint32_t w, int r) { return __funnelshift_r(w, w, r); }
  __device__ static void Rows(const uint8_t* b, int j, const X& x, float (&acc)[kRows]) {
    const int h = j >> 1, shift = 4 * (j & 1);
    // The rows are independent: loaded together, their DP4A chains interleave.
    uint4 qa[kRows], qb[kRows], ha[kRows], hb[kRows];  // qs (and hmask) bytes of runs i & 1 = 0, 1
    uint32_t sc[kRows], hs[kRows], dm[kRows];          // scales; Q3_K's high scale bits; d (dmin)
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const uint8_t* br = b + r * kChunk * kSbBytes;
      if constexpr (kThree) {
        Load32At2(br, ha[r], hb[r]);
        Load32At2(br + kQs + 32 * h, qa[r], qb[r]);
        const uint4 t = Load16At2(br + 96);  // scales[0, 12), d
        sc[r] = (j & 1) ? t.y : t.x;
        hs[r] = t.z;
        dm[r] = t.w;
      } else {
        sc[r] = *reinterpret_cast<const uint32_t*>(br + 4 * j);
        qa[r] = Load16At4(br + kQs + 32 * h);
        qb[r] = Load16At4(br + kQs + 16 + 32 * h);
        dm[r] = *reinterpret_cast<const uint32_t*>(br + 80);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      uint32_t scales = sc[r];  // byte i: run i's scale (and min)
      if constexpr (kThree) {
        scales = ((scales >> (4 * h)) & kLowNibbles) | (((hs[r] >> (2 * j)) & 0x03030303u) << 4);
      }
      int iq[2] = {0, 0}, im[2] = {0, 0};  // per 32-element block of x: the q and min terms
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // Block 0 (runs 0, 1): q in bits 0, 1 (Q3_K: the hmask bit in bit 2); block 1: 4 q in
        // bits 2, 3 (the hmask bit in bit 4), against its 4-times sums and quartered scale.
        const uint32_t qmask = i < 2 ? 0x03030303u : 0x0C0C0C0Cu;
        const uint4 q = (i & 1) ? qb[r] : qa[r];
        uint4 v = make_uint4((q.x >> shift) & qmask, (q.y >> shift) & qmask, (q.z >> shift) & qmask,
                             (q.w >> shift) & qmask);
        if constexpr (kThree) {
          // Bit 2j of each hmask byte to bit 2 (block 0), bit 2j + 1 to bit 4 (block 1).
          const uint4& hm = (i & 1) ? hb[r] : ha[r];
          const int rot = (i < 2 ? 2 * j + 30 : 2 * j + 29) & 31;
          const uint32_t hmask = i < 2 ? 0x04040404u : 0x10101010u;
          v = make_uint4(v.x | (Rot(hm.x, rot) & hmask), v.y | (Rot(hm.y, rot) & hmask),
                         v.z | (Rot(hm.z, rot) & hmask), v.w | (Rot(hm.w, rot) & hmask));
        }
        // sum(v (254 x1 + x2)) over the run: |.| <= 16 * 28 * 255 * 127 < 2^24.
        const int dot = 254 * Dot16(v, x.x1[i], 0) + Dot16(v, x.x2[i], 0);
        const int byte = static_cast<int>((scales >> (8 * i)) & 0xFFu);
        if constexpr (kThree) {
          // (s - 32) sum((q - 4) x), block 1 times 4: |.| <= 32 * 16 * 16 * 255 * 127 < 2^29 a
          // run.
          iq[i >> 1] += (byte - 32) * (dot - 4 * x.gsum[i]);
        } else {
          // sc sum(q x) < 2^27 and m sum(x) < 2^25 a run (4-bit sc, m; block 1 times 4).
          iq[i >> 1] += (byte & 0xF) * dot;
          im[i >> 1] += (byte >> 4) * x.gsum[i];
        }
      }
      // Each block's two runs: exact in int32, as F32 within 2^-24 of itself.
      const float tq =
          __fmaf_rn(static_cast<float>(iq[0]), x.s.x, __fmul_rn(static_cast<float>(iq[1]), x.s.z));
      if constexpr (kThree) {
        const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(dm[r])));
        acc[r] = __fmaf_rn(d, tq, acc[r]);
      } else {
        const float tm = __fmaf_rn(static_cast<float>(im[0]), x.s.x,
                                   __fmul_rn(static_cast<float>(im[1]), x.s.z));
        const float2 d = __half22float2(*reinterpret_cast<const __half2*>(&dm[r]));
        acc[r] = __fmaf_rn(-d.y, tm, __fmaf_rn(d.x, tq, acc[r]));
      }
    }
  }
};
// 4 rows a stage (2,688 / 3,520 bytes). H200, with the form (warp-staged; timed by a scratch
// harness rotating over 256 MB of copies, not forge bench), TB/s at 4 rows against 6 / 8 (Q2_K)
// and 2 / 3 (Q3_K): Q2_K 14336 x 4096 1.97 (1.92, 1.92), 4096 x 14336 1.78 (1.58, 1.63), 4096 x
// 4096 1.61 (1.51, 1.55), 28672 x 4096 2.39 (2.40, 2.43); Q3_K 2.01 (1.70, 1.78), 1.67 (1.88,
// 1.43), 1.61 (1.34, 1.25), 2.15 (1.81, 1.98). The generic GEMV there: Q2_K 0.85, 0.64, 0.38,
// 0.68; Q3_K 0.78, 0.61, 0.41, 0.71.
using Q2K = Q23K<false, 4>;
using Q3K = Q23K<true, 4>;

}  // namespace forge::cuda::dp4a
