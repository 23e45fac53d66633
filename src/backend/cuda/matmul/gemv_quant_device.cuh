// Shared pieces of the quantized GEMV kernel (gemv_quant_cuda.h): CTA shape, per-format
// constants, the shared-memory layout, and the PTX primitives (f16x2 arithmetic, m16n8k16 MMA,
// cp.async) it is built from.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/matmul/gemv_quant_fragments.cuh"
#include "backend/cuda/matmul/gemv_quant_internal.h"
#include "base/dtype.h"

namespace forge::cuda::gq {

inline constexpr int kWarps = 8;
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kRows = 16 * kWarps;  // weight rows per CTA: 16 per warp
inline constexpr int kTile = 256;          // row elements per pipeline stage

template <GgmlType kT>
struct Fmt {
  static constexpr GgmlType kType = kT;
  static constexpr Layout kLayout = LayoutOf(kT);
  static constexpr int kBlockBytes = qd::BlockBytes(kT);
  static constexpr int kTileBytes = qd::IsKQuant(kT) ? kBlockBytes : 8 * kBlockBytes;
  // Per 32-block sums of x in F32 (the legacy minimum), or an MMA step of min terms (k-quants).
  static constexpr bool kSx32 = kT == GgmlType::kQ4_1 || kT == GgmlType::kQ5_1;
  static constexpr bool kMinStep = kT == GgmlType::kQ2_K || kT == GgmlType::kQ3_K ||
                                   kT == GgmlType::kQ4_K || kT == GgmlType::kQ5_K;
};

constexpr int Clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Dynamic shared memory: kStages weight stages of kRows row slots (each the 16-byte chunks
// covering one row's tile, the odd chunk count spreading rows over banks), then kXTiles tiles of
// activations (T terms x NT column groups of B fragments, min-step fragments, F32 block sums,
// per-column inverse scales), then per-warp scratch for laying the activations out.
template <class F, int T, int NT>
struct Smem {
  static constexpr int kRowStride = 16 * (((F::kTileBytes + 30) / 16) | 1);
  static constexpr int kStageBytes = kRows * kRowStride;
  static constexpr int kStages = Clamp(81920 / kStageBytes, 2, 4);
  static constexpr int kFragBytes = T * NT * 16 * 32 * 8;
  static constexpr int kMinOff = kFragBytes;
  static constexpr int kMinBytes = F::kMinStep ? 2 * NT * 32 * 8 : 0;
  static constexpr int kSx32Off = kMinOff + kMinBytes;
  static constexpr int kSx32Bytes = F::kSx32 ? 8 * 16 * 4 : 0;
  static constexpr int kSinvOff = kSx32Off + kSx32Bytes;
  static constexpr int kXTileBytes = kSinvOff + 16 * 4;
  static constexpr int kScratchFloats = 256 + 16 + 8;  // values, sums of 16, sums of 32
  static constexpr int kScratchBytes = kWarps * kScratchFloats * 4;
  static constexpr int kBudget = 112 * 1024;  // two CTAs per SM
  static constexpr int kXTiles =
      Clamp((kBudget - kStages * kStageBytes - kScratchBytes) / kXTileBytes, 1, 8);
  static constexpr int kXOff = kStages * kStageBytes;
  static constexpr int kScratchOff = kXOff + kXTiles * kXTileBytes;
  static constexpr int kBytes = kScratchOff + kScratchBytes;
  static_assert(kStageBytes >= kRows * 16 * 4, "split-K partials reuse the stages");
  static_assert(kXTileBytes % 16 == 0 && kBytes <= 227 * 1024);
};

// ---- Device primitives. ----

// (a & b) | c in one LOP3 (b a mask, c the f16x2 magic bits: gemv_quant_fragments.cuh's kMagic2).
__device__ __forceinline__ uint32_t AndOr(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// Q4_K / Q5_K: the 6-bit scales (*sc) and mins (*mn) of sub-blocks 4c .. 4c + 3 as bytes, from the
// super-block header's words y, z, w (its packed scales[0..3], [4..7], [8..11]).
__device__ __forceinline__ void KQuantScalesMins(const uint4& hdr, int c, uint32_t* sc,
                                                 uint32_t* mn) {
  if (c == 0) {  // sub-blocks 0..3: low 6 bits of scales[0..3], scales[4..7]
    *sc = hdr.y & 0x3F3F3F3Fu;
    *mn = hdr.z & 0x3F3F3F3Fu;
  } else {  // 4..7: low nibbles of scales[8..11] and top two bits of scales[0..3] / [4..7]
    *sc = (hdr.w & 0x0F0F0F0Fu) | ((hdr.y >> 2) & 0x30303030u);
    *mn = ((hdr.w >> 4) & 0x0F0F0F0Fu) | ((hdr.z >> 2) & 0x30303030u);
  }
}

__device__ __forceinline__ uint32_t Hadd2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("add.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t Hmul2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t Hfma2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// d += A * B for A 16x16 (a0: rows 0-7, k 0-7; a1: rows 8-15, k 0-7; a2, a3: k 8-15) and B 16x8.
__device__ __forceinline__ void Mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                    uint32_t a3, uint2 b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b.x), "r"(b.y));
}

// 16 bytes global -> shared (addresses 16-byte aligned), the last 16 - src_bytes zero-filled.
__device__ __forceinline__ void CpAsync16(uint32_t smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint32_t HalfBitsOf(float v) {
  return __half_as_ushort(__float2half_rn(v));
}
// hi = the F16 nearest v; *rest = v - hi (exact in F32).
__device__ __forceinline__ uint32_t SplitHalf(float v, float* rest) {
  const __half h = __float2half_rn(v);
  *rest = v - __half2float(h);
  return __half_as_ushort(h);
}

template <int T>
__device__ __forceinline__ float LoadX(const Args& a, int64_t i) {
  if constexpr (T == 2) {
    return static_cast<const float*>(a.x)[i];
  } else {
    if (a.x_type == static_cast<int>(DType::kF16)) {
      return __half2float(static_cast<const __half*>(a.x)[i]);
    }
    return __bfloat162float(static_cast<const __nv_bfloat16*>(a.x)[i]);
  }
}

__device__ __forceinline__ void StoreOut(const Args& a, int64_t i, float v) {
  if (a.out_type == static_cast<int>(DType::kF32)) {
    static_cast<float*>(a.out)[i] = v;
  } else if (a.out_type == static_cast<int>(DType::kF16)) {
    static_cast<__half*>(a.out)[i] = __float2half_rn(v);
  } else {
    static_cast<__nv_bfloat16*>(a.out)[i] = __float2bfloat16_rn(v);
  }
}

}  // namespace forge::cuda::gq
