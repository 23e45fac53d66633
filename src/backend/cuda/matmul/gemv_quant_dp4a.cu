// gemv_quant_dp4a_cuda (design in gemv_quant_dp4a.h): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K,
// Q4_K, Q5_K and Q6_K weights times one F16 activation row quantized to two int8 terms, with DP4A.
// One stage pipeline (the kernel template) for every format; each format's part (Q45K, Q6KR,
// Legacy, Q23K: gemv_quant_dp4a_formats.cuh) reads its blocks from a stage. Formats are handled in
// units of 256 elements ("super-blocks": 8 blocks of the legacy formats).
#include "backend/cuda/matmul/gemv_quant_dp4a.h"
#include "backend/cuda/matmul/matmul_args.h"

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
#include "backend/cuda/act_quant/act_quant.cuh"
#include "backend/cuda/matmul/gemv_quant_dp4a_formats.cuh"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

using dp4a::kChunk;
using dp4a::kSbElems;
using dp4a::Q2K;
using dp4a::Q3K;
using dp4a::Q40;
using dp4a::Q41;
using dp4a::Q4K;
using dp4a::Q50;
using dp4a::Q51;
using dp4a::Q5K;
using dp4a::Q6KR;
using dp4a::Q80;

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kStages = 2;                // stages in flight per warp
constexpr int kMaxSmem = 227 * 1024;      // sm_90's opt-in shared memory per CTA
constexpr int64_t kSmPerSm = 228 * 1024;  // shared memory an SM holds
constexpr int kMaxCtasPerSm = 2;          // by registers

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

// A warp's stage ring (the staged and warp-staged kernels): lane 0 initializes its kN mbarriers
// (at bars, 8 bytes apart) and issues its first min(kN, total) stages, whose weights depend on no
// earlier kernel; then the warp waits for the kernel that writes x (pdl.cuh).
template <int kN, class Int, class Issue>
__device__ __forceinline__ void StartStages(int lane, uint32_t bars, Int total, Issue& issue) {
  if (lane == 0) {
    for (int s = 0; s < kN; ++s) MbarInit(bars + 8 * s, 1);
    FenceBarrierInit();
    for (Int t = 0; t < kN && t < total; ++t) issue(t);
  }
  __syncwarp();
  PdlWait();
  PdlLaunchDependents();
}

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
  // Stage t into buffer t % kStages: kRows copies (rows past the warp's end are not copied), with
  // an evict-first L2 policy (gemv_quant_dp4a.h).
  const uint64_t evict_first = CreatePolicyEvictFirst();
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
                  a.w + (row0 + r0 + r) * a.row_bytes + c * kChunk * kSbBytes, bytes, bars + 8 * s,
                  evict_first);
    }
  };
  StartStages<kStages>(lane, bars, stages_total, issue);
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

// The form for activations already in act_quant.cuh's form (a.xq) and Q4_K weights (16-byte
// aligned super-blocks) of 16 MB or more (TakesWStage): with no activations to quantize per CTA,
// CTAs are small and many, in waves, as in the F16 GEMV. Each warp takes kRows rows and all their
// chunks (or every a.ks-th: split k); its lanes load their weight bytes straight from global memory
// into registers (the first chunk's before waiting for the kernel that writes x) and the
// activations through L1. A row's sum: each lane's chunks in order, then the fixed butterfly, then
// (split k) the warps' sums in warp order.
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

// The warp-staged form, for activations already in act_quant.cuh's form (a.xq) and the matrices
// TakesWStage picks: the legacy formats, Q2_K, Q3_K and Q6_K (blocks of 18 to 34, 84, 110 and 210
// bytes: not 16-byte aligned, so not loaded straight into registers), Q5_K, and Q4_K under 16 MB
// (measured faster there than the small-CTA form): small CTAs of kWsWarps warps, many in waves, as
// in the small-CTA form; each warp takes kRows rows and all their chunks, which stream through its
// own kWsStages stages (bulk copies by lane 0, the first before waiting for the kernel that writes
// x), and reads x through L1. A row's sum: each lane's chunks in order, then the fixed butterfly
// (the staged kernel's).
constexpr int kWsWarps = 4;
constexpr int kWsStages = 3;
// A stage's stride: the parts' unaligned loads read up to 6 bytes past the last block of a stage
// (Q3_K's Load16At2 of its last 14 bytes).
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
  // Chunk c into stage c % kWsStages: nr copies, with an evict-first L2 policy.
  const uint64_t evict_first = CreatePolicyEvictFirst();
  auto issue = [&](int c) {
    const int nsb = min(kChunk, a.sbs - c * kChunk);
    const int s = c % kWsStages;
    const uint32_t bytes = static_cast<uint32_t>(nsb * kSbBytes);
    MbarExpectTx(bars + 8 * s, bytes * nr);
    for (int r = 0; r < nr; ++r) {
      BulkCopyG2S(bufs + s * kStride + r * kChunk * kSbBytes,
                  a.w + (row0 + r) * a.row_bytes + c * kChunk * kSbBytes, bytes, bars + 8 * s,
                  evict_first);
    }
  };
  StartStages<kWsStages>(lane, bars, chunks, issue);
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

// Q4_K matrices under this many bytes take the warp-staged form, larger ones the small-CTA form.
// H200 (bench/results/gemv-q4k-wstage-ab-h200-*-s18.txt), with the form: warp-staged 4096 x 4096
// 1.78-1.81 -> 1.88-2.31 TB/s, 6144 x 4096 2.39 -> 2.41-2.59, but 14336 x 4096 2.82-2.85 -> 2.67,
// 4096 x 14336 3.00 -> 2.38-2.40, 28672 x 4096 3.17-3.25 -> 3.13-3.14; tg128 of the 8B Q4_K_M
// 479.5-485.2 (small-CTA everywhere) -> 489.9-495.7 (below 10 MB) and 491.2-492.6 (below 16 MB;
// also q|k and the fused qkv).
constexpr int64_t kQ4KWStageBelowBytes = int64_t{16} << 20;

// Whether the format takes the small-CTA form (its part loads weights from global memory): Q4_K.
// Q5_K's part can too, but the warp-staged form measured faster for it at every size.
template <class F>
constexpr bool kHasSmall = std::is_same_v<F, Q4K>;

template <class F>
constexpr bool kIsQ6K = false;
template <int kR>
constexpr bool kIsQ6K<Q6KR<kR>> = true;

// Whether the format has the warp-staged form (its part reads the form from global memory).
template <class F>
constexpr bool kHasWStage = requires {
  &F::LoadForm;
};

// Whether a matrix of `bytes` (with the form, kFormSmallFromBytes or more) takes the warp-staged
// form: the legacy formats, Q2_K and Q3_K always; Q6_K below kQ6WStageBelowBytes; Q5_K always
// (H200, against the small-CTA form: 14336 x 4096 2.36 -> 2.42-2.48 TB/s, 4096 x 4096 1.79-1.80
// -> 2.27-2.29, 6144 x 4096 2.15-2.16 -> 2.35, 28672 x 4096 2.53-2.57 -> 2.95-2.97); Q4_K below
// kQ4KWStageBelowBytes.
template <class F>
bool TakesWStage(int64_t bytes) {
  if constexpr (!kHasWStage<F>) {
    return false;
  } else if constexpr (kHasSmall<F>) {
    return bytes < kQ4KWStageBelowBytes;
  } else {
    return kIsQ6K<F> ? bytes < kQ6WStageBelowBytes : true;
  }
}

// Matrices of fewer bytes than this take one CTA per SM: a second kernel's CTAs (the next matmul,
// launched as a dependent) then fit beside them and start their weight copies early. Measured on
// the H100 (bench/results/gemv-dp4a-ab-h100-2026-11-26-s12.txt): Q4_K 4096 x 4096 (9.4 MB) 7.3
// -> 5.7 us back to back, the 1024-row matrices unchanged; with every matrix at one CTA per SM,
// 28672 x 4096 lost 10% and tg128 fell from 323 to 308 tokens/s.
constexpr int64_t kOneCtaBelowBytes = int64_t{12} << 20;

// With the activations' form, matrices of this many bytes or more take the warp-staged form
// (TakesWStage) or the small-CTA one (the other Q4_K matrices); smaller ones, and any without the
// form, the staged kernel. H200, tg128 of the 8B Q4_K_M
// (bench/results/gemv-small-min-h200-*-s17.txt): from 12 MB 477.5 / 476.9 tokens/s, from 8 MB
// (attn_q and attn_output small, the 1024-row attn_k and attn_v staged) 473.4 / 469.1, from 2 MB
// (every matrix of the 8B) 481.8 / 480.7; Q8_0 (every matrix over 12 MB) unchanged. On the H100,
// before the form was lane-major, the small-CTA form for every matrix was the slower (s13: 367
// against 376).
constexpr int64_t kFormSmallFromBytes = int64_t{2} << 20;

// Rows per warp (a multiple of F::kRows): the fewest that keep every CTA resident at once (one
// wave), so each CTA quantizes the activations once for as many rows as possible; for narrow
// matrices split k instead (a.ks).
template <class F>
Status Launch(Dp4aArgs a, int sms, cudaStream_t stream) {
  const int64_t bytes = a.n * a.row_bytes;
  const bool form = a.xq != nullptr && bytes >= kFormSmallFromBytes;
  if constexpr (kHasWStage<F>) {
    // H200, tg128 of the 8B against the staged kernel with the form: Q8_0 350 -> 370 tokens/s,
    // Q4_0 476 -> 497, Q6_K 347 -> 387, Q4_K_M 463 -> 476 (bench/results/gemv-wstage-ab-*).
    if (form && TakesWStage<F>(bytes)) {
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
  if constexpr (kHasSmall<F>) {
    if (form) {
      // Two warps split each row group's chunks where rows are long (k >= 8192) or the matrix is
      // 32 MB or more (H100, forge bench --gemv with the form: Q4_K 4096 x 14336 2.07 -> 2.32
      // TB/s, 28672 x 4096 2.56 -> 2.59, 14336 x 4096 2.27 -> 2.31; 6144 x 4096 lost 5%, 4 warps
      // a group lost at k = 4096; tg128 of the 8B Q4_K_M +1%).
      const int chunks = (a.sbs + kChunk - 1) / kChunk;
      a.ks = chunks >= 2 && (a.sbs >= 32 || bytes >= (int64_t{32} << 20)) ? 2 : 1;
      const int64_t per_cta = (kSmallWarps / a.ks) * F::kRows;
      const int64_t blocks = (a.n + per_cta - 1) / per_cta;
      CUDA_RETURN_IF_ERROR(LaunchDependent(gemv_quant_dp4a_small_kernel<F>,
                                           dim3(static_cast<unsigned>(blocks)),
                                           dim3(kSmallWarps * 32), 0, stream, a));
      CUDA_RETURN_IF_LAUNCH_ERROR("gemv_quant_dp4a_small_kernel");
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
    case GgmlType::kQ4_1:
      return fn(Q41{});
    case GgmlType::kQ5_0:
      return fn(Q50{});
    case GgmlType::kQ5_1:
      return fn(Q51{});
    case GgmlType::kQ2_K:
      return fn(Q2K{});
    case GgmlType::kQ3_K:
      return fn(Q3K{});
    default:
      return fn(nullptr);
  }
}

}  // namespace

namespace {

// Why the kernel does not take a matmul of this shape (the pointer checks aside); null where it
// does.
const char* ShapeWhyNot(const WeightView& w, int64_t m, DType x_type, DType out_type) {
  // The format's super-block bytes and shared memory at this k; 0 where it has no part here.
  const auto [sb_bytes, smem] = WithFormat(w, [&](auto f) -> std::pair<int64_t, int64_t> {
    using F = decltype(f);
    if constexpr (std::is_same_v<F, std::nullptr_t>) {
      return {0, 0};
    } else {
      return {F::kSbBytes, SmemBytes<F>(w.cols)};
    }
  });
  if (sb_bytes == 0) return "format not Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q2_K..Q6_K";
  if (m != 1) return "m != 1";
  if (x_type != DType::kF16) return "x not F16";
  if (out_type != DType::kF32 && out_type != DType::kF16) return "out not F32/F16";
  if (w.rows < 1 || w.rows > (int64_t{1} << 31) - 1) return "rows outside 1..2^31-1";
  if (w.cols < kSbElems || w.cols % kSbElems != 0 || w.cols > (int64_t{1} << 24)) {
    return "k not a multiple of 256 up to 2^24";
  }
  // Every bulk copy is a multiple of 16 bytes from a 16-byte boundary: Q6_K and Q3_K (210 and 110
  // bytes a super-block) whole chunks, Q2_K (84) whole groups of 4 super-blocks.
  if ((w.type == GgmlType::kQ6_K || w.type == GgmlType::kQ3_K) &&
      w.cols % (kChunk * kSbElems) != 0) {
    return "Q6_K/Q3_K: k not a multiple of 2048";
  }
  if (w.type == GgmlType::kQ2_K && w.cols % (4 * kSbElems) != 0) {
    return "Q2_K: k not a multiple of 1024";
  }
  // Q5_K: faster than the register-decoding GEMV at k = 4096 (20.1 against 24.8 us on 14336 x
  // 4096), slower at k = 14336 (24.3 against 21.4 us on 4096 x 14336; gemv-h200-2026-11-22-s8h).
  if (w.type == GgmlType::kQ5_K && w.cols >= 8192) return "Q5_K: k >= 8192 (reg GEMV faster)";
  if (w.row_bytes != w.cols / kSbElems * sb_bytes) return "rows not as stored";
  if (smem > kMaxSmem) return "shared memory";
  return nullptr;
}

}  // namespace

const char* GemvQuantDp4aWhyNot(const MatmulParams& p) {
  if (const char* why = ShapeWhyNot(p.w, p.m, p.x_type, p.out_type)) return why;
  if (p.w.data == nullptr || p.x == nullptr || p.out == nullptr) return "null pointer";
  if (p.xq != nullptr && !IsAligned(p.xq, 16)) return "xq not 16-byte aligned";
  if (!IsAligned(p.w.data, 16) || !IsAligned(p.x, 16)) return "w or x not 16-byte aligned";
  if (!IsAligned(p.out, DTypeSize(p.out_type))) return "out misaligned";
  return nullptr;
}

bool GemvQuantDp4aApplies(const MatmulParams& p) { return GemvQuantDp4aWhyNot(p) == nullptr; }

int64_t GemvQuantDp4aActivationBytes(const WeightView& w, int64_t m, DType x_type, DType out_type) {
  return ShapeWhyNot(w, m, x_type, out_type) == nullptr ? ActQuantBytes(w.cols) : 0;
}

Status gemv_quant_dp4a_cuda(const MatmulParams& p, cudaStream_t stream) {
  if (!GemvQuantDp4aApplies(p)) {
    return InvalidArgumentError("gemv_quant_dp4a_cuda: " + std::string(TypeName(p.w.type)) + " [" +
                                std::to_string(p.w.rows) + ", " + std::to_string(p.w.cols) +
                                "] with m=" + std::to_string(p.m) + " is outside the DP4A GEMV");
  }
  Dp4aArgs a;
  UnpackMatmul(p, a);
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
