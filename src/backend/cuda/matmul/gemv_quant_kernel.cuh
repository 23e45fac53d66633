// The quantized GEMV kernel behind gemv_quant_cuda (design in gemv_quant_cuda.h): activations
// laid out as tensor-core B fragments, cp.async staging of stored blocks, the per-format tile
// math of gemv_quant_tiles.cuh, split-K reduced across a thread-block cluster. Included by the two
// .cu files that instantiate it.
#pragma once

#include <cooperative_groups.h>

#include <atomic>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matmul/gemv_quant_device.cuh"
#include "backend/cuda/matmul/gemv_quant_tiles.cuh"

namespace forge::cuda::gq {

// ---- Activations: `count` tiles from tile0 into B fragments. ----
//
// Per (tile, column c < m): a warp loads the 256 values, scales them by a power of two 2^e so
// that max |x| < 2^10 (F16 range for values and for sums of 32 of them), and writes them as F16
// in the fragment order of Pi (F32 x: a second term with the F16 residual, so hi + lo carries
// 22 bits). The column's results are multiplied back by 2^-e. Columns m..8NT-1 stay the zeros
// ZeroX wrote.
template <class F, int T, int NT>
__device__ void PrepX(const Args& a, int tile0, int count, uint8_t* xbase, float* scr, int warp,
                      int lane) {
  using S = Smem<F, T, NT>;
  for (int u = warp; u < count * a.m; u += kWarps) {
    const int tl = u / a.m, c = u % a.m;
    const int nt = c >> 3, gc = c & 7;
    uint8_t* xt = xbase + tl * S::kXTileBytes;
    const int64_t e0 = static_cast<int64_t>(tile0 + tl) * kTile + 8 * lane;
    const int64_t row = c * a.x_stride;
    float v[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = e0 + i < a.k ? LoadX<T>(a, row + e0 + i) : 0.0f;
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
    amax = WarpMax(amax);
    const int ex = static_cast<int>((__float_as_uint(amax) >> 23) & 0xFF);
    const int e = amax == 0.0f ? 0 : min(100, max(-119, 136 - ex));  // max|x| 2^e < 2^10
    const float scale = __uint_as_float(static_cast<uint32_t>(e + 127) << 23);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      v[i] *= scale;
      scr[8 * lane + i] = v[i];
    }
    if constexpr (F::kMinStep || F::kSx32) {
      // Lane l holds elements 8l..8l+7: group of 16 l/2, of 32 l/4 (fixed summation order).
      const float s8 = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
      const float s16 = s8 + __shfl_xor_sync(0xffffffffu, s8, 1);
      const float s32 = s16 + __shfl_xor_sync(0xffffffffu, s16, 2);
      if ((lane & 1) == 0) scr[256 + (lane >> 1)] = s16;
      if ((lane & 3) == 0) scr[272 + (lane >> 2)] = s32;
    }
    __syncwarp();
    uint2* frag = reinterpret_cast<uint2*>(xt);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int slot = lane + 32 * h, j = slot >> 2, t = slot & 3;
      const int vb = 16 * j + 2 * t;  // B fragment rows vb, vb + 1 (b0), vb + 8, vb + 9 (b1)
      float r0, r1, r8, r9;
      const uint32_t h0 = SplitHalf(scr[Pi<F::kLayout>(vb)], &r0);
      const uint32_t h1 = SplitHalf(scr[Pi<F::kLayout>(vb + 1)], &r1);
      const uint32_t h8 = SplitHalf(scr[Pi<F::kLayout>(vb + 8)], &r8);
      const uint32_t h9 = SplitHalf(scr[Pi<F::kLayout>(vb + 9)], &r9);
      const int idx = (nt * 16 + j) * 32 + gc * 4 + t;
      frag[idx] = make_uint2(h0 | (h1 << 16), h8 | (h9 << 16));
      if constexpr (T == 2) {
        frag[NT * 16 * 32 + idx] = make_uint2(HalfBitsOf(r0) | (HalfBitsOf(r1) << 16),
                                              HalfBitsOf(r8) | (HalfBitsOf(r9) << 16));
      }
    }
    if constexpr (F::kMinStep) {
      // The min step's B: sums of the groups of MinGroup, as F16 hi + lo terms.
      if (lane < 4) {
        constexpr int kSums = F::kLayout == Layout::kQ2K ? 256 : 272;
        uint32_t hi[4], lo[4];
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const int g = MinGroup<F::kLayout>(2 * lane + 8 * (s >> 1) + (s & 1));
          float rest;
          hi[s] = SplitHalf(g < 0 ? 0.0f : scr[kSums + g], &rest);
          lo[s] = HalfBitsOf(rest);
        }
        uint2* mf = reinterpret_cast<uint2*>(xt + S::kMinOff);
        mf[nt * 32 + gc * 4 + lane] = make_uint2(hi[0] | (hi[1] << 16), hi[2] | (hi[3] << 16));
        mf[(NT + nt) * 32 + gc * 4 + lane] =
            make_uint2(lo[0] | (lo[1] << 16), lo[2] | (lo[3] << 16));
      }
    }
    if constexpr (F::kSx32) {
      if (lane < 8) reinterpret_cast<float*>(xt + S::kSx32Off)[lane * 16 + c] = scr[272 + lane];
    }
    if (lane == 0) {
      reinterpret_cast<float*>(xt + S::kSinvOff)[c] =
          __uint_as_float(static_cast<uint32_t>(127 - e) << 23);
    }
    __syncwarp();
  }
}

// Zeros every activation tile buffer (the columns >= m are never written again).
template <class F, int T, int NT>
__device__ __forceinline__ void ZeroX(uint8_t* xbase, int tid) {
  using S = Smem<F, T, NT>;
  uint4* p = reinterpret_cast<uint4*>(xbase);
  for (int i = tid; i < S::kXTiles * S::kXTileBytes / 16; i += kThreads)
    p[i] = make_uint4(0, 0, 0, 0);
}

// ---- Weight staging: tile `tile` of the CTA's rows into a stage, as the 16-byte-aligned chunks
// covering each row's bytes. Two threads per row (even and odd chunks, so each warp instruction
// reads whole 32-byte sectors of 16 rows); row_addr: the thread's row start, valid: row < n;
// bytes past the end of the matrix are zero-filled, never read. ----
template <class F, int T, int NT>
__device__ __forceinline__ void IssueTile(const Args& a, uint32_t st, uintptr_t row_addr,
                                          bool valid, uintptr_t end, int tile, int tid) {
  using S = Smem<F, T, NT>;
  if (!valid) return;
  const int tb = tile == a.tiles - 1 ? a.last_tile_bytes : F::kTileBytes;
  const uintptr_t s = row_addr + static_cast<uintptr_t>(static_cast<int64_t>(tile) * F::kTileBytes);
  const uintptr_t s0 = s & ~uintptr_t{15};
  const int nc = static_cast<int>((s - s0 + tb + 15) >> 4);
  const uintptr_t left = end - s0;  // > 0: the row's first byte is before the end
  const int lim = left > 4096 ? 4096 : static_cast<int>(left);
  const uint32_t dst = st + (tid >> 1) * S::kRowStride;
  for (int q = tid & 1; q < nc; q += 2) {
    CpAsync16(dst + 16 * q, reinterpret_cast<const void*>(s0 + 16 * q), min(16, lim - 16 * q));
  }
}

// ---- The kernel: grid (nsplit, ceil(n / kRows)), clusters of nsplit along x. ----
template <class F, int T, int NT>
__global__ void __launch_bounds__(kThreads, 2) gemv_quant_kernel(const Args a) {
  using S = Smem<F, T, NT>;
  extern __shared__ __align__(16) uint8_t smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kRows;
  const int tile_begin = static_cast<int>(blockIdx.x) * a.tiles_per_split;
  const int ntiles = max(0, min(a.tiles, tile_begin + a.tiles_per_split) - tile_begin);
  float* scr = reinterpret_cast<float*>(smem + S::kScratchOff) + warp * S::kScratchFloats;
  const int rl0 = 16 * warp + (lane >> 2), rl1 = rl0 + 8;  // this thread's rows (A rows g, g + 8)
  const uintptr_t base = reinterpret_cast<uintptr_t>(a.w);
  const uintptr_t ra0 = base + static_cast<uintptr_t>((row0 + rl0) * a.row_bytes);
  const uintptr_t ra1 = base + static_cast<uintptr_t>((row0 + rl1) * a.row_bytes);
  // The row this thread stages (tid / 2) and the shared address of the stages.
  const uintptr_t issue_row = base + static_cast<uintptr_t>((row0 + (tid >> 1)) * a.row_bytes);
  const bool issue_valid = row0 + (tid >> 1) < a.n;
  const uintptr_t end = base + static_cast<uintptr_t>(a.n * a.row_bytes);
  const uint32_t stages = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  float acc[NT][4] = {};

#pragma unroll
  for (int s = 0; s < S::kStages - 1; ++s) {
    if (s < ntiles) {
      IssueTile<F, T, NT>(a, stages + s * S::kStageBytes, issue_row, issue_valid, end,
                          tile_begin + s, tid);
    }
    CpAsyncCommit();
  }
  ZeroX<F, T, NT>(smem + S::kXOff, tid);
  __syncthreads();
  for (int jt = 0; jt < ntiles; ++jt) {
    if (jt % S::kXTiles == 0) {
      if (jt > 0) __syncthreads();  // the previous chunk's activations are no longer read
      PrepX<F, T, NT>(a, tile_begin + jt, min(S::kXTiles, ntiles - jt), smem + S::kXOff, scr, warp,
                      lane);
    }
    CpAsyncWait<S::kStages - 2>();  // this thread's copies of tile jt have landed
    __syncthreads();                // everyone's have, and stage jt - 1 is free
    const int nx = jt + S::kStages - 1;
    if (nx < ntiles) {
      IssueTile<F, T, NT>(a, stages + (nx % S::kStages) * S::kStageBytes, issue_row, issue_valid,
                          end, tile_begin + nx, tid);
    }
    CpAsyncCommit();
    const int tile = tile_begin + jt;
    const uintptr_t toff = static_cast<uintptr_t>(static_cast<int64_t>(tile) * F::kTileBytes);
    const uint8_t* st = smem + (jt % S::kStages) * S::kStageBytes;
    const uint8_t* p0 = st + rl0 * S::kRowStride + ((ra0 + toff) & 15);
    const uint8_t* p1 = st + rl1 * S::kRowStride + ((ra1 + toff) & 15);
    const int nblk = tile == a.tiles - 1 ? a.last_tile_bytes / F::kBlockBytes : 8;
    ComputeTile<F, T, NT>(p0, p1, smem + S::kXOff + (jt % S::kXTiles) * S::kXTileBytes, nblk, acc,
                          lane);
  }
  CpAsyncWait<0>();

  const int t = lane & 3;
  if (gridDim.x == 1) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = 8 * nt + 2 * t + (e & 1);
        const int64_t r = row0 + (e < 2 ? rl0 : rl1);
        if (c < a.m && r < a.n) {
          StoreOut(a, c * a.out_stride + r, acc[nt][e] + (a.bias != nullptr ? a.bias[r] : 0.0f));
        }
      }
    }
    return;
  }
  // Split-K: every CTA of the cluster leaves its partial sums in shared memory; CTA q then sums
  // rows [q, q + 1) * kRows / nsplit over the cluster in rank order (deterministic).
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __syncthreads();                              // the stages are no longer read
  float* red = reinterpret_cast<float*>(smem);  // [kRows][16]
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      red[(e < 2 ? rl0 : rl1) * 16 + 8 * nt + 2 * t + (e & 1)] = acc[nt][e];
  }
  cluster.sync();
  const int nsplit = static_cast<int>(gridDim.x);
  const int rows_per = kRows / nsplit;
  const int rank = static_cast<int>(cluster.block_rank());
  for (int i = tid; i < rows_per * a.m; i += kThreads) {
    const int rl = rank * rows_per + i / a.m, c = i % a.m;
    const int64_t r = row0 + rl;
    if (r < a.n) {
      float sum = 0.0f;
      for (int q = 0; q < nsplit; ++q) sum += cluster.map_shared_rank(red, q)[rl * 16 + c];
      StoreOut(a, c * a.out_stride + r, sum + (a.bias != nullptr ? a.bias[r] : 0.0f));
    }
  }
  cluster.sync();  // keep this CTA's partials alive until the others have read them
}

// ---- Host side. ----

template <GgmlType kT, int T, int NT>
Status LaunchOne(const Args& a, int nsplit, int64_t row_blocks, cudaStream_t stream) {
  using F = Fmt<kT>;
  using S = Smem<F, T, NT>;
  auto* kernel = gemv_quant_kernel<F, T, NT>;
  static std::atomic<uint64_t> smem_set{0};
  CUDA_RETURN_IF_ERROR(SetMaxDynamicSmemOnce(kernel, S::kBytes, &smem_set));
  const dim3 grid(static_cast<unsigned>(nsplit), static_cast<unsigned>(row_blocks), 1);
  CUDA_RETURN_IF_ERROR(LaunchClustered(kernel, grid, dim3(kThreads), S::kBytes, stream,
                                       static_cast<unsigned>(nsplit), a));
  return Status::Ok();
}

// F32 activations take two F16 terms; more than 8 activation rows two column groups.
template <GgmlType kT>
Status LaunchFormat(const Args& a, int nsplit, int64_t row_blocks, cudaStream_t stream) {
  const bool f32 = a.x_type == static_cast<int>(DType::kF32);
  if (a.m > 8) {
    return f32 ? LaunchOne<kT, 2, 2>(a, nsplit, row_blocks, stream)
               : LaunchOne<kT, 1, 2>(a, nsplit, row_blocks, stream);
  }
  return f32 ? LaunchOne<kT, 2, 1>(a, nsplit, row_blocks, stream)
             : LaunchOne<kT, 1, 1>(a, nsplit, row_blocks, stream);
}

}  // namespace forge::cuda::gq
