// gemm_quant_mma_cuda (design in gemm_quant_mma.h): Q4_K and Q6_K weights decoded in registers
// into tensor-core A fragments; activations from shared memory, through ldmatrix (tiles of 16 and
// 32 rows, mma.sync) or read by the warpgroup MMAs themselves (64 and 128 rows, wgmma).
//
// Q4_K super-block (144 bytes): d, dmin (F16), scales[12] (8 six-bit scales and mins), qs[128].
// Element 64j + 32h + l (j < 4, h < 2, l < 32) is nibble h of qs[32j + l], in sub-block 2j + h.
// MMA step (j, h, u) covers the 16 elements e0 = 64j + 32h + 16u .. e0 + 15 (u < 2) in their
// natural order: lane (g, t) holds in its A k-slots 2t, 2t + 1 the nibbles h of qs bytes
// 32j + 16u + 2t and + 1, and in slots 2t + 8, 2t + 9 those of bytes 32j + 16u + 8 + 2t and + 1,
// for rows g and g + 8 of its warp's 16. Q6_K: see its branch of the kernel.
#include "backend/cuda/matmul/gemm_quant_mma.h"
#include "backend/cuda/matmul/matmul_args.h"

#include <cooperative_groups.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>

#include "backend/cuda/attention/warp_mma.cuh"
#include "backend/cuda/attention/wgmma.cuh"
#include "backend/cuda/bulk_copy.cuh"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matmul/gemv_quant_device.cuh"
#include "backend/cuda/ptx.cuh"
#include "backend/cuda/matmul/split_k.h"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kBM = 16 * kWarps;  // weight rows per CTA
constexpr int kSbElems = 256;
constexpr int kXRow = 2 * kSbElems + 16;  // bytes between activation rows of a stage
constexpr int kMaxSplit = 8;
constexpr uint32_t kMagic = gq::kMagic2;  // half2(1024, 1024)
constexpr size_t kCounterBytes = kGemmQuantMmaCounters * sizeof(int);
using Workspace = GemmQuantMmaWorkspace;
using ptx::AndOr;

// The formats: stored super-block bytes and the bytes of a row's slot in a stage.
struct Q4K {
  static constexpr int kSbBytes = 144;
  static constexpr int kSlot = 144;  // 16-byte aligned in the row: copied as is
};
// Q6_K super-blocks (210 bytes) start 2-byte aligned: a slot holds the 16-byte chunks covering
// one (13 or 14), the super-block at offset (210 sb) % 16 = 2 sb % 16 in it (rows are 16-byte
// aligned). 240-byte slots put the 8 rows a warp reads at once in distinct banks.
struct Q6K {
  static constexpr int kSbBytes = 210;
  static constexpr int kSlot = 240;
};

struct MmaArgs {
  const uint8_t* w = nullptr;
  int64_t row_bytes = 0;
  int64_t n = 0;
  int sbs = 0;            // super-blocks per row
  int sbs_per_split = 0;  // super-blocks of each CTA of a cluster
  const __half* x = nullptr;
  int64_t x_stride = 0;
  const float* bias = nullptr;
  void* out = nullptr;
  int64_t out_stride = 0;
  int m = 0;
  bool out_f32 = true;
  // Global split (non-null): the CTAs of a tile are not a cluster; each writes its partial sums
  // to part (per tile, per split: [BN / 8][kThreads] float4, the accumulator fragments as the
  // threads hold them) and bumps the tile's counter; the last to arrive adds them.
  float* part = nullptr;
  int* counters = nullptr;  // [tiles], zero between calls
};

// Tiles of 64 and 128 activation rows run on warpgroup MMAs (kWg: wgmma m64nBNk16, A from the
// decoding registers, B K-major from shared memory in the 128-byte swizzled layout of wgmma.cuh);
// smaller tiles on mma.sync m16n8k16 with B through ldmatrix.
template <class F, int BN>
struct Layout {
  static constexpr bool kWg = BN >= 64;
  static constexpr int kWStage = kBM * F::kSlot;  // the CTA's rows of one super-block
  // Activations of a stage: rows kXRow bytes apart, or (kWg) 4 swizzled chunks of 64 elements by
  // BN rows of 128 bytes.
  static constexpr int kXStage = BN * (kWg ? 2 * kSbElems : kXRow);
  static constexpr int kStage = kWStage + kXStage;
  static constexpr int kPad = kWg ? 1024 : 0;     // the swizzle needs 1024-aligned tiles
  static constexpr int kBarBytes = kWg ? 32 : 0;  // kWg: one mbarrier per stage
  // 3 stages where two CTAs still fit an SM (and 2 where they do not), at least 2.
  static constexpr int kPerCta = (BN >= 128 ? 227 * 1024 : 113 * 1024) - kPad - kBarBytes;
  static constexpr int kStages = kPerCta / kStage >= 3 ? 3 : 2;
  static constexpr int kBarOff = kStages * kStage;
  static constexpr int kBytes = kBarOff + kBarBytes + kPad;
  static_assert(!kWg || (kWStage % 1024 == 0 && kStage % 1024 == 0));
  static constexpr int kCtasPerSm = BN >= 128 || kBytes > 113 * 1024 ? 1 : 2;
  static constexpr int kRedStride = kBM + 4;  // floats: split-k partial sums [BN][kRedStride]
  static_assert(BN * kRedStride * 4 <= kStages * kStage, "the partial sums reuse the stages");
  static_assert(kBytes <= 227 * 1024);
};

// Stage `it` of this CTA's k range: its rows' super-block and (tiles of 16 and 32 rows) the tile's
// activations, by cp.async (rows past n and activation rows past m zero-filled). Weights and
// activations separately so the weights can be issued before the PDL wait.
template <class F>
__device__ __forceinline__ void IssueW(const MmaArgs& a, uint32_t stage, int64_t row0, int64_t sb) {
  // The 16-byte chunks covering super-block sb of a row: from (F::kSbBytes sb) rounded down to 16.
  const int off = static_cast<int>((F::kSbBytes * sb) & 15);
  const int chunks = (off + F::kSbBytes + 15) >> 4;
  constexpr int kMaxChunks = F::kSlot / 16;
  for (int i = threadIdx.x; i < kBM * kMaxChunks; i += kThreads) {
    const int r = i / kMaxChunks, q = i % kMaxChunks;
    if (q >= chunks) continue;
    const int64_t row = row0 + r;
    const bool ok = row < a.n;
    const uint8_t* src = a.w + (ok ? row : 0) * a.row_bytes + F::kSbBytes * sb - off + 16 * q;
    ptx::CpAsync16(stage + r * F::kSlot + 16 * q, src, ok ? 16 : 0);
  }
}
// IssueW with each thread's pieces fixed across stages: piece i = threadIdx.x + kThreads j is row
// i / kMaxChunks, chunk i % kMaxChunks (the same coalesced order), its source row and shared
// offset computed once; a stage adds its super-block's offset. Costs registers: taken at one CTA
// per SM only.
template <class F>
struct WCopier {
  static constexpr int kMaxChunks = F::kSlot / 16;
  static constexpr int kPieces = (kBM * kMaxChunks + kThreads - 1) / kThreads;
  const uint8_t* src[kPieces];
  uint32_t dst[kPieces];  // r * kSlot + 16 q; ~0u: no piece
  uint32_t q[kPieces];
  uint32_t ok = 0;  // bit j: the row exists (else zero-filled)
  WCopier() = default;
  __device__ __forceinline__ WCopier(const MmaArgs& a, int64_t row0) {
#pragma unroll
    for (int j = 0; j < kPieces; ++j) {
      const int i = static_cast<int>(threadIdx.x) + kThreads * j;
      const int r = i / kMaxChunks;
      q[j] = static_cast<uint32_t>(i % kMaxChunks);
      dst[j] = i < kBM * kMaxChunks ? r * F::kSlot + 16 * q[j] : ~0u;
      const bool exists = row0 + r < a.n;
      ok |= exists ? 1u << j : 0u;
      src[j] = a.w + (exists ? row0 + r : 0) * a.row_bytes + 16 * q[j];
    }
  }
  __device__ __forceinline__ void Issue(uint32_t stage, int64_t sb) const {
    const int off = static_cast<int>((F::kSbBytes * sb) & 15);
    const uint32_t chunks = static_cast<uint32_t>((off + F::kSbBytes + 15) >> 4);
    const int64_t first = F::kSbBytes * sb - off;
#pragma unroll
    for (int j = 0; j < kPieces; ++j) {
      if (dst[j] != ~0u && q[j] < chunks) {
        ptx::CpAsync16(stage + dst[j], src[j] + first, (ok >> j) & 1u ? 16 : 0);
      }
    }
  }
};

template <class F, int BN>
__device__ __forceinline__ void IssueX(const MmaArgs& a, uint32_t stage, int col0, int64_t sb) {
  using L = Layout<F, BN>;
  // Thread (warp, lane) copies the 16-byte unit `lane` of rows warp, warp + 8, ...
#pragma unroll 1
  for (int i = 0; i < BN / kWarps; ++i) {
    const int c = static_cast<int>(threadIdx.x >> 5) + kWarps * i, q = threadIdx.x & 31;
    const bool ok = col0 + c < a.m;
    const __half* src =
        a.x + (ok ? static_cast<int64_t>(col0 + c) * a.x_stride : 0) + sb * kSbElems + 8 * q;
    ptx::CpAsync16(stage + L::kWStage + c * kXRow + 16 * q, src, ok ? 16 : 0);
  }
}

// Tiles of 64 and 128 rows: the stage's activations as four 64-element chunks through the tensor
// map (128-byte swizzle, rows past m zero-filled), one thread issuing, completed on `bar`.
template <int BN>
__device__ __forceinline__ void IssueXTma(const CUtensorMap& tx, uint32_t xstage, uint32_t bar,
                                          int col0, int64_t sb) {
  MbarExpectTx(bar, BN * 2 * kSbElems);
  const uint64_t map = reinterpret_cast<uint64_t>(&tx);
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], "
        "[%1, {%2, %3}], [%4];" ::"r"(xstage + c * (BN * 128)),
        "l"(map), "r"(static_cast<int>(sb * kSbElems + 64 * c)), "r"(col0), "r"(bar)
        : "memory");
  }
}

// Grid (nsplit * row tiles, column tiles), clusters of nsplit along x: CTA (tile * nsplit + q, y)
// computes weight rows [tile * 128, + 128) against activation rows [y BN, + BN) over super-blocks
// [q, q + 1) * sbs_per_split.
template <class F, int BN>
__global__ void __launch_bounds__(kThreads, Layout<F, BN>::kCtasPerSm)
    gemm_quant_mma_kernel(const MmaArgs a, const __grid_constant__ CUtensorMap tx) {
  using L = Layout<F, BN>;
  constexpr int kNT = BN / 8;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = L::kWg ? ((raw + 1023u) & ~1023u) - raw : 0u;
  uint8_t* smem = smem_raw + pad;  // kWg: 1024-aligned (the swizzle is of absolute addresses)
  const uint32_t sbase = raw + pad;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int nsplit = static_cast<int>(gridDim.x) / static_cast<int>((a.n + kBM - 1) / kBM);
  const int q = static_cast<int>(blockIdx.x) % nsplit;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x / nsplit) * kBM;
  const int col0 = static_cast<int>(blockIdx.y) * BN;
  const int sb0 = q * a.sbs_per_split;
  const int count = max(0, min(a.sbs_per_split, a.sbs - sb0));

  const uint32_t bars = sbase + L::kBarOff;  // kWg: stage s's activations complete on bars + 8 s
  if constexpr (L::kWg) {
    if (threadIdx.x == 0) {
#pragma unroll
      for (int s = 0; s < L::kStages; ++s) MbarInit(bars + 8 * s, 1);
      FenceBarrierInit();
    }
    __syncthreads();
  }
  // The weights of the first stages depend on no earlier kernel.
  constexpr bool kHoistW = L::kCtasPerSm == 1;
  const WCopier<F> wcopy = kHoistW ? WCopier<F>(a, row0) : WCopier<F>();
  auto issue_w = [&](uint32_t stage, int64_t sb) {
    if constexpr (kHoistW) {
      wcopy.Issue(stage, sb);
    } else {
      IssueW<F>(a, stage, row0, sb);
    }
  };
#pragma unroll
  for (int s = 0; s < L::kStages - 1; ++s) {
    if (s < count) issue_w(sbase + s * L::kStage, sb0 + s);
  }
  PdlWait();
  PdlLaunchDependents();
#pragma unroll
  for (int s = 0; s < L::kStages - 1; ++s) {
    if (s < count) {
      if constexpr (L::kWg) {
        if (threadIdx.x == 0) {
          IssueXTma<BN>(tx, sbase + s * L::kStage + L::kWStage, bars + 8 * s, col0, sb0 + s);
        }
      } else {
        IssueX<F, BN>(a, sbase + s * L::kStage, col0, sb0 + s);
      }
    }
    ptx::CpAsyncCommit();
  }

  float acc[kNT][4] = {};
  // The warpgroup MMAs' view of acc: the same registers, in the same layout.
  float(&accw)[BN / 2] = reinterpret_cast<float(&)[BN / 2]>(acc);
  // ldmatrix row address of this lane within a stage's activations: matrix lane / 8 of a pair of
  // tiles (0, 1: tile 2p's k 0-7, 8-15; 2, 3: tile 2p + 1's), row lane % 8.
  const uint32_t ldm_off = ((lane >> 4) * 8 + (lane & 7)) * kXRow + ((lane >> 3) & 1) * 16;
  for (int it = 0; it < count; ++it) {
    ptx::CpAsyncWait<L::kStages - 2>();
    __syncthreads();  // stage `it` visible to all; every warp is done with stage it - 1
    {
      const int nx = it + L::kStages - 1;
      if (nx < count) {
        const uint32_t st = sbase + (nx % L::kStages) * L::kStage;
        issue_w(st, sb0 + nx);
        if constexpr (L::kWg) {
          if (threadIdx.x == 0) {
            IssueXTma<BN>(tx, st + L::kWStage, bars + 8 * (nx % L::kStages), col0, sb0 + nx);
          }
        } else {
          IssueX<F, BN>(a, st, col0, sb0 + nx);
        }
      }
      ptx::CpAsyncCommit();
    }
    const int slot = it % L::kStages;
    if constexpr (L::kWg) MbarWait(bars + 8 * slot, static_cast<uint32_t>(it / L::kStages) & 1u);
    const uint8_t* wst = smem + slot * L::kStage;
    // kWg: B of the k16 step at element e0 of the stage (chunk e0 / 64, 32 bytes per step in it).
    const uint32_t xw = sbase + slot * L::kStage + L::kWStage;
    auto desc = [&](int e0) {
      return wgmma::SmemDesc(xw + (e0 >> 6) * (BN * 128) + (e0 & 63) * 2, 0, 1024);
    };
    // kWg: D += A B on the warpgroup's tensor cores (A just decoded into registers).
    auto wg_mma = [&](uint32_t(&af)[4], uint64_t desc_b) {
      if constexpr (L::kWg) {
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(af[e])::"memory");
        wgmma::FenceOperands(accw);
        wgmma::Fence();
        wgmma::MmaRS<BN, __half, true>(accw, af, desc_b, 1);
        wgmma::Commit();
      }
    };
    const uint32_t xst_s = sbase + slot * L::kStage + L::kWStage + ldm_off;
    if constexpr (std::is_same_v<F, Q4K>) {
      const uint8_t* ra = wst + (warp * 16 + g) * F::kSlot;
      const uint8_t* rb = ra + 8 * F::kSlot;
      const uint4 ha = *reinterpret_cast<const uint4*>(ra);
      const uint4 hb = *reinterpret_cast<const uint4*>(rb);
      const uint32_t da = ha.x & 0xFFFFu, db = hb.x & 0xFFFFu;
      const uint32_t da2 = da | (da << 16), db2 = db | (db << 16);              // half2(d, d)
      const uint32_t na = (ha.x >> 16) ^ 0x8000u, nb = (hb.x >> 16) ^ 0x8000u;  // -dmin
      const uint32_t na2 = na | (na << 16), nb2 = nb | (nb << 16);
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        uint32_t sca, mna, scb, mnb;
        ptx::KQuantScalesMins(ha, c, &sca, &mna);
        ptx::KQuantScalesMins(hb, c, &scb, &mnb);
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          const int j = 2 * c + jj;
          // Sub-blocks 2j (low nibbles) and 2j + 1 (high): bytes 2 jj and 2 jj + 1 of the packed
          // words as exact half2 (sc, sc) and (m, m), times d and -dmin: half2 f16(d sc) and
          // f16(-dmin m).
          const uint32_t sel_lo = (2 * jj) | 0x4040u | ((2 * jj) << 8), sel_hi = sel_lo + 0x101u;
          auto scaled = [](uint32_t packed, uint32_t sel, uint32_t by) {
            return ptx::Hmul2(ptx::Hadd2(__byte_perm(packed, 0x64646464u, sel), 0xE400E400u), by);
          };
          const uint32_t sla = scaled(sca, sel_lo, da2), slb = scaled(scb, sel_lo, db2);
          const uint32_t sha = scaled(sca, sel_hi, da2), shb = scaled(scb, sel_hi, db2);
          const uint32_t mla = scaled(mna, sel_lo, na2), mlb = scaled(mnb, sel_lo, nb2);
          const uint32_t mha = scaled(mna, sel_hi, na2), mhb = scaled(mnb, sel_hi, nb2);
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            // This lane's bytes 2t, 2t + 1, 8 + 2t, 9 + 2t of the run, as bytes
            // [2t, 8 + 2t, 2t + 1, 9 + 2t] of one word.
            const uint4 va = *reinterpret_cast<const uint4*>(ra + 16 + 32 * j + 16 * u);
            const uint4 vb = *reinterpret_cast<const uint4*>(rb + 16 + 32 * j + 16 * u);
            const uint32_t sel = (t & 1) ? 0x7362u : 0x5140u;
            const uint32_t pa = __byte_perm((t >> 1) ? va.y : va.x, (t >> 1) ? va.w : va.z, sel);
            const uint32_t pb = __byte_perm((t >> 1) ? vb.y : vb.x, (t >> 1) ? vb.w : vb.z, sel);
            const uint32_t pa8 = pa >> 8, pb8 = pb >> 8;
            // The nibbles become exact F16 integers ((1024 + q) - 1024; (1024 + 16 q) / 16 - 64),
            // then one F16 FMA gives the weight q f16(d sc) + f16(-dmin m), rounded once.
            auto lo = [](uint32_t p, uint32_t s, uint32_t mn) {
              return ptx::Hfma2(ptx::Hadd2(AndOr(p, 0x000F000Fu, kMagic), 0xE400E400u), s, mn);
            };
            auto hi = [](uint32_t p, uint32_t s, uint32_t mn) {
              return ptx::Hfma2(ptx::Hfma2(AndOr(p, 0x00F000F0u, kMagic), 0x2C002C00u, 0xD400D400u),
                               s, mn);
            };
            // h = 0 (low nibbles, sub-block 2j) and h = 1 (high nibbles, 2j + 1).
            uint32_t af[2][4];
            af[0][0] = lo(pa, sla, mla);
            af[0][1] = lo(pb, slb, mlb);
            af[0][2] = lo(pa8, sla, mla);
            af[0][3] = lo(pb8, slb, mlb);
            af[1][0] = hi(pa, sha, mha);
            af[1][1] = hi(pb, shb, mhb);
            af[1][2] = hi(pa8, sha, mha);
            af[1][3] = hi(pb8, shb, mhb);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int e0 = 64 * j + 32 * h + 16 * u;
              if constexpr (L::kWg) wg_mma(af[h], desc(e0));
#pragma unroll
              for (int p = 0; p < (L::kWg ? 0 : kNT / 2); ++p) {
                uint32_t b[4];
                LdMatrixX4(xst_s + p * 16 * kXRow + 2 * e0, b);
                ptx::Mma(acc[2 * p], af[h][0], af[h][1], af[h][2], af[h][3], make_uint2(b[0], b[1]));
                ptx::Mma(acc[2 * p + 1], af[h][0], af[h][1], af[h][2], af[h][3],
                        make_uint2(b[2], b[3]));
              }
            }
          }
        }
      }
    } else {
      // Q6_K (210 bytes at offset 2 sb % 16 of the slot): ql[128], qh[64], scales[16] (int8),
      // d (F16). In half n, element 128n + 32T + l (T < 4, l < 32) is q - 32 with q the nibble
      // T / 2 of ql[64n + 32 (T % 2) + l] plus bits 2T, 2T + 1 of qh[32n + l] as bits 4, 5; its
      // scale is scales[8n + 2T + l / 16]. MMA step (n, v, T) covers l in [16v, 16v + 16).
      const uint8_t* ra = wst + (warp * 16 + g) * F::kSlot + ((2 * (sb0 + it)) & 15);
      const uint8_t* rb = ra + 8 * F::kSlot;
      const float da = __half2float(*reinterpret_cast<const __half*>(ra + 208));
      const float db = __half2float(*reinterpret_cast<const __half*>(rb + 208));
      // Bytes 2t, 2t + 1, 8 + 2t, 9 + 2t of the 16-byte run at p, as [2t, 8 + 2t, 2t + 1, 9 + 2t].
      auto pick = [t](const uint8_t* p) {
        const uint32_t lo = *reinterpret_cast<const uint16_t*>(p + 2 * t);
        const uint32_t hi = *reinterpret_cast<const uint16_t*>(p + 8 + 2 * t);
        return __byte_perm(lo, hi, 0x5140u);
      };
      auto pair = [](float v) {
        const uint32_t h = __half_as_ushort(__float2half_rn(v));
        return h | (h << 16);
      };
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int v = 0; v < 2; ++v) {
          const uint32_t qla[2] = {pick(ra + 64 * n + 16 * v), pick(ra + 64 * n + 32 + 16 * v)};
          const uint32_t qlb[2] = {pick(rb + 64 * n + 16 * v), pick(rb + 64 * n + 32 + 16 * v)};
          const uint32_t qha = pick(ra + 128 + 32 * n + 16 * v);
          const uint32_t qhb = pick(rb + 128 + 32 * n + 16 * v);
#pragma unroll
          for (int T = 0; T < 4; ++T) {
            const int sci = 192 + 8 * n + 2 * T + v;
            const uint32_t sa = pair(da * static_cast<float>(static_cast<int8_t>(ra[sci])));
            const uint32_t sb = pair(db * static_cast<float>(static_cast<int8_t>(rb[sci])));
            // (1024 + q) - 1056 = q - 32 exactly, then times f16(d sc).
            auto val = [T](uint32_t ql, uint32_t qh, uint32_t s) {
              const uint32_t hb = (T <= 2 ? qh << (4 - 2 * T) : qh >> (2 * T - 4)) & 0x00300030u;
              const uint32_t q = AndOr(ql >> (4 * (T >> 1)), 0x000F000Fu, kMagic) | hb;
              return ptx::Hmul2(ptx::Hadd2(q, 0xE420E420u), s);
            };
            const uint32_t a0 = val(qla[T & 1], qha, sa), a1 = val(qlb[T & 1], qhb, sb);
            const uint32_t a2 = val(qla[T & 1] >> 8, qha >> 8, sa);
            const uint32_t a3 = val(qlb[T & 1] >> 8, qhb >> 8, sb);
            const int e0 = 128 * n + 32 * T + 16 * v;
            if constexpr (L::kWg) {
              uint32_t af[4] = {a0, a1, a2, a3};
              wg_mma(af, desc(e0));
            }
#pragma unroll
            for (int p = 0; p < (L::kWg ? 0 : kNT / 2); ++p) {
              uint32_t b[4];
              LdMatrixX4(xst_s + p * 16 * kXRow + 2 * e0, b);
              ptx::Mma(acc[2 * p], a0, a1, a2, a3, make_uint2(b[0], b[1]));
              ptx::Mma(acc[2 * p + 1], a0, a1, a2, a3, make_uint2(b[2], b[3]));
            }
          }
        }
      }
    }
    if constexpr (L::kWg) {
      wgmma::Wait<0>();  // the stage and the sums may be overwritten once every warp is past here
      wgmma::FenceOperands(accw);
    }
  }
  ptx::CpAsyncWait<0>();

  // acc[jt][e]: weight row warp * 16 + g + 8 (e >> 1), activation row col0 + 8 jt + 2t + (e & 1).
  auto store = [&](int64_t row, int col, float v) {
    if (a.bias != nullptr) v += a.bias[row];
    const int64_t o = static_cast<int64_t>(col) * a.out_stride + row;
    if (a.out_f32) {
      static_cast<float*>(a.out)[o] = v;
    } else {
      static_cast<__half*>(a.out)[o] = __float2half_rn(v);
    }
  };
  if (nsplit > 1 && a.part != nullptr) {
    // Global split: this CTA's partial sums, then the tile's counter (acq_rel at GPU scope, after
    // the barrier: every thread's stores are ordered before it); the last CTA of the tile adds
    // the partials in split order (as the cluster reduction does: bit-identical to it) and
    // stores, then zeroes the counter for the next call (which runs after this grid: pdl.cuh).
    __shared__ int last_s;
    const int64_t tile = static_cast<int64_t>(blockIdx.x / nsplit) * gridDim.y + blockIdx.y;
    float4* parts = reinterpret_cast<float4*>(a.part) + tile * nsplit * (kNT * kThreads);
#pragma unroll
    for (int jt = 0; jt < kNT; ++jt) {
      parts[(q * kNT + jt) * kThreads + threadIdx.x] =
          make_float4(acc[jt][0], acc[jt][1], acc[jt][2], acc[jt][3]);
    }
    __syncthreads();
    if (threadIdx.x == 0) last_s = AtomicAddAcqRel(a.counters + tile, 1) == nsplit - 1;
    __syncthreads();
    // The last: every split's fragments (this CTA's own too, as stored: the same values), all kNT
    // loads of a split in flight at once, added in split order.
    if (!last_s) return;
#pragma unroll
    for (int jt = 0; jt < kNT; ++jt) acc[jt][0] = acc[jt][1] = acc[jt][2] = acc[jt][3] = 0.0f;
    for (int s = 0; s < nsplit; ++s) {
      float4 v[kNT];
#pragma unroll
      for (int jt = 0; jt < kNT; ++jt)
        v[jt] = __ldcg(parts + (s * kNT + jt) * kThreads + threadIdx.x);
#pragma unroll
      for (int jt = 0; jt < kNT; ++jt) {
        acc[jt][0] += v[jt].x;
        acc[jt][1] += v[jt].y;
        acc[jt][2] += v[jt].z;
        acc[jt][3] += v[jt].w;
      }
    }
    if (threadIdx.x == 0) a.counters[tile] = 0;
  }
  if (nsplit == 1 || a.part != nullptr) {
#pragma unroll
    for (int jt = 0; jt < kNT; ++jt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t row = row0 + warp * 16 + g + 8 * (e >> 1);
        const int col = col0 + 8 * jt + 2 * t + (e & 1);
        if (row < a.n && col < a.m) store(row, col, acc[jt][e]);
      }
    }
    return;
  }
  // Split k: partial sums into shared memory [BN][kRedStride]; CTA q of the cluster adds rows
  // [q rows_per, (q + 1) rows_per) (rows_per: 128 / nsplit rounded up to 4 rows) over the cluster
  // in rank order (deterministic) and stores them.
  __syncthreads();  // every warp is done with the stages
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int jt = 0; jt < kNT; ++jt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      red[(8 * jt + 2 * t + (e & 1)) * L::kRedStride + warp * 16 + g + 8 * (e >> 1)] = acc[jt][e];
    }
  }
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  // Each thread takes runs of 4 rows of one column, kBatch runs at a time, and issues every
  // rank's loads of a batch before adding any (the distributed shared-memory loads overlap).
  constexpr int kBatch = 2;
  const int rank = static_cast<int>(cluster.block_rank());
  const int rows_per = 4 * ((kBM / 4 + nsplit - 1) / nsplit), r_begin = rank * rows_per;
  const int quads = max(0, min(rows_per, kBM - r_begin)) / 4, total = BN * quads;
  const float* parts[kMaxSplit];
#pragma unroll
  for (int s = 0; s < kMaxSplit; ++s) parts[s] = cluster.map_shared_rank(red, s < nsplit ? s : 0);
  for (int base = threadIdx.x; base < total; base += kBatch * kThreads) {
    float4 v[kBatch][kMaxSplit];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int idx = min(base + b * kThreads, total - 1);
      const int c = idx / quads, r = r_begin + 4 * (idx % quads);
#pragma unroll
      for (int s = 0; s < kMaxSplit; ++s) {
        if (s < nsplit) {
          v[b][s] = *reinterpret_cast<const float4*>(parts[s] + c * L::kRedStride + r);
        }
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int idx = base + b * kThreads;
      if (idx >= total) break;
      const int c = idx / quads, r = r_begin + 4 * (idx % quads);
      if (col0 + c >= a.m) continue;
      float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int s = 0; s < kMaxSplit; ++s) {
        if (s < nsplit) {
          sum.x += v[b][s].x;
          sum.y += v[b][s].y;
          sum.z += v[b][s].z;
          sum.w += v[b][s].w;
        }
      }
      const float sv[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (row0 + r + i < a.n) store(row0 + r + i, col0 + c, sv[i]);
      }
    }
  }
  cluster.sync();  // keep this CTA's partial sums alive until the others have read them
}

// The driver's tensor-map encoder (through the runtime: Forge links no driver library).
StatusOr<PFN_cuTensorMapEncodeTiled_v12000> TensorMapEncoder() {
  static std::atomic<void*> cached{nullptr};
  void* fn = cached.load(std::memory_order_acquire);
  if (fn == nullptr) {
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    CUDA_RETURN_IF_ERROR(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                          cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
      return InternalError("gemm_quant_mma_cuda: the driver has no cuTensorMapEncodeTiled");
    }
    cached.store(fn, std::memory_order_release);
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

// The activations as a 2-D F16 tensor (k columns, m rows, x_stride apart) read in boxes of 64
// columns by BN rows, 128-byte swizzled: the stage layout of the warpgroup MMAs' B.
StatusOr<CUtensorMap> ActivationMap(const MmaArgs& a, int bn) {
  ASSIGN_OR_RETURN(auto encode, TensorMapEncoder());
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(a.sbs) * kSbElems,
                              static_cast<cuuint64_t>(a.m)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(a.x_stride) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(bn)};
  const cuuint32_t steps[2] = {1, 1};
  const CUresult r =
      encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<__half*>(a.x), dims, strides, box,
             steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return InternalError("gemm_quant_mma_cuda: cuTensorMapEncodeTiled failed (" +
                         std::to_string(static_cast<int>(r)) + ")");
  }
  return map;
}

template <class F, int BN>
Status Launch(MmaArgs a, int nsplit, bool global, const Workspace& ws, cudaStream_t stream) {
  using L = Layout<F, BN>;
  auto* kernel = gemm_quant_mma_kernel<F, BN>;
  static std::atomic<uint64_t> smem_set{0};
  CUDA_RETURN_IF_ERROR(SetMaxDynamicSmemOnce(kernel, L::kBytes, &smem_set));
  // Resident clusters of 2 to 8 CTAs (one GPU kind), asked once each.
  static std::atomic<int> resident[kMaxSplit + 1] = {};
  const int64_t row_tiles = (a.n + kBM - 1) / kBM;
  const int64_t col_tiles = (a.m + BN - 1) / BN;
  const int64_t tiles = row_tiles * col_tiles;
  // The workspace a global split of ns CTAs a tile needs (counters, then partials), and whether
  // the given one holds it.
  auto needs = [&](int ns) {
    return kCounterBytes + static_cast<size_t>(tiles * ns) * BN * kBM * 4;
  };
  auto fits = [&](int ns) {
    return ws.data != nullptr && tiles <= kGemmQuantMmaCounters && needs(ns) <= ws.bytes;
  };
  if (nsplit == 0) {
    cudaError_t failed = cudaSuccess;
    auto clusters = [&](int ns) -> int64_t {
      std::atomic<int>& slot = resident[ns];
      int n = slot.load(std::memory_order_relaxed);
      if (n == 0) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(static_cast<unsigned>(ns));
        cfg.blockDim = dim3(kThreads);
        cfg.dynamicSmemBytes = L::kBytes;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = static_cast<unsigned>(ns);
        attr.val.clusterDim.y = 1;
        attr.val.clusterDim.z = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        failed = cudaOccupancyMaxActiveClusters(&n, kernel, &cfg);
        if (failed != cudaSuccess) return 0;
        slot.store(std::max(n, 1), std::memory_order_relaxed);
      }
      return n;
    };
    ASSIGN_OR_RETURN(const int sms, CurrentSmCount());
    const OneWaveSplit s = SplitInOneWave(tiles, a.sbs, sms, L::kCtasPerSm, kMaxSplit,
                                          fits(std::min(kMaxSplit, a.sbs)), clusters);
    CUDA_RETURN_IF_ERROR(failed);
    nsplit = s.ns;
    global = s.global;
  } else if (global && !fits(nsplit)) {
    return InvalidArgumentError("gemm_quant_mma_cuda: a global split of " + std::to_string(nsplit) +
                                " needs a workspace of " + std::to_string(needs(nsplit)) +
                                " bytes");
  }
  global = global && nsplit > 1;
  if (global) {
    a.counters = static_cast<int*>(ws.data);
    a.part = reinterpret_cast<float*>(static_cast<char*>(ws.data) + kCounterBytes);
  }
  a.sbs_per_split = (a.sbs + nsplit - 1) / nsplit;
  const dim3 grid(static_cast<unsigned>(row_tiles * nsplit), static_cast<unsigned>(col_tiles));
  CUtensorMap tx{};  // read by the warpgroup-MMA tiles only
  if constexpr (L::kWg) {
    ASSIGN_OR_RETURN(tx, ActivationMap(a, BN));
  }
  CUDA_RETURN_IF_ERROR(LaunchWithAttributes(kernel, grid, dim3(kThreads), L::kBytes, stream,
                                            static_cast<unsigned>(global ? 1 : nsplit), true, a,
                                            tx));
  CUDA_RETURN_IF_LAUNCH_ERROR("gemm_quant_mma_kernel");
  return Status::Ok();
}

template <class F>
Status LaunchM(const MmaArgs& a, int nsplit, bool global, const Workspace& ws,
               cudaStream_t stream) {
  if (a.m <= 16) return Launch<F, 16>(a, nsplit, global, ws, stream);
  if (a.m <= 32) return Launch<F, 32>(a, nsplit, global, ws, stream);
  if (a.m <= 64) return Launch<F, 64>(a, nsplit, global, ws, stream);
  return Launch<F, 128>(a, nsplit, global, ws, stream);
}

}  // namespace

const char* GemmQuantMmaWhyNot(const MatmulParams& p) {
  const WeightView& w = p.w;
  const bool q6 = w.type == GgmlType::kQ6_K;
  if (w.type != GgmlType::kQ4_K && !q6) return "format not Q4_K/Q6_K";
  if (p.m < 1 || p.m > kGemmQuantMmaMaxRows) return "m outside 1..256";
  if (p.x_type != DType::kF16) return "x not F16";
  if (p.out_type != DType::kF32 && p.out_type != DType::kF16) return "out not F32/F16";
  if (w.rows < 1 || w.rows > (int64_t{1} << 31) - 1) return "rows outside 1..2^31-1";
  if (w.cols < kSbElems || w.cols % kSbElems != 0 || w.cols / kSbElems > (int64_t{1} << 24)) {
    return "k not a multiple of 256 up to 2^32";
  }
  if (w.row_bytes != w.cols / kSbElems * (q6 ? Q6K::kSbBytes : Q4K::kSbBytes)) {
    return "rows not as stored";
  }
  if (w.row_bytes % 16 != 0) return "Q6_K: k not a multiple of 2048";
  if (w.data == nullptr || p.x == nullptr || p.out == nullptr) return "null pointer";
  const int64_t xs = p.x_stride ? p.x_stride : w.cols;
  const int64_t os = p.out_stride ? p.out_stride : w.rows;
  if (!IsAligned(w.data, 16) || !IsAligned(p.x, 16)) return "w or x not 16-byte aligned";
  if (xs % 8 != 0 || xs < w.cols || os < w.rows) return "strides";
  if (!IsAligned(p.out, DTypeSize(p.out_type))) return "out misaligned";
  return nullptr;
}

bool GemmQuantMmaApplies(const MatmulParams& p) { return GemmQuantMmaWhyNot(p) == nullptr; }

Status gemm_quant_mma_cuda(const MatmulParams& p, cudaStream_t stream, int nsplit,
                           GemmQuantMmaWorkspace ws, bool global_split) {
  if (!GemmQuantMmaApplies(p)) {
    return InvalidArgumentError("gemm_quant_mma_cuda: " + std::string(TypeName(p.w.type)) + " [" +
                                std::to_string(p.w.rows) + ", " + std::to_string(p.w.cols) +
                                "] with m=" + std::to_string(p.m) +
                                " is outside the tensor-core quantized matmul");
  }
  if (nsplit < 0 || nsplit > kMaxSplit) {
    return InvalidArgumentError("gemm_quant_mma_cuda: nsplit " + std::to_string(nsplit) +
                                " is not 0 to " + std::to_string(kMaxSplit));
  }
  MmaArgs a;
  UnpackMatmul(p, a);
  if (global_split && (nsplit < 2 || ws.data == nullptr || ws.bytes < kCounterBytes)) {
    return InvalidArgumentError(
        "gemm_quant_mma_cuda: a global split takes nsplit 2 to 8 and a workspace");
  }
  if (ws.bytes < kCounterBytes) ws = {};
  if (nsplit > a.sbs) nsplit = 1;
  if (p.w.type == GgmlType::kQ6_K) return LaunchM<Q6K>(a, nsplit, global_split, ws, stream);
  return LaunchM<Q4K>(a, nsplit, global_split, ws, stream);
}

}  // namespace forge::cuda
