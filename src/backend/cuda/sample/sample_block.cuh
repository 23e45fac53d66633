// sample_block: what the Sample kernel's one block per row shares (sample_cuda.cu): its sizes and
// shared memory, the float order keys and packed (key, id) words, the CPU's exp polynomial and the
// row's weights, and block-wide reductions and scans. Included by sample_cuda.cu only.
#pragma once

#include <cfloat>
#include <climits>
#include <cstdint>

#include "backend/cpu/sample/sample.h"

namespace forge::cuda::sample_block {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;
// Histogram bins: two per thread, so FindBin scans them with one block scan.
constexpr int kBins = 2 * kThreads;
// Tokens the block gathers and sorts in shared memory (8 bytes each).
constexpr int kCap = 4096;
// Count buckets: 64 per unit of logit below the max (32 units, then one bucket for the rest).
constexpr float kCountScale = 64.0f;
// Mass buckets: 32 per nat of probability ratio below the max, as the CPU's top_p buckets.
constexpr float kMassScale = 32.0f;
// OrderKey(-inf).
constexpr int kNegInfKey = static_cast<int>(0x807FFFFFu);

struct Shared {
  // The histograms and the gathered tokens are never live at the same time.
  union {
    struct {
      int count[kBins];
      double mass[kBins];
    } hist;
    unsigned long long packs[kCap];
  } u;
  double scr_d[kWarps + 1];  // block reductions and scans, one array per type
  int scr_i[kWarps + 1];
  unsigned long long scr_u[kWarps + 1];
  double seg_sum[kWarps];              // dense draw: kept weight per warp segment
  int tie_ids[kWarps][kSampleMaxTop];  // top logprobs: the first tied ids of each warp segment
  int tie_count[kWarps];
  int n_gathered;
  int fb_bin, fb_last;  // FindBin's results
  double fb_cum, fb_last_cum;
  int choice, token;  // dense draw broadcasts
  double base, target;
};

__device__ __forceinline__ int Lane() { return static_cast<int>(threadIdx.x & 31); }
__device__ __forceinline__ int Warp() { return static_cast<int>(threadIdx.x >> 5); }
__device__ __forceinline__ unsigned LanesBelow() { return (1u << Lane()) - 1u; }

// sampling::OrderKey: an int with the float's order (-0 == +0); not for NaN. No float arithmetic,
// so nothing depends on denormal flushing.
__device__ __forceinline__ int OrderKey(float v) {
  int b = __float_as_int(v);
  if (b == INT_MIN) b = 0;  // -0 -> +0
  return b ^ ((b >> 31) & 0x7FFFFFFF);
}

__device__ __forceinline__ float FromOrderKey(int k) {
  return __int_as_float(k ^ ((k >> 31) & 0x7FFFFFFF));
}

// Tokens in shared memory as one 64-bit word. By logit: a larger word is a larger logit, then a
// lower id. By id: a larger word is a lower id. Zero (the padding) is below every token.
__device__ __forceinline__ unsigned long long PackByLogit(int key, int id) {
  return (static_cast<unsigned long long>(static_cast<unsigned>(key) ^ 0x80000000u) << 32) |
         static_cast<unsigned>(~id);
}
__device__ __forceinline__ int PackedKey(unsigned long long p) {
  return static_cast<int>(static_cast<unsigned>(p >> 32) ^ 0x80000000u);
}
__device__ __forceinline__ int PackedId(unsigned long long p) {
  return ~static_cast<int>(static_cast<unsigned>(p));
}
__device__ __forceinline__ unsigned long long PackById(int key, int id) {
  return (static_cast<unsigned long long>(static_cast<unsigned>(~id)) << 32) |
         (static_cast<unsigned>(key) ^ 0x80000000u);
}
__device__ __forceinline__ int IdPackedKey(unsigned long long p) {
  return static_cast<int>(static_cast<unsigned>(p) ^ 0x80000000u);
}
__device__ __forceinline__ int IdPackedId(unsigned long long p) {
  return ~static_cast<int>(static_cast<unsigned>(p >> 32));
}

// sampling::ExpNonPositive(float), operation for operation (the _rn intrinsics keep nvcc from
// contracting a multiply and an add into an FMA, which the CPU build does not do either).
__device__ __forceinline__ float ExpNonPositive(float x) {
  const int bits = __float_as_int(x);
  const int kLow = __float_as_int(-86.0f);
  const int tiny = -static_cast<int>((bits > kLow) & (bits < 0));
  const float xc = __int_as_float((bits & ~tiny) | (kLow & tiny));
  const float t = __fadd_rn(__fmul_rn(xc, 1.44269504088896341f), 12582912.0f);
  const float n = __fsub_rn(t, 12582912.0f);
  const float r =
      __fadd_rn(__fsub_rn(xc, __fmul_rn(n, 0.693359375f)), __fmul_rn(n, 2.12194440e-4f));
  float p = 1.9875691500e-4f;
  p = __fadd_rn(__fmul_rn(p, r), 1.3981999507e-3f);
  p = __fadd_rn(__fmul_rn(p, r), 8.3334519073e-3f);
  p = __fadd_rn(__fmul_rn(p, r), 4.1665795894e-2f);
  p = __fadd_rn(__fmul_rn(p, r), 1.6666665459e-1f);
  p = __fadd_rn(__fmul_rn(p, r), 5.0000001201e-1f);
  const float y = __fadd_rn(__fadd_rn(__fmul_rn(__fmul_rn(p, r), r), r), 1.0f);
  const int e = __float_as_int(t) - 0x4B400000;
  return __fmul_rn(y, __int_as_float(((e + 127) << 23) & ~tiny));
}

// The row being sampled, after its edits.
struct Row {
  float* x;
  int n;
  float max;  // FromOrderKey(the max key): +0 when the max is a zero of either sign
  double max_d;
  float inv_t;
  int argmax;
};

// The draw weight e^((l - max) / T), as the CPU computes it.
__device__ __forceinline__ float Weight(const Row& r, float l) {
  return ExpNonPositive(__fmul_rn(__fsub_rn(l, r.max), r.inv_t));
}

// A bucket index in [0, kBins) that never increases with l: floor((max - l) * scale), clamped.
__device__ __forceinline__ int BucketOf(float l, float max, float scale) {
  const float d = __fmul_rn(__fsub_rn(max, l), scale);
  return d < static_cast<float>(kBins - 1) ? static_cast<int>(d) : kBins - 1;
}

// min_p: the smallest float f with f >= double(max) + offset (sampler.cc's FloatAtLeast).
__device__ inline int MinPKey(float max, double offset) {
  const double v = __dadd_rn(static_cast<double>(max), offset);
  if (v < -static_cast<double>(FLT_MAX)) return kNegInfKey;
  float f = __double2float_rn(v);
  if (static_cast<double>(f) < v) f = nextafterf(f, INFINITY);
  return OrderKey(f);
}

// ---- Block-wide reductions and scans (every thread of the block must call them) ----

struct MinOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};
struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};

__device__ __forceinline__ double* Scratch(Shared& sm, double) { return sm.scr_d; }
__device__ __forceinline__ int* Scratch(Shared& sm, int) { return sm.scr_i; }
__device__ __forceinline__ unsigned long long* Scratch(Shared& sm, unsigned long long) {
  return sm.scr_u;
}

template <typename T, typename Op>
__device__ __forceinline__ T WarpReduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFull, v, o));
  return v;
}

template <typename T>
__device__ __forceinline__ T WarpInclusiveScan(T v) {
  for (int o = 1; o < 32; o <<= 1) {
    const T y = __shfl_up_sync(kFull, v, o);
    if (Lane() >= o) v += y;
  }
  return v;
}

// The reduction of v over the block, returned to every thread.
template <typename T, typename Op>
__device__ T BlockReduce(T v, Op op, Shared& sm) {
  T* s = Scratch(sm, T{});
  v = WarpReduce(v, op);
  __syncthreads();  // the previous call's readers are done with s
  if (Lane() == 0) s[Warp()] = v;
  __syncthreads();
  if (Warp() == 0) {
    v = WarpReduce(s[Lane()], op);
    if (Lane() == 0) s[kWarps] = v;
  }
  __syncthreads();
  return s[kWarps];
}

// Exclusive prefix sum of v in thread order, and the total.
template <typename T>
__device__ void BlockExclusiveScan(T v, T& excl, T& total, Shared& sm) {
  T* s = Scratch(sm, T{});
  const T incl = WarpInclusiveScan(v);
  T in_warp = __shfl_up_sync(kFull, incl, 1);
  if (Lane() == 0) in_warp = T(0);
  __syncthreads();
  if (Lane() == 31) s[Warp()] = incl;
  __syncthreads();
  if (Warp() == 0) {
    const T w = s[Lane()];
    const T wi = WarpInclusiveScan(w);
    T we = __shfl_up_sync(kFull, wi, 1);
    if (Lane() == 0) we = T(0);
    s[Lane()] = we;
    if (Lane() == 31) s[kWarps] = wi;
  }
  __syncthreads();
  excl = s[Warp()] + in_warp;
  total = s[kWarps];
}

}  // namespace forge::cuda::sample_block
