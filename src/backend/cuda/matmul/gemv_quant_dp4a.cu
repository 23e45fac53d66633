// gemv_quant_dp4a_cuda (design in gemv_quant_dp4a.h): Q4_0, Q8_0, Q4_K, Q5_K and Q6_K weights
// times one F16 activation row quantized to two int8 terms, with DP4A. One stage pipeline (the
// kernel template) for every format; each format's part (Q45K, Q6KR, Legacy) reads its blocks from
// a stage. Formats are handled in units of 256 elements ("super-blocks": 8 blocks of Q4_0 / Q8_0).
#include "backend/cuda/matmul/gemv_quant_dp4a.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "backend/cuda/bulk_copy.cuh"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matmul/act_quant.cuh"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kSbElems = 256;
constexpr int kChunk = 8;                 // super-blocks of each row per stage: one warp step
constexpr int kStages = 2;                // stages in flight per warp
constexpr int kMaxSmem = 227 * 1024;      // sm_90's opt-in shared memory per CTA
constexpr int64_t kSmPerSm = 228 * 1024;  // shared memory an SM holds
constexpr int kMaxCtasPerSm = 2;          // by registers
constexpr uint32_t kLowNibbles = 0x0F0F0F0Fu;

struct Dp4aArgs {
  const uint8_t* w = nullptr;
  int64_t row_bytes = 0;
  int64_t n = 0;
  int sbs = 0;                // super-blocks per row
  int64_t rows_per_warp = 1;  // a multiple of the format's kRows
  int ks = 1;                 // warps splitting each row group's chunks (then one group each)
  const __half* x = nullptr;
  const uint8_t* xq = nullptr;  // x in act_quant.cuh's form, or null: computed per CTA
  const float* bias = nullptr;
  void* out = nullptr;
  bool out_f32 = true;
};

// x in shared memory: act_quant.cuh's form, except that where the form is copied (a.xq) each
// term's super-blocks lie kXPad bytes apart, so the 32 lanes of a warp step (8 super-blocks x 4
// quarters) read distinct banks (flat, the 8 super-blocks of a load share its banks: 4-way
// conflicts). XBytes(k) bytes; term 2 at XTerm2(k, pad), the block pairs at 2 XTerm2(k, pad).
constexpr int kXPad = 16;
__host__ __device__ constexpr int64_t XBytes(int64_t k) {
  return ActQuantBytes(k) + kXPad * (k / kSbElems) * 2;
}
__device__ __forceinline__ int XTerm2(int k, int pad) { return k + pad * (k / kSbElems); }

// Shared memory: x (XBytes(k)), then each warp's stages and their mbarriers.
template <class F>
int64_t SmemBytes(int64_t k) {
  return XBytes(k) + kWarps * kStages * (F::kStageBytes + 8) + kWarps * F::kRows * 4;
}

// x into shared memory with threads [0, nthreads): copied from the form the op that wrote x left
// (a.xq; padded), or computed from x here (flat). Returns the padding.
__device__ __forceinline__ int StageX(const Dp4aArgs& a, int k, uint8_t* smem, int nthreads) {
  if (a.xq == nullptr) {
    QuantizeActivations(a.x, k, reinterpret_cast<int8_t*>(smem), threadIdx.x, nthreads);
    return 0;
  }
  constexpr int kBatch = 8;  // 16-byte loads in flight per thread
  const int kx = XTerm2(k, kXPad);
  const int n16 = static_cast<int>(ActQuantBytes(k) / 16);
  const uint4* src = reinterpret_cast<const uint4*>(a.xq);
  for (int i0 = threadIdx.x; i0 < n16; i0 += kBatch * nthreads) {
    uint4 v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (i0 + b * nthreads < n16) v[b] = src[i0 + b * nthreads];
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int u = i0 + b * nthreads;
      if (u >= n16) continue;
      // Term t's 16 elements from e (a 16-byte unit of the form is one piece of a super-block), or
      // the pairs.
      const int byte = 16 * u;
      const int t = byte >= 2 * k ? 2 : byte / k;
      const int e = t < 2 ? FormElement(byte - t * k, k) : byte - 2 * k;
      const int dst = t < 2 ? t * kx + e + kXPad * (e / kSbElems) : 2 * kx + e;
      *reinterpret_cast<uint4*>(smem + dst) = v[b];
    }
  }
  return kXPad;
}

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
  static constexpr bool kWStage = true;  // has the warp-staged form
  // From the form in global memory (act_quant.cuh: each run of 16 elements is contiguous there).
  __device__ static X LoadForm(const int8_t* xq, const float2* xs, int k, int sb, int j) {
    const int e = sb * kSbElems + 128 * (j >> 1) + 16 * (j & 1);
    X x;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int o = FormOffset(e + 32 * t, k);
      x.x1[t] = *reinterpret_cast<const int4*>(xq + o);
      x.x2[t] = *reinterpret_cast<const int4*>(xq + k + o);
      const uint4 ones = make_uint4(0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u);
      x.sum[t] = 254 * Dot16(ones, x.x1[t], 0) + Dot16(ones, x.x2[t], 0);
      x.s[t] = xs[e / 32 + t].x;
    }
    return x;
  }
  __device__ static X Load(const int8_t* xq, const float2* xs, int kx, int sb, int j, int pad) {
    const int e = sb * kSbElems + 128 * (j >> 1) + 16 * (j & 1);
    const int o = e + pad * sb;
    X x;
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      x.x1[t] = *reinterpret_cast<const int4*>(xq + o + 32 * t);
      x.x2[t] = *reinterpret_cast<const int4*>(xq + kx + o + 32 * t);
      const uint4 ones = make_uint4(0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u);
      x.sum[t] = 254 * Dot16(ones, x.x1[t], 0) + Dot16(ones, x.x2[t], 0);
      x.s[t] = xs[e / 32 + t].x;
    }
    return x;
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

// Q8_0 (34 bytes: d (F16), qs[32] int8) and Q4_0 (18 bytes: d, qs[16]; element l < 16 the low
// nibble of qs[l] - 8, element 16 + l its high nibble - 8) in groups of 8 blocks (256 elements,
// 272 / 144 bytes). Quarter j: blocks 2j and 2j + 1 (2-byte aligned in the stage).
template <bool kQ8>
struct Legacy {
  static constexpr int kBlockBytes = kQ8 ? 34 : 18;
  static constexpr int kSbBytes = 8 * kBlockBytes;
  static constexpr int kRows = kQ8 ? 2 : 4;
  static constexpr int kStageBytes = kRows * kChunk * kSbBytes;
  static constexpr bool kWStage = true;  // has the warp-staged form
  using X = X64;
  __device__ static X Load(const int8_t* xq, const float2* xs, int kx, int sb, int j, int pad) {
    return LoadX64<!kQ8>(xq, xs, kx, sb, j, pad);
  }
  // From the form in global memory (act_quant.cuh's lane-major layout).
  __device__ static X LoadForm(const int8_t* xq, const float2* xs, int k, int sb, int j) {
    return LoadX64<!kQ8, true>(xq, xs, k, sb, j, 0);
  }
  __device__ static void Rows(const uint8_t* b, int j, const X& x, float (&acc)[kRows]) {
    uint4 q[kRows][2][kQ8 ? 2 : 1];
    float d[kRows][2];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint8_t* blk = b + r * kChunk * kSbBytes + (2 * j + h) * kBlockBytes;
        d[r][h] = __half2float(*reinterpret_cast<const __half*>(blk));
        q[r][h][0] = Load16At2(blk + 2);
        if constexpr (kQ8) q[r][h][kQ8 ? 1 : 0] = Load16At2(blk + 18);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float t = 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // Block h's 32 values against activations x[2h], x[2h + 1] (16 each).
        const uint4 v0 = kQ8 ? q[r][h][0] : Nibbles(q[r][h][0], 0);
        const uint4 v1 = kQ8 ? q[r][h][kQ8 ? 1 : 0] : Nibbles(q[r][h][0], 4);
        int i = 254 * (Dot16(v0, x.x1[2 * h], 0) + Dot16(v1, x.x1[2 * h + 1], 0)) +
                Dot16(v0, x.x2[2 * h], 0) + Dot16(v1, x.x2[2 * h + 1], 0);
        if constexpr (!kQ8) i -= 8 * x.sum[h];
        // |i| <= 32 * 255 * 127 * 128 < 2^31; as F32 within 2^-24 of itself.
        t = __fmaf_rn(__fmul_rn(d[r][h], static_cast<float>(i)), h == 0 ? x.s.x : x.s.z, t);
      }
      acc[r] = __fadd_rn(acc[r], t);
    }
  }
};
using Q80 = Legacy<true>;
using Q40 = Legacy<false>;

// out[row] = v (+ bias[row]) in the output's type.
__device__ __forceinline__ void WriteRow(const Dp4aArgs& a, int64_t row, float v) {
  if (a.bias != nullptr) v = __fadd_rn(v, a.bias[row]);
  if (a.out_f32) {
    static_cast<float*>(a.out)[row] = v;
  } else {
    static_cast<__half*>(a.out)[row] = __float2half_rn(v);
  }
}

// Grid: ceil(n / ((8 / ks) rows_per_warp)) CTAs of 8 warps; warp w of CTA b owns rows
// [((8 / ks) b + w / ks) rows_per_warp, + rows_per_warp), read kRows rows at a time in chunks of
// kChunk super-blocks, of which it takes chunks w % ks, w % ks + ks, ... (ks > 1: one row group,
// the ks warps' sums added in shared memory at the end). Its stage t holds its (t % nck)-th chunk
// of row group t / nck, bulk-copied by lane 0 (kStages stages in flight, the first before waiting
// for the kernel that writes x).
template <class F>
__global__ void __launch_bounds__(kThreads, kMaxCtasPerSm)
    gemv_quant_dp4a_kernel(const Dp4aArgs a) {
  constexpr int kRows = F::kRows, kSbBytes = F::kSbBytes, kStageBytes = F::kStageBytes;
  extern __shared__ __align__(16) uint8_t smem[];
  const int k = a.sbs * kSbElems;
  int8_t* xq = reinterpret_cast<int8_t*>(smem);
  const int kx = XTerm2(k, a.xq != nullptr ? kXPad : 0);
  const float2* xs = reinterpret_cast<const float2*>(smem + 2 * kx);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int sub = lane >> 2, j = lane & 3;
  const int ks = a.ks, kw = warp % ks;
  const int64_t row0 =
      (static_cast<int64_t>(blockIdx.x) * (kWarps / ks) + warp / ks) * a.rows_per_warp;
  const int64_t rows = max(int64_t{0}, min(a.rows_per_warp, a.n - row0));
  const int chunks = (a.sbs + kChunk - 1) / kChunk;
  const int nck = kw < chunks ? (chunks - kw + ks - 1) / ks : 0;  // chunks kw, kw + ks, ...
  const int64_t stages_total = (rows + kRows - 1) / kRows * nck;
  uint8_t* wbuf = smem + XBytes(k) + warp * kStages * kStageBytes;
  const uint32_t bufs = static_cast<uint32_t>(__cvta_generic_to_shared(wbuf));
  const uint32_t bars = static_cast<uint32_t>(__cvta_generic_to_shared(
      smem + XBytes(k) + kWarps * kStages * kStageBytes + warp * kStages * 8));
  // Stage t into buffer t % kStages: kRows copies (rows past the warp's end are not copied).
  auto issue = [&](int64_t t) {
    const int64_t g = t / nck;
    const int c = kw + static_cast<int>(t - g * nck) * ks;
    const int nsb = min(kChunk, a.sbs - c * kChunk);
    const int64_t r0 = g * kRows;
    const int nr = static_cast<int>(min(int64_t{kRows}, rows - r0));
    const int s = static_cast<int>(t % kStages);
    const uint32_t bytes = static_cast<uint32_t>(nsb * kSbBytes);
    MbarExpectTx(bars + 8 * s, bytes * nr);
    for (int r = 0; r < nr; ++r) {
      BulkCopyG2S(bufs + s * kStageBytes + r * kChunk * kSbBytes,
                  a.w + (row0 + r0 + r) * a.row_bytes + c * kChunk * kSbBytes, bytes, bars + 8 * s);
    }
  };
  if (lane == 0) {
    for (int s = 0; s < kStages; ++s) MbarInit(bars + 8 * s, 1);
    FenceBarrierInit();
    for (int64_t t = 0; t < kStages && t < stages_total; ++t) issue(t);
  }
  __syncwarp();
  PdlWait();
  PdlLaunchDependents();
  const int pad = StageX(a, k, smem, kThreads);
  __syncthreads();

  float acc[kRows] = {};
  for (int64_t t = 0; t < stages_total; ++t) {
    const int64_t g = t / nck;
    const int ci = static_cast<int>(t - g * nck);
    const int c = kw + ci * ks;
    const int s = static_cast<int>(t % kStages);
    const int sb = c * kChunk + sub;
    MbarWait(bars + 8 * s, static_cast<uint32_t>((t / kStages) & 1));
    if (sb < a.sbs) {
      // Rows past the warp's end were not copied: their (stale) sums are never written.
      const typename F::X x = F::Load(xq, xs, kx, sb, j, pad);
      F::Rows(wbuf + s * kStageBytes + sub * kSbBytes, j, x, acc);
    }
    // Every lane is done with the stage: refill it with stage t + kStages.
    __syncwarp();
    if (lane == 0 && t + kStages < stages_total) {
      FenceProxyAsync();
      issue(t + kStages);
    }
    if (ks == 1 && ci == nck - 1) {  // the rows group's last chunk (warp-uniform): sum, write
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float v = acc[r];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
          v = __fadd_rn(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
        }
        acc[r] = 0.0f;
        const int64_t row = row0 + g * kRows + r;
        if (lane == r && g * kRows + r < rows) WriteRow(a, row, v);
      }
    }
  }
  if (ks == 1) return;
  // Split k: each warp's sums of its one row group, then the ks warps' added in warp order.
  float* red = reinterpret_cast<float*>(smem + XBytes(k) + kWarps * kStages * (kStageBytes + 8));
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float v = acc[r];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
    if (lane == r) red[warp * kRows + r] = v;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < (kWarps / ks) * kRows; i += kThreads) {
    const int grp = i / kRows, r = i % kRows;
    const int64_t row = (static_cast<int64_t>(blockIdx.x) * (kWarps / ks) + grp) * kRows + r;
    if (row >= a.n) continue;
    float v = 0.0f;
    for (int w = 0; w < ks; ++w) v = __fadd_rn(v, red[(grp * ks + w) * kRows + r]);
    WriteRow(a, row, v);
  }
}

// The form for activations already in act_quant.cuh's form (a.xq) and Q4_K / Q5_K weights
// (16-byte aligned super-blocks): with no activations to quantize per CTA, CTAs are small and
// many, in waves, as in the F16 GEMV. Each warp takes kRows rows and all their chunks (or every
// a.ks-th: split k); its lanes load their weight bytes straight from global memory into registers
// (the first chunk's before waiting for the kernel that writes x) and the activations through L1.
// A row's sum: each lane's chunks in order, then the fixed butterfly, then (split k) the warps'
// sums in warp order.
constexpr int kSmallWarps = 4;
// Four CTAs an SM: at most 128 registers a thread.
template <class F>
__global__ void __launch_bounds__(kSmallWarps * 32, 4)
    gemv_quant_dp4a_small_kernel(const Dp4aArgs a) {
  constexpr int kRows = F::kRows, kSbBytes = F::kSbBytes;
  const int k = a.sbs * kSbElems;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int sub = lane >> 2, j = lane & 3;
  // a.ks warps (a divisor of kSmallWarps; Launch takes 1 or 2) share a row group, taking its
  // chunks kw, kw + ks, ..., their sums added in warp order.
  const int ks = a.ks, kw = warp % ks;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * (kSmallWarps / ks) + warp / ks) * kRows;
  const int nr = static_cast<int>(max(int64_t{0}, min(int64_t{kRows}, a.n - row0)));
  const int chunks = nr > 0 ? (a.sbs + kChunk - 1) / kChunk : 0;  // none past the last row
  const int8_t* xq = reinterpret_cast<const int8_t*>(a.xq);
  const float2* xs = reinterpret_cast<const float2*>(a.xq + 2 * static_cast<int64_t>(k));
  typename F::W w;
  auto load = [&](int c) {
    const int sb = c * kChunk + sub;
    if (sb < a.sbs) {
      F::template LoadW<true>(a.w + row0 * a.row_bytes + int64_t{sb} * kSbBytes, a.row_bytes, nr, j,
                              w);
    }
  };
  if (kw < chunks) load(kw);
  PdlWait();
  PdlLaunchDependents();
  float acc[kRows] = {};
  for (int c = kw; c < chunks; c += ks) {
    if (c > kw) load(c);
    const int sb = c * kChunk + sub;
    if (sb < a.sbs) F::Compute(w, j, F::LoadForm(xq, xs, k, sb, j), acc);
  }
  if (ks == 1) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float v = WarpSum(acc[r]);
      if (lane == r && r < nr) WriteRow(a, row0 + r, v);
    }
    return;
  }
  // Split k: each warp's row sums, then the group's ks warps' added in warp order.
  __shared__ float red[kSmallWarps][kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const float v = WarpSum(acc[r]);
    if (lane == r) red[warp][r] = v;
  }
  __syncthreads();
  if (kw == 0 && lane < nr) {
    float v = 0.0f;
    for (int i = 0; i < ks; ++i) v = __fadd_rn(v, red[warp + i][lane]);
    WriteRow(a, row0 + lane, v);
  }
}

// The warp-staged form, for activations already in act_quant.cuh's form (a.xq) and Q8_0 / Q4_0 /
// Q6_K weights (blocks of 34 / 18 / 210 bytes: not 16-byte aligned, so not loaded straight into
// registers): small CTAs of kWsWarps warps, many in waves, as in the small-CTA form; each warp
// takes kRows rows and all their chunks, which stream through its own kWsStages stages (bulk
// copies by lane 0, the first before waiting for the kernel that writes x), and reads x through
// L1. A row's sum: each lane's chunks in order, then the fixed butterfly (the staged kernel's).
constexpr int kWsWarps = 4;
constexpr int kWsStages = 3;
// A stage's stride: Load16At2 reads up to 4 bytes past the last block of a stage.
template <class F>
constexpr int WsStageBytes() {
  return (F::kStageBytes + 16 + 15) / 16 * 16;
}
template <class F>
constexpr int WsSmemBytes() {
  return kWsWarps * kWsStages * (WsStageBytes<F>() + 8);
}
template <class F>
__global__ void __launch_bounds__(kWsWarps * 32, 4)
    gemv_quant_dp4a_wstage_kernel(const Dp4aArgs a) {
  constexpr int kRows = F::kRows, kSbBytes = F::kSbBytes, kStride = WsStageBytes<F>();
  extern __shared__ __align__(16) uint8_t smem[];
  const int k = a.sbs * kSbElems;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int sub = lane >> 2, j = lane & 3;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kWsWarps + warp) * kRows;
  const int nr = static_cast<int>(max(int64_t{0}, min(int64_t{kRows}, a.n - row0)));
  const int chunks = nr > 0 ? (a.sbs + kChunk - 1) / kChunk : 0;  // none past the last row
  uint8_t* wbuf = smem + warp * kWsStages * kStride;
  const uint32_t bufs = static_cast<uint32_t>(__cvta_generic_to_shared(wbuf));
  const uint32_t bars = static_cast<uint32_t>(
      __cvta_generic_to_shared(smem + kWsWarps * kWsStages * kStride + warp * kWsStages * 8));
  // Chunk c into stage c % kWsStages: nr copies.
  auto issue = [&](int c) {
    const int nsb = min(kChunk, a.sbs - c * kChunk);
    const int s = c % kWsStages;
    const uint32_t bytes = static_cast<uint32_t>(nsb * kSbBytes);
    MbarExpectTx(bars + 8 * s, bytes * nr);
    for (int r = 0; r < nr; ++r) {
      BulkCopyG2S(bufs + s * kStride + r * kChunk * kSbBytes,
                  a.w + (row0 + r) * a.row_bytes + c * kChunk * kSbBytes, bytes, bars + 8 * s);
    }
  };
  if (lane == 0) {
    for (int s = 0; s < kWsStages; ++s) MbarInit(bars + 8 * s, 1);
    FenceBarrierInit();
    for (int c = 0; c < kWsStages && c < chunks; ++c) issue(c);
  }
  __syncwarp();
  PdlWait();
  PdlLaunchDependents();
  const int8_t* xq = reinterpret_cast<const int8_t*>(a.xq);
  const float2* xs = reinterpret_cast<const float2*>(a.xq + 2 * static_cast<int64_t>(k));
  float acc[kRows] = {};
  for (int c = 0; c < chunks; ++c) {
    const int s = c % kWsStages;
    const int sb = c * kChunk + sub;
    MbarWait(bars + 8 * s, static_cast<uint32_t>((c / kWsStages) & 1));
    if (sb < a.sbs) {
      // Rows past nr were not copied: their (stale) sums are never written.
      F::Rows(wbuf + s * kStride + sub * kSbBytes, j, F::LoadForm(xq, xs, k, sb, j), acc);
    }
    // Every lane is done with the stage: refill it with chunk c + kWsStages.
    __syncwarp();
    if (lane == 0 && c + kWsStages < chunks) {
      FenceProxyAsync();
      issue(c + kWsStages);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float v = acc[r];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xFFFFFFFFu, v, off));
    if (lane == r && r < nr) WriteRow(a, row0 + r, v);
  }
}

// Q6_K matrices of this many bytes or more stay on the staged kernel (the 8B's 430 MB output
// matrix: 3.74 TB/s staged at 3 rows a stage, 3.63 warp-staged).
constexpr int64_t kQ6WStageBelowBytes = int64_t{256} << 20;

// Whether the format has the warp-staged form (Q8_0, Q4_0, Q6_K).
template <class F>
constexpr bool kHasWStage = requires {
  F::kWStage;
};

// Whether the format has the small-CTA form (its part loads weights from global memory).
template <class F>
constexpr bool kHasSmall = requires {
  typename F::W;
};

// Matrices of fewer bytes than this take one CTA per SM: a second kernel's CTAs (the next matmul,
// launched as a dependent) then fit beside them and start their weight copies early. Measured on
// the H100 (bench/results/gemv-dp4a-ab-h100-2026-11-26-s12.txt): Q4_K 4096 x 4096 (9.4 MB) 7.3
// -> 5.7 us back to back, the 1024-row matrices unchanged; with every matrix at one CTA per SM,
// 28672 x 4096 lost 10% and tg128 fell from 323 to 308 tokens/s.
constexpr int64_t kOneCtaBelowBytes = int64_t{12} << 20;

// With the activations' form, matrices of this many bytes or more take the small-CTA form (Q4_K,
// Q5_K) or the warp-staged one (Q8_0, Q4_0, Q6_K); smaller ones, and any without the form, the
// staged kernel. H200, tg128 of the 8B Q4_K_M (bench/results/gemv-small-min-h200-*-s17.txt): from
// 12 MB 477.5 / 476.9 tokens/s, from 8 MB (attn_q and attn_output small, the 1024-row attn_k and
// attn_v staged) 473.4 / 469.1, from 2 MB (every matrix of the 8B) 481.8 / 480.7; Q8_0 (every
// matrix over 12 MB) unchanged. On the H100, before the form was lane-major, the small-CTA form for
// every matrix was the slower (s13: 367 against 376).
constexpr int64_t kFormSmallFromBytes = int64_t{2} << 20;

// Rows per warp (a multiple of F::kRows): the fewest that keep every CTA resident at once (one
// wave), so each CTA quantizes the activations once for as many rows as possible; for narrow
// matrices split k instead (a.ks).
template <class F>
Status Launch(Dp4aArgs a, int sms, cudaStream_t stream) {
  if constexpr (kHasSmall<F>) {
    if (a.xq != nullptr && a.n * a.row_bytes >= kFormSmallFromBytes) {
      // Two warps split each row group's chunks where rows are long (k >= 8192) or the matrix is
      // 32 MB or more (H100, forge bench --gemv with the form: Q4_K 4096 x 14336 2.07 -> 2.32
      // TB/s, 28672 x 4096 2.56 -> 2.59, 14336 x 4096 2.27 -> 2.31; 6144 x 4096 lost 5%, 4 warps
      // a group lost at k = 4096; tg128 of the 8B Q4_K_M +1%).
      const int chunks = (a.sbs + kChunk - 1) / kChunk;
      a.ks = chunks >= 2 && (a.sbs >= 32 || a.n * a.row_bytes >= (int64_t{32} << 20)) ? 2 : 1;
      const int64_t per_cta = (kSmallWarps / a.ks) * F::kRows;
      const int64_t blocks = (a.n + per_cta - 1) / per_cta;
      CUDA_RETURN_IF_ERROR(LaunchDependent(gemv_quant_dp4a_small_kernel<F>,
                                           dim3(static_cast<unsigned>(blocks)),
                                           dim3(kSmallWarps * 32), 0, stream, a));
      CUDA_RETURN_IF_LAUNCH_ERROR("gemv_quant_dp4a_small_kernel");
      return Status::Ok();
    }
  }
  if constexpr (kHasWStage<F>) {
    // H200, tg128 of the 8B against the staged kernel with the form: Q8_0 350 -> 370 tokens/s,
    // Q4_0 476 -> 497, Q6_K 347 -> 387, Q4_K_M 463 -> 476 (bench/results/gemv-wstage-ab-*).
    // Q6_K's 430 MB output matrix stays staged (3.74 TB/s there, 3.63 warp-staged).
    const int64_t bytes = a.n * a.row_bytes;
    const bool taken = F::kSbBytes == 210 ? bytes < kQ6WStageBelowBytes : true;
    if (a.xq != nullptr && bytes >= kFormSmallFromBytes && taken) {
      auto* kernel = gemv_quant_dp4a_wstage_kernel<F>;
      static std::atomic<uint64_t> smem_set{0};
      CUDA_RETURN_IF_ERROR(SetMaxDynamicSmemOnce(kernel, WsSmemBytes<F>(), &smem_set));
      const int64_t per_cta = int64_t{kWsWarps} * F::kRows;
      const int64_t blocks = (a.n + per_cta - 1) / per_cta;
      CUDA_RETURN_IF_ERROR(LaunchDependent(kernel, dim3(static_cast<unsigned>(blocks)),
                                           dim3(kWsWarps * 32), WsSmemBytes<F>(), stream, a));
      CUDA_RETURN_IF_LAUNCH_ERROR("gemv_quant_dp4a_wstage_kernel");
      return Status::Ok();
    }
  }
  const int64_t smem = SmemBytes<F>(static_cast<int64_t>(a.sbs) * kSbElems);
  const int64_t ctas = a.n * a.row_bytes < kOneCtaBelowBytes
                           ? 1
                           : std::clamp<int64_t>(kSmPerSm / (smem + 1024), 1, kMaxCtasPerSm);
  const int64_t warps = sms * ctas * kWarps;
  const int64_t per_warp = std::max<int64_t>(1, (a.n + warps - 1) / warps);
  a.rows_per_warp = (per_warp + F::kRows - 1) / F::kRows * F::kRows;
  auto blocks_of = [&](int ks) {
    const int64_t rows_per_cta = (kWarps / ks) * a.rows_per_warp;
    return (a.n + rows_per_cta - 1) / rows_per_cta;
  };
  // Fewer CTAs than SMs (narrow matrices): warps split each row group's chunks instead, one group
  // each, 2 to 8 ways, as far as the CTAs still fit in one wave of the resident slots.
  const int chunks = (a.sbs + kChunk - 1) / kChunk;
  a.ks = 1;
  if (blocks_of(1) < sms && chunks > 1) {
    a.rows_per_warp = F::kRows;
    while (a.ks * 2 <= std::min(kWarps, chunks) && blocks_of(a.ks * 2) <= ctas * sms) a.ks *= 2;
  }
  const int64_t blocks = blocks_of(a.ks);
  auto* kernel = gemv_quant_dp4a_kernel<F>;
  static std::atomic<uint64_t> smem_set{0};
  CUDA_RETURN_IF_ERROR(SetMaxDynamicSmemOnce(kernel, kMaxSmem, &smem_set));
  CUDA_RETURN_IF_ERROR(LaunchDependent(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                                       static_cast<size_t>(smem), stream, a));
  CUDA_RETURN_IF_LAUNCH_ERROR("gemv_quant_dp4a_kernel");
  return Status::Ok();
}

// Q6_K's rows a stage: 3 where the matrix takes two staged CTAs an SM (kOneCtaBelowBytes or more)
// and rows are shorter than 8192 elements, else 2 (3 rows share the activations' loads and sums
// over more rows). H200, with the form (bench/results/gemv-q6k-rows-ab-*): 3 rows: 128256 x 4096
// (the 8B's output) 3.15 -> 3.74 TB/s, 28672 x 4096 2.75 -> 2.95, 14336 x 4096 2.27 -> 2.36,
// 4096 x 4096 1.60 -> 1.75; 4096 x 14336 at 3 rows (two CTAs then fill an SM's shared memory, and
// the next kernel cannot start beside them) 2.29 -> 2.03, so it stays at 2, as do matrices under
// kOneCtaBelowBytes (1024 x 4096: 0.98 -> 0.91 at 3).
bool Q6KThreeRows(const WeightView& w) {
  return w.rows * w.row_bytes >= kOneCtaBelowBytes && w.cols < 8192;
}

// fn(F{}) for the format's part F, or fn(nullptr) where the format has none here.
template <class Fn>
auto WithFormat(const WeightView& w, Fn&& fn) {
  switch (w.type) {
    case GgmlType::kQ4_K:
      return fn(Q4K{});
    case GgmlType::kQ5_K:
      return fn(Q5K{});
    case GgmlType::kQ6_K:
      return Q6KThreeRows(w) ? fn(Q6KR<3>{}) : fn(Q6KR<2>{});
    case GgmlType::kQ8_0:
      return fn(Q80{});
    case GgmlType::kQ4_0:
      return fn(Q40{});
    default:
      return fn(nullptr);
  }
}

}  // namespace

namespace {

// Whether the kernel takes a matmul of this shape (the pointer checks aside).
bool TakesShape(const WeightView& w, int64_t m, DType x_type, DType out_type) {
  // The format's super-block bytes and shared memory at this k; 0 where it has no part here.
  const auto [sb_bytes, smem] = WithFormat(w, [&](auto f) -> std::pair<int64_t, int64_t> {
    using F = decltype(f);
    if constexpr (std::is_same_v<F, std::nullptr_t>) {
      return {0, 0};
    } else {
      return {F::kSbBytes, SmemBytes<F>(w.cols)};
    }
  });
  if (sb_bytes == 0 || m != 1 || x_type != DType::kF16) return false;
  if (out_type != DType::kF32 && out_type != DType::kF16) return false;
  if (w.rows < 1 || w.rows > (int64_t{1} << 31) - 1) return false;
  if (w.cols < kSbElems || w.cols % kSbElems != 0 || w.cols > (int64_t{1} << 24)) return false;
  // Q6_K: whole chunks, so every bulk copy is a multiple of 16 bytes from a 16-byte boundary.
  if (w.type == GgmlType::kQ6_K && w.cols % (kChunk * kSbElems) != 0) return false;
  // Q5_K: faster than the register-decoding GEMV at k = 4096 (20.1 against 24.8 us on 14336 x
  // 4096), slower at k = 14336 (24.3 against 21.4 us on 4096 x 14336; gemv-h200-2026-11-22-s8h).
  if (w.type == GgmlType::kQ5_K && w.cols >= 8192) return false;
  if (w.row_bytes != w.cols / kSbElems * sb_bytes) return false;
  return smem <= kMaxSmem;
}

}  // namespace

bool GemvQuantDp4aApplies(const MatmulParams& p) {
  if (!TakesShape(p.w, p.m, p.x_type, p.out_type)) return false;
  if (p.w.data == nullptr || p.x == nullptr || p.out == nullptr) return false;
  if (p.xq != nullptr && !IsAligned(p.xq, 16)) return false;
  return IsAligned(p.w.data, 16) && IsAligned(p.x, 16) && IsAligned(p.out, DTypeSize(p.out_type));
}

int64_t GemvQuantDp4aActivationBytes(const WeightView& w, int64_t m, DType x_type, DType out_type) {
  return TakesShape(w, m, x_type, out_type) ? ActQuantBytes(w.cols) : 0;
}

Status gemv_quant_dp4a_cuda(const MatmulParams& p, cudaStream_t stream) {
  if (!GemvQuantDp4aApplies(p)) {
    return InvalidArgumentError("gemv_quant_dp4a_cuda: " + std::string(TypeName(p.w.type)) + " [" +
                                std::to_string(p.w.rows) + ", " + std::to_string(p.w.cols) +
                                "] with m=" + std::to_string(p.m) + " is outside the DP4A GEMV");
  }
  Dp4aArgs a;
  a.w = p.w.data;
  a.row_bytes = p.w.row_bytes;
  a.n = p.w.rows;
  a.sbs = static_cast<int>(p.w.cols / kSbElems);
  a.x = static_cast<const __half*>(p.x);
  a.xq = static_cast<const uint8_t*>(p.xq);
  a.bias = p.bias;
  a.out = p.out;
  a.out_f32 = p.out_type == DType::kF32;
  ASSIGN_OR_RETURN(const int sms, CurrentSmCount());
  return WithFormat(p.w, [&](auto f) -> Status {
    using F = decltype(f);
    if constexpr (std::is_same_v<F, std::nullptr_t>) {
      return InternalError("gemv_quant_dp4a_cuda: no part for " + std::string(TypeName(p.w.type)));
    } else {
      return Launch<F>(a, sms, stream);
    }
  });
}

}  // namespace forge::cuda
