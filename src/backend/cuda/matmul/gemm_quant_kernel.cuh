// The quantized GEMM kernel behind gemm_quant_cuda (design in gemm_quant_cuda.h) and its launch
// template: stored blocks and activations staged by cp.async, each 64-element window of the
// weights decoded into an F16/BF16 tile in shared memory one window ahead of the tensor-core MMAs
// that read it, F32 sums reduced across a cluster when k is split. Included by the two .cu files
// that instantiate it.
#pragma once

#include <cooperative_groups.h>

#include <atomic>
#include <string>

#include "backend/cuda/attention/warp_mma.cuh"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matmul/gemm_quant_decode.cuh"
#include "backend/cuda/matmul/gemm_quant_internal.h"
#include "backend/cuda/matmul/gemv_quant_device.cuh"
#include "backend/cuda/ptx.cuh"
#include "backend/cuda/matmul/split_k.h"

namespace forge::cuda::gm {

inline constexpr int kWarps = 8;
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kBM = 128;       // weight rows per CTA (two threads stage and decode each)
inline constexpr int kTileRow = 128;  // bytes of a tile row: 64 F16/BF16 elements
inline constexpr int kSmemLimit = 227 * 1024;

// Dynamic shared memory: kXStages activation windows [BN][64] (4, or 3 where 4 do not fit,
// kAhead = kXStages - 1 of them in flight ahead of the MMAs), two decoded weight windows
// [kBM][64] (tile rows of 128 bytes, 16-byte chunk c of row r at chunk c ^ (r % 8): ldmatrix and
// the 16-byte stores meet no bank conflicts), two stages of stored units (per row, the 16-byte
// aligned chunks covering its unit; an odd chunk count spreads the rows over the banks). The
// epilogue reuses the start as F32 partial sums [BN][kBM + 4].
template <GgmlType kT, int BN>
struct Smem {
  static constexpr int kUnitBytes = UnitBytes(kT);
  static constexpr int kRowStride = 16 * (((kUnitBytes + 14 + 15) / 16) | 1);
  static constexpr int kWarpsM = BN == 64 ? 4 : 2;  // warps along the weight rows
  static constexpr int kWarpsN = kWarps / kWarpsM;
  static constexpr int kMT = kBM / kWarpsM / 16;  // m16 tiles of a warp (weight rows)
  static constexpr int kNT = BN / kWarpsN / 8;    // n8 tiles of a warp (activation rows)
  static constexpr int kXStage = BN * kTileRow;
  static constexpr int kWTile = kBM * kTileRow;
  static constexpr int kRawStage = kBM * kRowStride;
  static constexpr int kRest = 2 * kWTile + 2 * kRawStage + 16;  // 16: Load16 reads past a row
  static constexpr int kXStages = 4 * kXStage + kRest <= kSmemLimit ? 4 : 3;
  static constexpr int kAhead = kXStages - 1;
  static constexpr int kWOff = kXStages * kXStage;
  static constexpr int kRawOff = kWOff + 2 * kWTile;
  static constexpr int kBytes = kWOff + kRest;
  static constexpr int kRedStride = kBM + 4;  // floats
  static_assert(kNT % 2 == 0 && kMT >= 1);
  static_assert(BN * kRedStride * 4 <= kBytes && kBytes <= kSmemLimit);
};

// Stored bytes of unit u of a row (the last unit of a legacy row may hold fewer blocks).
template <GgmlType kT>
__device__ __forceinline__ int UnitBytesAt(const Args& a, int u) {
  if constexpr (qd::IsKQuant(kT)) {
    return qd::BlockBytes(kT);
  } else {
    const int64_t left = a.k - static_cast<int64_t>(u) * kUnitElems;
    const int elems = left < kUnitElems ? static_cast<int>(left) : kUnitElems;
    return elems / 32 * qd::BlockBytes(kT);
  }
}

// The 16-byte-aligned chunks covering `bytes` bytes at src into dst (the thread's row slot),
// chunks of parity `half` (two threads per row). Bytes at or past `end` are zero-filled, never
// read.
__device__ __forceinline__ void IssueUnit(uint32_t dst, uintptr_t src, int bytes, uintptr_t end,
                                          int half) {
  const uintptr_t s0 = src & ~uintptr_t{15};
  const int nc = static_cast<int>((src - s0 + bytes + 15) >> 4);
  const uintptr_t left = end - s0;  // > 0: the row's first byte is before the end
  const int lim = left > 4096 ? 4096 : static_cast<int>(left);
  for (int q = half; q < nc; q += 2) {
    ptx::CpAsync16(dst + 16 * q, reinterpret_cast<const void*>(s0 + 16 * q), min(16, lim - 16 * q));
  }
}

// Window w (elements [64 w, 64 w + 64)) of activation rows [col0, col0 + BN) into a stage;
// rows past m and elements past k are zero-filled.
template <typename T, int BN>
__device__ __forceinline__ void IssueX(const Args& a, uint32_t dst, int64_t col0, int w, int tid) {
  const T* x = static_cast<const T*>(a.x);
#pragma unroll
  for (int i = 0; i < BN * 8 / kThreads; ++i) {
    const int idx = tid + i * kThreads, r = idx >> 3, c = idx & 7;
    const int64_t e = static_cast<int64_t>(w) * kWindowElems + 8 * c;
    const bool ok = col0 + r < a.m && e < a.k;
    const T* src = ok ? x + (col0 + r) * a.x_stride + e : x;
    CpAsync16(dst + r * kTileRow + ((c ^ (r & 7)) << 4), src, ok);
  }
}

// Output element (activation row col0 + c, weight row row0 + r) = v + bias, if inside [m, n].
template <typename T>
__device__ __forceinline__ void StoreOut(const Args& a, int64_t row0, int64_t col0, int c, int r,
                                         float v) {
  const int64_t wr = row0 + r, xc = col0 + c;
  if (wr >= a.n || xc >= a.m) return;
  if (a.bias != nullptr) v += a.bias[wr];
  const int64_t i = xc * a.out_stride + wr;
  if (a.out_f32) {
    static_cast<float*>(a.out)[i] = v;
  } else {
    static_cast<T*>(a.out)[i] = FromF32<T>(v);
  }
}

// Grid (nsplit, m tiles, n tiles), clusters of nsplit along x: CTA (q, i, j) computes activation
// rows [BN i, BN i + BN) x weight rows [128 j, 128 j + 128) over units [q, q + 1) *
// units_per_split of k.
template <GgmlType kT, typename T, int BN>
__global__ void __launch_bounds__(kThreads, BN == 64 ? 2 : 1) gemm_quant_kernel(const Args a) {
  using S = Smem<kT, BN>;
  constexpr int kMT = S::kMT, kNT = S::kNT, kXStages = S::kXStages, kAhead = S::kAhead;
  extern __shared__ __align__(16) uint8_t smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int64_t row0 = static_cast<int64_t>(blockIdx.z) * kBM;
  const int64_t col0 = static_cast<int64_t>(blockIdx.y) * BN;
  const int u_begin = static_cast<int>(blockIdx.x) * a.units_per_split;
  const int u_end = min(a.units, u_begin + a.units_per_split);
  const int w_begin = 4 * u_begin;
  const int nw = max(0, min(a.windows, 4 * u_end) - w_begin);
  const uint32_t sbase = SmemAddr(smem);

  // Staging and decoding: weight row wr, half h of each window (two threads per row).
  const int wr = tid >> 1, h = tid & 1;
  const bool wr_ok = row0 + wr < a.n;
  const uintptr_t wbase = reinterpret_cast<uintptr_t>(a.w);
  const int64_t wr_clamped = wr_ok ? row0 + wr : a.n - 1;
  const uintptr_t wrow = wbase + static_cast<uintptr_t>(wr_clamped * a.row_bytes);
  const uintptr_t wend = wbase + static_cast<uintptr_t>(a.n * a.row_bytes);

  auto issue = [&](int j) {
    const int w = w_begin + j;
    IssueX<T, BN>(a, sbase + (j % kXStages) * S::kXStage, col0, w, tid);
    if ((w & 3) == 0 && wr_ok) {
      const int u = w >> 2;
      IssueUnit(sbase + S::kRawOff + ((u - u_begin) & 1) * S::kRawStage + wr * S::kRowStride,
                wrow + static_cast<uintptr_t>(u) * S::kUnitBytes, UnitBytesAt<kT>(a, u), wend, h);
    }
  };

  // Window j of this CTA: its half-window decoder loaded from the stage (rows past n and blocks
  // past k decode stale bytes, never out of the stage; `ok` false: their slots are stored as
  // zeros), then slot s stored into weight tile `buf`.
  auto prepare = [&](int j, WindowDecoder<kT>& dec, bool& ok) {
    const int w = w_begin + j, u = w >> 2;
    ok = wr_ok && (qd::IsKQuant(kT) || static_cast<int64_t>(w) * kWindowElems + 32 * h < a.k);
    const uintptr_t src = wrow + static_cast<uintptr_t>(u) * S::kUnitBytes;
    dec.Load(
        smem + S::kRawOff + ((u - u_begin) & 1) * S::kRawStage + wr * S::kRowStride + (src & 15),
        w & 3, h);
  };
  auto put = [&](const WindowDecoder<kT>& dec, bool ok, int buf, int slot) {
    float v[8];
    dec.Slot(slot, v);
    uint4 o = make_uint4(Pack2<T>(v[0], v[1]), Pack2<T>(v[2], v[3]), Pack2<T>(v[4], v[5]),
                         Pack2<T>(v[6], v[7]));
    if (!ok) o = make_uint4(0, 0, 0, 0);
    uint8_t* dst = smem + S::kWOff + buf * S::kWTile + wr * kTileRow;
    *reinterpret_cast<uint4*>(dst + ((WindowSlot<kT>(h, slot) ^ (wr & 7)) << 4)) = o;
  };

  // ldmatrix rows of this lane: A (weights) rows wm * 16 kMT + 16 mt + lane % 16, chunk
  // 2 ks + lane / 16; B (activations) rows wn * 8 kNT + 16 np + lane % 8 + 8 (lane / 16), chunk
  // 2 ks + (lane / 8) % 2. Every such row is congruent to lane mod 8 (the swizzle key).
  const int wm = warp / S::kWarpsN, wn = warp % S::kWarpsN;
  const int key = lane & 7, a_sel = lane >> 4, b_sel = (lane >> 3) & 1;
  uint32_t a_off[kMT], b_off[kNT / 2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) a_off[mt] = (wm * kMT * 16 + mt * 16 + (lane & 15)) * kTileRow;
#pragma unroll
  for (int np = 0; np < kNT / 2; ++np) {
    b_off[np] = (wn * kNT * 8 + np * 16 + (lane & 7) + ((lane >> 4) << 3)) * kTileRow;
  }
  float acc[kMT][kNT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;
    }
  }
  // One k16 step of window tile `buf` against activation stage `stage`.
  auto mma_step = [&](int buf, int stage, int ks) {
    const uint32_t wt = sbase + S::kWOff + buf * S::kWTile;
    const uint32_t xt = sbase + stage * S::kXStage;
    uint32_t af[kMT][4], bf[kNT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      LdMatrixX4(wt + a_off[mt] + (((2 * ks + a_sel) ^ key) << 4), af[mt]);
    }
#pragma unroll
    for (int np = 0; np < kNT / 2; ++np) {
      uint32_t r[4];
      LdMatrixX4(xt + b_off[np] + (((2 * ks + b_sel) ^ key) << 4), r);
      bf[2 * np][0] = r[0];
      bf[2 * np][1] = r[1];
      bf[2 * np + 1][0] = r[2];
      bf[2 * np + 1][1] = r[3];
    }
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) Mma<T>(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
    }
  };

  // Pipeline: one commit group per window (its activations, and its unit at a unit's first
  // window), kAhead groups in flight. Iteration i waits for windows i and i + 1, then issues
  // window i + kAhead into the stage window i - 1 used, and runs window i's four MMA steps, each
  // followed by one slot of window i + 1 decoded into the weight tile window i - 1 used (the
  // decoding's ALU work overlaps the tensor cores). One barrier per window.
#pragma unroll
  for (int j = 0; j < kAhead; ++j) {
    if (j < nw) issue(j);
    CpAsyncCommit();
  }
  if (nw > 0) {
    CpAsyncWait<kAhead - 1>();
    __syncthreads();
    WindowDecoder<kT> dec;
    bool ok;
    prepare(0, dec, ok);
#pragma unroll
    for (int s = 0; s < 4; ++s) put(dec, ok, 0, s);
  }
  for (int i = 0; i < nw; ++i) {
    CpAsyncWait<kAhead - 2>();
    __syncthreads();
    if (i + kAhead < nw) issue(i + kAhead);
    CpAsyncCommit();
    const bool more = i + 1 < nw;
    WindowDecoder<kT> dec;
    bool ok = false;
    if (more) prepare(i + 1, dec, ok);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      mma_step(i & 1, i % kXStages, ks);
      if (more) put(dec, ok, (i + 1) & 1, ks);
    }
  }
  CpAsyncWait<0>();
  __syncthreads();  // the tiles are no longer read: the partial sums take their place

  float* red = reinterpret_cast<float*>(smem);  // [BN][kRedStride]
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = wm * kMT * 16 + mt * 16 + g + 8 * (e >> 1);
        const int c = wn * kNT * 8 + nt * 8 + 2 * t + (e & 1);
        red[c * S::kRedStride + r] = acc[mt][nt][e];
      }
    }
  }
  if (gridDim.x == 1) {
    __syncthreads();
    for (int idx = tid; idx < BN * kBM; idx += kThreads) {
      const int c = idx / kBM, r = idx % kBM;
      if (col0 + c >= a.m) break;  // c only grows
      StoreOut<T>(a, row0, col0, c, r, red[c * S::kRedStride + r]);
    }
    return;
  }
  // Split k: CTA q of the cluster sums weight rows [q, q + 1) * kBM / nsplit over the cluster's
  // partial sums in rank order (deterministic) and stores them.
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int nsplit = static_cast<int>(gridDim.x);
  const int rows_per = kBM / nsplit;
  const int rank = static_cast<int>(cluster.block_rank());
  for (int idx = tid; idx < BN * rows_per; idx += kThreads) {
    const int c = idx / rows_per, r = rank * rows_per + idx % rows_per;
    if (col0 + c >= a.m) break;
    float sum = 0.0f;
    for (int q = 0; q < nsplit; ++q) sum += cluster.map_shared_rank(red, q)[c * S::kRedStride + r];
    StoreOut<T>(a, row0, col0, c, r, sum);
  }
  cluster.sync();  // keep this CTA's partial sums alive until the others have read them
}

// ---- Host side. ----

template <GgmlType kT, typename T, int BN>
Status LaunchOne(Args a, int64_t m_tiles, int64_t n_tiles, int nsplit, cudaStream_t stream) {
  using S = Smem<kT, BN>;
  auto* kernel = gemm_quant_kernel<kT, T, BN>;
  static std::atomic<uint64_t> smem_set{0};
  static std::atomic<int> per_sm{0};  // resident CTAs per SM (one GPU kind)
  CUDA_RETURN_IF_ERROR(SetMaxDynamicSmemOnce(kernel, S::kBytes, &smem_set));
  int occ = per_sm.load(std::memory_order_relaxed);
  if (occ == 0) {
    CUDA_RETURN_IF_ERROR(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, kThreads, S::kBytes));
    occ = occ < 1 ? 1 : occ;
    per_sm.store(occ, std::memory_order_relaxed);
  }
  if (nsplit == 0) {
    ASSIGN_OR_RETURN(const int sms, CurrentSmCount());
    nsplit = SplitByTime(m_tiles * n_tiles, a.units, int64_t{sms} * occ);
  }
  a.units_per_split = (a.units + nsplit - 1) / nsplit;
  const dim3 grid(static_cast<unsigned>(nsplit), static_cast<unsigned>(m_tiles),
                  static_cast<unsigned>(n_tiles));
  CUDA_RETURN_IF_ERROR(LaunchClustered(kernel, grid, dim3(kThreads), S::kBytes, stream,
                                       static_cast<unsigned>(nsplit), a));
  return Status::Ok();
}

template <GgmlType kT, typename T>
Status LaunchType(int bn, const Args& a, int64_t m_tiles, int64_t n_tiles, int nsplit,
                  cudaStream_t stream) {
  switch (bn) {
    case 64:
      return LaunchOne<kT, T, 64>(a, m_tiles, n_tiles, nsplit, stream);
    case 128:
      return LaunchOne<kT, T, 128>(a, m_tiles, n_tiles, nsplit, stream);
    case 256:
      return LaunchOne<kT, T, 256>(a, m_tiles, n_tiles, nsplit, stream);
    default:
      return InvalidArgumentError("gemm_quant_cuda: no tile of " + std::to_string(bn) + " rows");
  }
}

template <GgmlType kT>
Status LaunchFormat(DType x_type, int bn, const Args& a, int64_t m_tiles, int64_t n_tiles,
                    int nsplit, cudaStream_t stream) {
  if (x_type == DType::kF16) return LaunchType<kT, __half>(bn, a, m_tiles, n_tiles, nsplit, stream);
  return LaunchType<kT, __nv_bfloat16>(bn, a, m_tiles, n_tiles, nsplit, stream);
}

}  // namespace forge::cuda::gm
