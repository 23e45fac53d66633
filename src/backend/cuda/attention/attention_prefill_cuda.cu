// attention_prefill_cuda: FlashAttention-2 style prefill on mma.sync m16n8k16 for head dims 80
// and 96 (64 and 128 run attention_prefill_wgmma.cu); F16/BF16 inputs, F32 accumulators. Grid
// (query tile, query head), 8 warps: a block takes 128 queries of one sequence (warp w owns rows
// 16w..16w+15, their Q fragments in registers, scaled by scale * log2 e and rounded to the cache
// dtype) and walks the sequence's keys in tiles of 64. Each key tile's K and V rows are gathered
// through the block table with cp.async into a 3-stage ring in shared memory (rows padded to
// D + 8 halves: ldmatrix without bank conflicts). S = Q K^T (ldmatrix of K), the online softmax
// (running max in log2 units, sums in F32) and O += P V (P rounded to the cache dtype, straight
// from the S accumulators into A fragments; ldmatrix.trans of V) all stay in registers. The key
// loop stops at the block's last causal key; a warp skips the tiles its rows cannot see and
// masks only the tiles that cross its rows' limits. The output goes through shared memory for
// 16-byte stores.
#include <cmath>
#include <string>
#include <type_traits>

#include "backend/cuda/attention/attention_prefill_cuda.h"
#include "backend/cuda/attention/attention_prefill_tiles.cuh"
#include "backend/cuda/attention/warp_mma.cuh"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"

namespace forge::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockM = 16 * kWarps;  // queries per block
constexpr int kBlockN = 64;           // keys per tile
constexpr int kStages = 3;            // K/V tiles in flight

// Shared memory of the D instantiation: kStages stages of a K tile then a V tile, kBlockN rows
// of kLd halves each. After the key loop the same bytes stage the output tile.
template <int D>
struct PrefillSmem {
  static constexpr int kLd = D + 8;  // row stride (halves): 16-byte rows, 8 rows hit 8 bank groups
  static constexpr int kTile = kBlockN * kLd;
  static constexpr int kStage = 2 * kTile;
  static constexpr size_t kBytes = size_t{kStages} * kStage * 2;
  static_assert(size_t{kBlockM} * kLd <= size_t{kStages} * kStage);
};

template <typename Tq, typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    attention_prefill_kernel(AttentionParams p, int64_t q_stride, int bs_shift) {
  static_assert(D % 16 == 0 && D <= 128);  // D / 8 even: V is read 16 columns at a time
  using Smem = PrefillSmem<D>;
  constexpr int kLd = Smem::kLd;
  constexpr int kChunks = D / 8;  // 16-byte pieces of a K/V row
  constexpr int kCopies = (kBlockN * kChunks + kThreads - 1) / kThreads;
  extern __shared__ __align__(128) unsigned char smem[];
  T* stages = reinterpret_cast<T*>(smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3;   // mma fragment row group and column pair
  const int mi = lane >> 3, ri = lane & 7;  // ldmatrix: the matrix and row this lane addresses

  // This block's (sequence, tile): blockIdx.x counts the tiles of all sequences in order.
  int seq = -1, tile = 0;
  prefill::FindTile(p, static_cast<int>(blockIdx.x), kBlockM, &seq, &tile);
  if (seq < 0) return;  // past the last tile

  const int h = blockIdx.y;
  const int kvh = h / static_cast<int>(p.n_heads / p.n_kv_heads);
  const int q_begin = p.cu_seqlens_q[seq];
  const int q_len = p.cu_seqlens_q[seq + 1] - q_begin;
  const int k_len = p.seq_lens_k[seq];
  const int m0 = tile * kBlockM;  // the block's first query within the sequence
  // Keys [0, row_end(i)) are visible to query i of the sequence (0 for rows past q_len).
  auto row_end = [&](int i) { return prefill::RowEnd(p, q_len, k_len, i); };
  const int tile_end = row_end(min(m0 + kBlockM, q_len) - 1);  // keys the block reads
  const int n_tiles = (tile_end + kBlockN - 1) / kBlockN;
  const int w0 = m0 + 16 * warp;  // the warp's first row
  // Keys below warp_end are visible to some row of the warp, keys below warp_full to all 16.
  const int warp_end = w0 < q_len ? row_end(min(w0 + 15, q_len - 1)) : 0;
  const int warp_full = w0 + 15 < q_len ? row_end(w0) : 0;
  const int end0 = row_end(w0 + g), end1 = row_end(w0 + g + 8);  // this lane's two rows

  // Key tile i (keys 64 i + [0, 64)) into stage i % kStages; keys past tile_end are zeros (so
  // that masked products stay finite). Row offsets in int64: block ids times the block stride
  // pass 2^31.
  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  const int32_t* table = p.block_tables + int64_t{seq} * p.block_table_stride;
  const int bs = static_cast<int>(p.block_size);
  auto issue = [&](int i) {
    T* ks = stages + (i % kStages) * Smem::kStage;
    T* vs = ks + Smem::kTile;
#pragma unroll
    for (int k = 0; k < kCopies; ++k) {
      const int c = static_cast<int>(threadIdx.x) + k * kThreads;
      if (kCopies * kThreads == kBlockN * kChunks || c < kBlockN * kChunks) {
        const int r = c / kChunks, part = c % kChunks;
        const int j = i * kBlockN + r;
        const bool ok = j < tile_end;
        int64_t off = 0;
        if (ok) {
          const int64_t slot = prefill::KeySlot(table, j, bs, bs_shift);
          off = (slot * p.n_kv_heads + kvh) * D + part * 8;
        }
        CpAsync16(SmemAddr(ks + r * kLd + part * 8), k_cache + off, ok);
        CpAsync16(SmemAddr(vs + r * kLd + part * 8), v_cache + off, ok);
      }
    }
  };
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < n_tiles) issue(i);
    CpAsyncCommit();
  }

  // Q fragments (A operand): rows w0 + g and w0 + g + 8, columns 16 kk + 2 t4 + {0, 1, 8, 9};
  // rows past q_len are zero.
  uint32_t qf[D / 16][4];
  {
    const float qs = p.scale * prefill::kLog2e;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = w0 + g + 8 * half;
      const bool ok = i < q_len;
      const Tq* qr = static_cast<const Tq*>(p.q) + (int64_t{q_begin} + (ok ? i : 0)) * q_stride +
                     int64_t{h} * D + 2 * t4;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        float x0 = 0.0f, x1 = 0.0f, y0 = 0.0f, y1 = 0.0f;
        if (ok) {
          x0 = ToF32(qr[16 * kk]) * qs;
          x1 = ToF32(qr[16 * kk + 1]) * qs;
          y0 = ToF32(qr[16 * kk + 8]) * qs;
          y1 = ToF32(qr[16 * kk + 9]) * qs;
        }
        qf[kk][half] = Pack2<T>(x0, x1);
        qf[kk][2 + half] = Pack2<T>(y0, y1);
      }
    }
  }

  // Running state of rows g (index 0) and g + 8 (index 1): max in log2 units (equal in the 4
  // lanes of a row), this lane's part of the sum, and O in accumulator layout.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[D / 8][4];
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;

  for (int i = 0; i < n_tiles; ++i) {
    CpAsyncWait<kStages - 2>();
    __syncthreads();  // tile i landed for every thread; stage (i - 1) % kStages is free
    const int kb = i * kBlockN;
    const bool active = kb < warp_end;  // some row of the warp sees these keys
    const T* ks = stages + (i % kStages) * Smem::kStage;
    const T* vs = ks + Smem::kTile;

    // S[16 rows][64 keys] = Q K^T, as 8 blocks of 8 keys.
    float s[kBlockN / 8][4];
#pragma unroll
    for (int nb = 0; nb < kBlockN / 8; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
    if (active) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int nb = 0; nb < kBlockN / 16; ++nb) {
          uint32_t b[4];  // keys 16 nb + 8 (mi / 2) + ri, dims 16 kk + 8 (mi % 2)
          LdMatrixX4(SmemAddr(ks + (16 * nb + 8 * (mi >> 1) + ri) * kLd + 16 * kk + 8 * (mi & 1)),
                     b);
          Mma<T>(s[2 * nb], qf[kk], b[0], b[1]);
          Mma<T>(s[2 * nb + 1], qf[kk], b[2], b[3]);
        }
      }
    }
    // The next copies go out while the tensor cores work (their block-table reads too).
    if (i + kStages - 1 < n_tiles) issue(i + kStages - 1);
    CpAsyncCommit();
    if (!active) continue;

    // Causal limit (and rows past q_len): only on tiles that cross a row's limit.
    if (kb + kBlockN > warp_full) {
#pragma unroll
      for (int nb = 0; nb < kBlockN / 8; ++nb) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int key = kb + 8 * nb + 2 * t4 + e;
          if (key >= end0) s[nb][e] = -INFINITY;
          if (key >= end1) s[nb][2 + e] = -INFINITY;
        }
      }
    }

    // Online softmax (log2 units). A row that has seen no key yet keeps max -inf; its
    // probabilities are computed against 0 (all 0), as is its correction (O and l are 0).
    float mx[2] = {m[0], m[1]};
#pragma unroll
    for (int nb = 0; nb < kBlockN / 8; ++nb) {
      mx[0] = fmaxf(mx[0], fmaxf(s[nb][0], s[nb][1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[nb][2], s[nb][3]));
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
    float rs[2] = {0.0f, 0.0f};
#pragma unroll
    for (int nb = 0; nb < kBlockN / 8; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[nb][e] = prefill::Exp2(s[nb][e] - base[e >> 1]);
        rs[e >> 1] += s[nb][e];
      }
    }
    l[0] = l[0] * corr[0] + rs[0];
    l[1] = l[1] * corr[1] + rs[1];
#pragma unroll
    for (int nd = 0; nd < D / 8; ++nd) {
      o[nd][0] *= corr[0];
      o[nd][1] *= corr[0];
      o[nd][2] *= corr[1];
      o[nd][3] *= corr[1];
    }

    // O[16 rows][D] += P V, 16 keys at a time: the S accumulators of key blocks 2 kk and
    // 2 kk + 1 are P's A fragment.
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const uint32_t pa[4] = {Pack2<T>(s[2 * kk][0], s[2 * kk][1]),
                              Pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                              Pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              Pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int nd = 0; nd < D / 8; nd += 2) {
        uint32_t b[4];  // keys 16 kk + 8 (mi % 2) + ri, dims 8 nd + 8 (mi / 2), transposed
        LdMatrixX4Trans(SmemAddr(vs + (16 * kk + 8 * (mi & 1) + ri) * kLd + 8 * nd + 8 * (mi >> 1)),
                        b);
        Mma<T>(o[nd], pa, b[0], b[1]);
        Mma<T>(o[nd + 1], pa, b[2], b[3]);
      }
    }
  }
  CpAsyncWait<0>();  // only empty groups remain
  __syncthreads();   // every warp is done with the stages: they hold the output tile now

  // out = O / l (rows with no visible key are 0), rounded to T, through the warp's 16 rows of
  // shared memory, then 16-byte stores of the rows within q_len.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    l[r] = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
  }
  T* st = stages + 16 * warp * kLd;
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd) {
    *reinterpret_cast<uint32_t*>(st + g * kLd + 8 * nd + 2 * t4) =
        Pack2<T>(o[nd][0] * l[0], o[nd][1] * l[0]);
    *reinterpret_cast<uint32_t*>(st + (g + 8) * kLd + 8 * nd + 2 * t4) =
        Pack2<T>(o[nd][2] * l[1], o[nd][3] * l[1]);
  }
  __syncwarp();
  T* out = static_cast<T*>(p.out);
#pragma unroll
  for (int c = lane; c < 16 * kChunks; c += 32) {
    const int r = c / kChunks, part = c % kChunks;
    const int i = w0 + r;
    if (i < q_len) {
      *reinterpret_cast<uint4*>(out + ((int64_t{q_begin} + i) * p.n_heads + h) * D + part * 8) =
          *reinterpret_cast<const uint4*>(st + r * kLd + part * 8);
    }
  }
}

template <typename Tq, typename T, int D>
Status LaunchPrefill(const AttentionParams& p, int64_t q_stride, cudaStream_t stream) {
  constexpr size_t kSmem = PrefillSmem<D>::kBytes;
  auto* kernel = attention_prefill_kernel<Tq, T, D>;
  CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(kSmem)));
  // An upper bound on the tiles (sum over s of ceil(q_len_s / kBlockM)); the rest exit at once.
  const int64_t tiles = (p.n_tokens + kBlockM - 1) / kBlockM + p.n_seqs;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(p.n_heads));
  kernel<<<grid, kThreads, kSmem, stream>>>(p, q_stride, prefill::BlockShift(p.block_size));
  CUDA_RETURN_IF_LAUNCH_ERROR("attention_prefill_kernel");
  return Status::Ok();
}

}  // namespace

bool AttentionPrefillApplies(const AttentionParams& p) {
  return (p.dtype == DType::kF16 || p.dtype == DType::kBF16) && p.q_type == DType::kF32 &&
         p.softcap == 0.0f && p.window == 0 &&
         (p.head_dim == 64 || p.head_dim == 80 || p.head_dim == 96 || p.head_dim == 128) &&
         p.n_tokens > p.n_seqs && p.n_seqs > 0 && p.n_kv_heads > 0 &&
         p.n_heads % p.n_kv_heads == 0 && p.block_size > 0;
}

Status attention_prefill_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (!AttentionPrefillApplies(p)) {
    return InvalidArgumentError("attention_prefill_cuda: not a batch it takes (dtype, head_dim=" +
                                std::to_string(p.head_dim) +
                                ", n_tokens=" + std::to_string(p.n_tokens) +
                                ", n_seqs=" + std::to_string(p.n_seqs) + ")");
  }
  if (AttentionPrefillWgmmaApplies(p)) return attention_prefill_wgmma_cuda(p, stream);
  if (p.n_heads > 65535) return InvalidArgumentError("attention_prefill_cuda: n_heads > 65535");
  const int64_t q_stride = p.q_stride ? p.q_stride : p.n_heads * p.head_dim;
  return DispatchDType(p.dtype, [&](auto zero) -> Status {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float>) {
      return InvalidArgumentError("attention_prefill_cuda: F32 cache");  // excluded above
    } else {
      // 64 and 128 went to the wgmma kernel above; q is F32 (AttentionPrefillApplies).
      return p.head_dim == 80 ? LaunchPrefill<float, T, 80>(p, q_stride, stream)
                              : LaunchPrefill<float, T, 96>(p, q_stride, stream);
    }
  });
}

}  // namespace forge::cuda
