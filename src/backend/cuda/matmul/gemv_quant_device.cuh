// Shared pieces of the quantized GEMV kernel (gemv_quant_cuda.h): CTA shape, per-format
// constants, the shared-memory layout, and reading x / writing out.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/matmul/gemv_quant_fragments.cuh"
#include "backend/cuda/matmul/gemv_quant_internal.h"
#include "backend/cuda/ptx.cuh"
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

// The PTX primitives (ptx.cuh), by the names this kernel's files use.
using ptx::AndOr;
using ptx::CpAsync16;
using ptx::CpAsyncCommit;
using ptx::CpAsyncWait;
using ptx::HalfBitsOf;
using ptx::Hadd2;
using ptx::Hfma2;
using ptx::Hmul2;
using ptx::KQuantScalesMins;
using ptx::Mma;
using ptx::SplitHalf;

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
