// attention_prefill_wgmma: FlashAttention prefill on Hopper's warpgroup tensor cores (wgmma), head
// dims 64 and 128. A block of two warpgroups takes 128 queries of one sequence and one query head
// (warpgroup w: rows 64 w .. 64 w + 63) and walks the keys in tiles of 128. Q (scaled by scale *
// log2 e, rounded to the cache dtype) and each key tile's K and V rows, gathered through the block
// table with cp.async, sit in shared memory in the 128-byte swizzled layout wgmma reads
// (wgmma.cuh); K/V tiles rotate through 3 stages, the next tile's copies going out while the
// current one is used. Per tile: S = Q K^T (wgmma, both operands in shared memory) is issued
// together with O += P V of the previous tile (P in registers, V transposed from shared memory),
// so the online softmax of this tile (running max in log2 units, F32 sums) overlaps that GEMM.
// The score matrix never leaves registers. The output goes through shared memory for 16-byte
// stores.
#include <cmath>
#include <type_traits>

#include "backend/cuda/attention/attention_prefill_cuda.h"
#include "backend/cuda/attention/attention_prefill_tiles.cuh"
#include "backend/cuda/attention/warp_mma.cuh"
#include "backend/cuda/attention/wgmma.cuh"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"

namespace forge::cuda {
namespace {

constexpr int kWarpgroups = 2;
constexpr int kThreads = 128 * kWarpgroups;
constexpr int kBlockM = 64 * kWarpgroups;  // queries per block
constexpr int kBlockN = 128;               // keys per tile
constexpr int kStages = 3;                 // K/V tiles resident: in use, landed, in flight

// Shared memory (bytes from a 1024-aligned base): Q [kBlockM x D], then kStages stages of a K
// tile and a V tile [kBlockN x D], all in the swizzled layout; 1 KB of slack for the alignment.
// After the key loop the Q bytes stage the output tile.
template <int D>
struct WgmmaSmem {
  static constexpr uint32_t kQ = kBlockM * D * 2;
  static constexpr uint32_t kTile = kBlockN * D * 2;
  static constexpr uint32_t kStage = 2 * kTile;
  static constexpr size_t kBytes = kQ + size_t{kStages} * kStage + 1024;
  static_assert(kBytes <= 227 * 1024, "shared memory of one block");
};

template <typename Tq, typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    attention_prefill_wgmma_kernel(AttentionParams p, int64_t q_stride, int bs_shift) {
  static_assert(D == 64 || D == 128);
  using Smem = WgmmaSmem<D>;
  constexpr int kChunks = D / 8;                         // 16-byte units of a row
  constexpr int kCopies = kBlockN * kChunks / kThreads;  // cp.async per thread per K (or V) tile
  static_assert(kCopies * kThreads == kBlockN * kChunks);
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = SmemAddr(smem_raw);
  const uint32_t pad = ((raw + 1023u) & ~1023u) - raw;
  unsigned char* smem = smem_raw + pad;  // 1024-aligned: the swizzle is of absolute addresses
  const uint32_t q_addr = raw + pad;
  auto k_addr = [&](int stage) { return q_addr + Smem::kQ + stage * Smem::kStage; };

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wg = warp >> 2;                // warpgroup: query rows 64 wg .. 64 wg + 63
  const int g = lane >> 2, t4 = lane & 3;  // accumulator row group and column pair

  // Block -> (query head, sequence, tile): the heads of one tile rank are adjacent, so every
  // head's longest tiles go first.
  const int h = static_cast<int>(blockIdx.x % p.n_heads);
  int seq = -1, tile = 0;
  prefill::FindTile(p, static_cast<int>(blockIdx.x / p.n_heads), kBlockM, &seq, &tile);
  if (seq < 0) return;  // past the last tile

  const int kvh = h / static_cast<int>(p.n_heads / p.n_kv_heads);
  const int q_begin = p.cu_seqlens_q[seq];
  const int q_len = p.cu_seqlens_q[seq + 1] - q_begin;
  const int k_len = p.seq_lens_k[seq];
  const int m0 = tile * kBlockM;  // the block's first query within the sequence
  const int tile_end = prefill::RowEnd(p, q_len, k_len, min(m0 + kBlockM, q_len) - 1);
  const int n_tiles = (tile_end + kBlockN - 1) / kBlockN;
  const int r0 = m0 + 64 * wg + 16 * (warp & 3) + g;  // this thread's rows r0 and r0 + 8
  const int end0 = prefill::RowEnd(p, q_len, k_len, r0);
  const int end1 = prefill::RowEnd(p, q_len, k_len, r0 + 8);

  // Key tile i (keys 128 i + [0, 128)) into stage i % kStages; keys past tile_end are zeros (so
  // that masked products stay finite). Element offsets in int64: block ids times the block
  // stride pass 2^31.
  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  const int32_t* table = p.block_tables + int64_t{seq} * p.block_table_stride;
  const int bs = static_cast<int>(p.block_size);
  // Thread tid copies the 16-byte unit `part` of rows r_first + k kRowStep of a tile: the same
  // part, and the same swizzle (kRowStep is a multiple of 8), in every copy.
  constexpr int kRowStep = kThreads / kChunks;
  static_assert(kRowStep % 8 == 0);
  const int part = tid % kChunks, r_first = tid / kChunks;
  const uint32_t dst_first = wgmma::SwizzledOffset<kBlockN>(r_first, part * 8);
  const int64_t kv_row = p.n_kv_heads * int64_t{D};  // elements from a cache row to the next
  const int64_t head_off = int64_t{kvh} * D + part * 8;
  auto issue = [&](int i) {
    const uint32_t ks = k_addr(i % kStages) + dst_first, vs = ks + Smem::kTile;
    const int j_first = i * kBlockN + r_first;
    int64_t slot[kCopies];
    bool ok[kCopies];
    if (bs_shift >= 0) {  // block-uniform
#pragma unroll
      for (int k = 0; k < kCopies; ++k) {
        const int j = j_first + k * kRowStep;
        ok[k] = j < tile_end;
        const int jj = ok[k] ? j : 0;  // table[0] exists: tile_end > 0
        slot[k] = (int64_t{table[jj >> bs_shift]} << bs_shift) + (jj & (bs - 1));
      }
    } else {
#pragma unroll
      for (int k = 0; k < kCopies; ++k) {
        const int j = j_first + k * kRowStep;
        ok[k] = j < tile_end;
        const int jj = ok[k] ? j : 0;
        slot[k] = int64_t{table[jj / bs]} * bs + jj % bs;
      }
    }
#pragma unroll
    for (int k = 0; k < kCopies; ++k) {
      const int64_t off = slot[k] * kv_row + head_off;
      CpAsync16(ks + k * kRowStep * 128, k_cache + off, ok[k]);
      CpAsync16(vs + k * kRowStep * 128, v_cache + off, ok[k]);
    }
  };
  if (n_tiles > 0) issue(0);
  CpAsyncCommit();

  // Q tile into shared memory (rows past q_len are zeros).
  {
    const float qs = p.scale * prefill::kLog2e;
    for (int c = tid; c < kBlockM * kChunks; c += kThreads) {
      const int r = c / kChunks, part = c % kChunks;
      const int i = m0 + r;
      float x[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
      if (i < q_len) {
        const Tq* qr = static_cast<const Tq*>(p.q) + (int64_t{q_begin} + i) * q_stride +
                       int64_t{h} * D + part * 8;
#pragma unroll
        for (int e = 0; e < 8; ++e) x[e] = ToF32(qr[e]) * qs;
      }
      const uint4 v = make_uint4(Pack2<T>(x[0], x[1]), Pack2<T>(x[2], x[3]), Pack2<T>(x[4], x[5]),
                                 Pack2<T>(x[6], x[7]));
      *reinterpret_cast<uint4*>(smem + wgmma::SwizzledOffset<kBlockM>(r, part * 8)) = v;
    }
    wgmma::FenceProxyAsync();
  }

  // Running state of rows r0 (index 0) and r0 + 8 (index 1): max in log2 units (equal in the 4
  // lanes of a row), this lane's part of the sum, O in accumulator layout, and P of the previous
  // tile as A fragments (keys 16 kk .. 16 kk + 15).
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[D / 2];
#pragma unroll
  for (int e = 0; e < D / 2; ++e) o[e] = 0.0f;
  float s[kBlockN / 2];
  uint32_t pa[kBlockN / 16][4];
  // Warpgroup wg's Q rows (A of S = Q K^T), K (B of S) and V (B of O += P V, transposed).
  const uint32_t q_wg = q_addr + wg * 64 * 128;
  auto fence_pa = [&] {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
#pragma unroll
      for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(pa[kk][e])::"memory");
    }
  };
  auto pv = [&](int i) {  // O += P V of tile i (P in pa)
    const uint32_t vs = k_addr(i % kStages) + Smem::kTile;
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      wgmma::MmaRS<D, T>(o, pa[kk], wgmma::SmemDesc(vs + kk * 2048, kBlockN * 128, 1024), 1);
    }
  };

  // One key tile. The first (kFirst) has no previous P V to issue: a separate instantiation, so
  // that no branch sits between the fence and the wgmma instructions.
  auto step = [&](auto first, int i) {
    constexpr bool kFirst = decltype(first)::value;
    CpAsyncWait<0>();  // this thread's copies of tile i landed
    wgmma::FenceProxyAsync();
    __syncthreads();  // tile i landed for every thread; every warpgroup is done with tile i - 2
    const uint32_t ks = k_addr(i % kStages);
    // The registers wgmma reads or writes are settled before its fence.
    wgmma::FenceOperands(s);
    wgmma::FenceOperands(o);
    fence_pa();
    wgmma::Fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t at = (kk >> 2) * (kBlockM * 128) + (kk & 3) * 32;
      const uint32_t bt = (kk >> 2) * (kBlockN * 128) + (kk & 3) * 32;
      wgmma::MmaSS<kBlockN, T>(s, wgmma::SmemDesc(q_wg + at, 0, 1024),
                               wgmma::SmemDesc(ks + bt, 0, 1024), kk > 0);
    }
    wgmma::Commit();
    if constexpr (kFirst) {
      wgmma::Wait<0>();
    } else {
      pv(i - 1);  // runs on the tensor cores while this tile's softmax runs below
      wgmma::Commit();
      wgmma::Wait<1>();
    }
    wgmma::FenceOperands(s);
    // The next tile's copies (into the stage of tile i - 2) go out while P V runs.
    if (i + 1 < n_tiles) issue(i + 1);
    CpAsyncCommit();

    // Causal limit (and rows past q_len): only on tiles that cross a row's limit.
    const int kb = i * kBlockN;
    if (kb + kBlockN > min(end0, end1)) {
#pragma unroll
      for (int nb = 0; nb < kBlockN / 8; ++nb) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int key = kb + 8 * nb + 2 * t4 + e;
          if (key >= end0) s[4 * nb + e] = -INFINITY;
          if (key >= end1) s[4 * nb + 2 + e] = -INFINITY;
        }
      }
    }

    // Online softmax (log2 units). A row that has seen no key yet keeps max -inf; its
    // probabilities are computed against 0 (all 0), as is its correction (O and l are 0).
    // Maxima and sums as four interleaved chains per row (short dependency chains).
    float mq[2][4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      mq[0][c] = fmaxf(s[4 * c], s[4 * c + 1]);
      mq[1][c] = fmaxf(s[4 * c + 2], s[4 * c + 3]);
    }
#pragma unroll
    for (int nb = 4; nb < kBlockN / 8; ++nb) {
      mq[0][nb & 3] = fmaxf(mq[0][nb & 3], fmaxf(s[4 * nb], s[4 * nb + 1]));
      mq[1][nb & 3] = fmaxf(mq[1][nb & 3], fmaxf(s[4 * nb + 2], s[4 * nb + 3]));
    }
    float mx[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(fmaxf(m[r], fmaxf(mq[r][0], mq[r][1])), fmaxf(mq[r][2], mq[r][3]));
    }
    float corr[2], base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      base[r] = mx[r] == -INFINITY ? 0.0f : mx[r];
      corr[r] = prefill::Exp2(m[r] - base[r]);
      m[r] = mx[r];
    }
    float rs[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int e = 0; e < kBlockN / 2; ++e) {
      s[e] = prefill::Exp2(s[e] - base[(e >> 1) & 1]);
      rs[(e >> 1) & 1][(e >> 2) & 3] += s[e];
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[r] = l[r] * corr[r] + ((rs[r][0] + rs[r][1]) + (rs[r][2] + rs[r][3]));
    }

    wgmma::Wait<0>();  // O += P V of tile i - 1 is done: o and pa may change
    wgmma::FenceOperands(o);
    fence_pa();
    // Once the running maxima settle, most tiles leave them unchanged: O then keeps its scale.
    if (__any_sync(0xffffffffu, corr[0] != 1.0f || corr[1] != 1.0f)) {
#pragma unroll
      for (int e = 0; e < D / 2; ++e) o[e] *= corr[(e >> 1) & 1];
    }
    // P's A fragment of keys 16 kk .. 16 kk + 15: the accumulators of key blocks 2 kk, 2 kk + 1.
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      pa[kk][0] = Pack2<T>(s[8 * kk], s[8 * kk + 1]);
      pa[kk][1] = Pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = Pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = Pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
    }
  };
  if (n_tiles > 0) step(std::true_type{}, 0);
  for (int i = 1; i < n_tiles; ++i) step(std::false_type{}, i);
  if (n_tiles > 0) {
    wgmma::FenceOperands(o);
    fence_pa();
    wgmma::Fence();
    pv(n_tiles - 1);
    wgmma::Commit();
    wgmma::Wait<0>();
    wgmma::FenceOperands(o);
  }
  CpAsyncWait<0>();  // only empty groups remain
  __syncthreads();   // every warpgroup is done reading Q: its bytes hold the output tile now

  // out = O / l (rows with no visible key are 0), rounded to T, through shared memory (the
  // swizzled layout, without bank conflicts), then 16-byte stores of the rows within q_len.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    l[r] = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
  }
  const int row = 64 * wg + 16 * (warp & 3) + g;  // r0 - m0
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd) {
    const int col = 8 * nd + 2 * t4;
    *reinterpret_cast<uint32_t*>(smem + wgmma::SwizzledOffset<kBlockM>(row, col)) =
        Pack2<T>(o[4 * nd] * l[0], o[4 * nd + 1] * l[0]);
    *reinterpret_cast<uint32_t*>(smem + wgmma::SwizzledOffset<kBlockM>(row + 8, col)) =
        Pack2<T>(o[4 * nd + 2] * l[1], o[4 * nd + 3] * l[1]);
  }
  __syncthreads();
  T* out = static_cast<T*>(p.out);
  for (int c = tid; c < kBlockM * kChunks; c += kThreads) {
    const int r = c / kChunks, part = c % kChunks;
    const int i = m0 + r;
    if (i < q_len) {
      *reinterpret_cast<uint4*>(out + ((int64_t{q_begin} + i) * p.n_heads + h) * D + part * 8) =
          *reinterpret_cast<const uint4*>(smem + wgmma::SwizzledOffset<kBlockM>(r, part * 8));
    }
  }
}

template <typename Tq, typename T, int D>
Status LaunchWgmma(const AttentionParams& p, int64_t q_stride, cudaStream_t stream) {
  constexpr size_t kSmem = WgmmaSmem<D>::kBytes;
  auto* kernel = attention_prefill_wgmma_kernel<Tq, T, D>;
  CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(kSmem)));
  // An upper bound on the tiles (sum over s of ceil(q_len_s / kBlockM)) times the heads; blocks
  // past the last tile exit at once.
  const int64_t tiles = (p.n_tokens + kBlockM - 1) / kBlockM + p.n_seqs;
  const int64_t blocks = tiles * p.n_heads;
  if (blocks > INT32_MAX) return InvalidArgumentError("attention_prefill_wgmma: batch too large");
  kernel<<<static_cast<unsigned>(blocks), kThreads, kSmem, stream>>>(
      p, q_stride, prefill::BlockShift(p.block_size));
  CUDA_RETURN_IF_LAUNCH_ERROR("attention_prefill_wgmma_kernel");
  return Status::Ok();
}

}  // namespace

bool AttentionPrefillWgmmaApplies(const AttentionParams& p) {
  return AttentionPrefillApplies(p) && (p.head_dim == 64 || p.head_dim == 128);
}

Status attention_prefill_wgmma_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (!AttentionPrefillWgmmaApplies(p)) {
    return InvalidArgumentError("attention_prefill_wgmma_cuda: not a batch it takes (head_dim=" +
                                std::to_string(p.head_dim) + ")");
  }
  const int64_t q_stride = p.q_stride ? p.q_stride : p.n_heads * p.head_dim;
  return DispatchDType(p.dtype, [&](auto zero) -> Status {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float>) {
      return InvalidArgumentError("attention_prefill_wgmma_cuda: F32 cache");  // excluded
    } else if (p.head_dim == 64) {  // q is F32 (AttentionPrefillApplies)
      return LaunchWgmma<float, T, 64>(p, q_stride, stream);
    } else {
      return LaunchWgmma<float, T, 128>(p, q_stride, stream);
    }
  });
}

}  // namespace forge::cuda
