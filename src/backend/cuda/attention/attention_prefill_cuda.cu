// attention_prefill_cuda: grid (query tile, head), 4 warps. A block takes 64 queries of one
// sequence (warp w owns rows 16w..16w+15) and walks the sequence's keys in tiles of 64, gathered
// through the block table into shared memory as half. S = Q K^T and O += P V run on tensor cores
// (wmma 16x16x16, half/bf16 inputs, F32 accumulators); S and O sit in shared memory as F32 so
// the per-row online softmax (running max m, sum l, O rescaled by exp(m_old - m_new)) is plain
// code. The key loop stops at the tile's last query's causal limit.
#include <mma.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "backend/cuda/attention/attention_prefill_cuda.h"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"

namespace forge::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockM = 16 * kWarps;  // queries per block
constexpr int kBlockN = 64;           // keys per tile
constexpr int kLdS = kBlockN + 4;     // F32 row stride of S (floats)
constexpr int kLdP = kBlockN + 8;     // row stride of P (halves)
constexpr float kLog2e = 1.4426950408889634f;

// Shared memory of the D instantiation, in bytes; every region is a multiple of 128 bytes.
template <int D>
struct PrefillSmem {
  static constexpr int kLdH = D + 8;  // row stride of Q, K, V (halves)
  static constexpr int kLdO = D + 4;  // row stride of O (floats)
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = kQ + size_t{kBlockM} * kLdH * 2;
  static constexpr size_t kV = kK + size_t{kBlockN} * kLdH * 2;
  static constexpr size_t kS = kV + size_t{kBlockN} * kLdH * 2;
  static constexpr size_t kP = kS + size_t{kBlockM} * kLdS * 4;
  static constexpr size_t kO = kP + size_t{kBlockM} * kLdP * 2;
  static constexpr size_t kBytes = kO + size_t{kBlockM} * kLdO * 4;
  static_assert(kK % 128 == 0 && kS % 128 == 0 && kP % 128 == 0 && kO % 128 == 0);
};

template <typename Tq, typename T, int D>
__global__ void __launch_bounds__(kThreads)
    attention_prefill_kernel(AttentionParams p, int64_t q_stride) {
  static_assert(D % 16 == 0 && D <= 256);
  using Smem = PrefillSmem<D>;
  constexpr int kLdH = Smem::kLdH, kLdO = Smem::kLdO;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem + Smem::kQ);          // [kBlockM][kLdH]
  T* ks = reinterpret_cast<T*>(smem + Smem::kK);          // [kBlockN][kLdH]
  T* vs = reinterpret_cast<T*>(smem + Smem::kV);          // [kBlockN][kLdH]
  float* ss = reinterpret_cast<float*>(smem + Smem::kS);  // [kBlockM][kLdS]
  T* ps = reinterpret_cast<T*>(smem + Smem::kP);          // [kBlockM][kLdP]
  float* os = reinterpret_cast<float*>(smem + Smem::kO);  // [kBlockM][kLdO]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  // This block's (sequence, tile): blockIdx.x counts the tiles of all sequences in order, a
  // sequence of q_len queries having ceil(q_len / kBlockM). Every warp scans cu_seqlens_q 32
  // sequences at a time (the same result in each warp), so the exit below is block-uniform.
  int seq = -1, tile = 0;
  {
    int remaining = static_cast<int>(blockIdx.x);
    for (int64_t base = 0; base < p.n_seqs; base += 32) {
      const int64_t s = base + lane;
      int nt = 0;
      if (s < p.n_seqs) nt = (p.cu_seqlens_q[s + 1] - p.cu_seqlens_q[s] + kBlockM - 1) / kBlockM;
      nt = max(nt, 0);
      int incl = nt;  // inclusive prefix sum over the lanes
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
      }
      const int total = __shfl_sync(0xffffffffu, incl, 31);
      if (remaining < total) {
        const unsigned hit = __ballot_sync(0xffffffffu, incl > remaining);
        const int src = __ffs(hit) - 1;
        const int before = __shfl_sync(0xffffffffu, incl - nt, src);
        seq = static_cast<int>(base) + src;
        tile = remaining - before;
        break;
      }
      remaining -= total;
    }
  }
  if (seq < 0) return;  // past the last tile

  const int h = blockIdx.y;
  const int kvh = h / static_cast<int>(p.n_heads / p.n_kv_heads);
  const int q_begin = p.cu_seqlens_q[seq];
  const int q_len = p.cu_seqlens_q[seq + 1] - q_begin;
  const int k_len = p.seq_lens_k[seq];
  const int m0 = tile * kBlockM;  // the tile's first query within the sequence
  // Keys [0, row_end(i)) are visible to query i of the sequence (0 for rows past q_len).
  auto row_end = [&](int i) -> int {
    if (i >= q_len) return 0;
    return p.causal ? min(k_len, k_len - q_len + i + 1) : k_len;
  };
  const int tile_end = max(row_end(min(m0 + kBlockM, q_len) - 1), 0);
  // The warp's rows are m0 + 16 warp + [0, 16); its last one within q_len sees the most keys.
  const int warp_last = min(m0 + 16 * warp + 15, q_len - 1);
  const int warp_end = warp_last >= m0 + 16 * warp ? max(row_end(warp_last), 0) : 0;

  // Q tile, scaled by scale * log2(e) in F32 and rounded to T; rows past q_len are 0. O = 0.
  const float q_scale = p.scale * kLog2e;
  const Tq* q = static_cast<const Tq*>(p.q) + int64_t{h} * D;
  for (int idx = threadIdx.x; idx < kBlockM * D; idx += kThreads) {
    const int r = idx / D, d = idx % D;
    const int i = m0 + r;
    const float x = i < q_len ? ToF32(q[(int64_t{q_begin} + i) * q_stride + d]) * q_scale : 0.0f;
    qs[r * kLdH + d] = FromF32<T>(x);
  }
  for (int idx = threadIdx.x; idx < kBlockM * kLdO; idx += kThreads) os[idx] = 0.0f;
  __syncthreads();

  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qf[D / 16];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    wmma::load_matrix_sync(qf[kk], qs + (16 * warp) * kLdH + 16 * kk, kLdH);
  }
  // Running max (log2 units) and sum of each of the warp's 16 rows; equal in every lane.
  float row_m[16], row_l[16];
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    row_m[r] = -INFINITY;
    row_l[r] = 0.0f;
  }

  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  const int32_t* table = p.block_tables + int64_t{seq} * p.block_table_stride;
  const int bs = static_cast<int>(p.block_size);
  constexpr int kChunks = D / 8;  // 16-byte pieces of a K/V row

  for (int kb = 0; kb < tile_end; kb += kBlockN) {
    // Gather keys [kb, kb + kBlockN) of the sequence; keys past tile_end are zeros.
    for (int idx = threadIdx.x; idx < kBlockN * kChunks; idx += kThreads) {
      const int r = idx / kChunks, c = idx % kChunks;
      const int j = kb + r;
      uint4 kx = make_uint4(0, 0, 0, 0), vx = make_uint4(0, 0, 0, 0);
      if (j < tile_end) {
        const int64_t slot = int64_t{table[j / bs]} * bs + j % bs;
        const int64_t off = (slot * p.n_kv_heads + kvh) * D + 8 * c;
        kx = *reinterpret_cast<const uint4*>(k_cache + off);
        vx = *reinterpret_cast<const uint4*>(v_cache + off);
      }
      *reinterpret_cast<uint4*>(ks + r * kLdH + 8 * c) = kx;
      *reinterpret_cast<uint4*>(vs + r * kLdH + 8 * c) = vx;
    }
    __syncthreads();

    // A warp whose rows see none of the tile's keys skips it (its state would not change).
    if (kb < warp_end) {
      // S[16 rows][64 keys] = Q K^T (log2 units: Q carries scale * log2 e).
#pragma unroll
      for (int c = 0; c < kBlockN / 16; ++c) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
        wmma::fill_fragment(sf, 0.0f);
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kf;
          wmma::load_matrix_sync(kf, ks + (16 * c) * kLdH + 16 * kk, kLdH);
          wmma::mma_sync(sf, qf[kk], kf, sf);
        }
        wmma::store_matrix_sync(ss + (16 * warp) * kLdS + 16 * c, sf, kLdS, wmma::mem_row_major);
      }
      __syncwarp();

      // Online softmax, one row at a time: lane takes keys lane and lane + 32.
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        const int row = 16 * warp + r;
        const int end = row_end(m0 + row);
        float s0 = ss[row * kLdS + lane], s1 = ss[row * kLdS + lane + 32];
        s0 = kb + lane < end ? s0 : -INFINITY;
        s1 = kb + lane + 32 < end ? s1 : -INFINITY;
        const float m_new = fmaxf(row_m[r], WarpMax(fmaxf(s0, s1)));
        float corr = 1.0f, p0 = 0.0f, p1 = 0.0f;
        if (m_new != -INFINITY) {          // some key seen so far
          corr = exp2f(row_m[r] - m_new);  // 0 when row_m is still -inf
          p0 = exp2f(s0 - m_new);
          p1 = exp2f(s1 - m_new);
        }
        row_l[r] = row_l[r] * corr + WarpSum(p0 + p1);
        row_m[r] = m_new;
        ps[row * kLdP + lane] = FromF32<T>(p0);
        ps[row * kLdP + lane + 32] = FromF32<T>(p1);
        for (int d = lane; d < D; d += 32) os[row * kLdO + d] *= corr;
      }
      __syncwarp();

      // O[16 rows][D] += P V.
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pf[kBlockN / 16];
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        wmma::load_matrix_sync(pf[kk], ps + (16 * warp) * kLdP + 16 * kk, kLdP);
      }
#pragma unroll
      for (int c = 0; c < D / 16; ++c) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> of;
        float* o_tile = os + (16 * warp) * kLdO + 16 * c;
        wmma::load_matrix_sync(of, o_tile, kLdO, wmma::mem_row_major);
#pragma unroll
        for (int kk = 0; kk < kBlockN / 16; ++kk) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vf;
          wmma::load_matrix_sync(vf, vs + (16 * kk) * kLdH + 16 * c, kLdH);
          wmma::mma_sync(of, pf[kk], vf, of);
        }
        wmma::store_matrix_sync(o_tile, of, kLdO, wmma::mem_row_major);
      }
    }
    __syncthreads();  // K/V are overwritten next
  }
  __syncwarp();

  // out = O / l; rows with no visible key (l == 0) are 0.
  T* out = static_cast<T*>(p.out);
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    const int row = 16 * warp + r;
    const int i = m0 + row;
    if (i >= q_len) break;
    const float inv = row_l[r] > 0.0f ? 1.0f / row_l[r] : 0.0f;
    T* o = out + ((int64_t{q_begin} + i) * p.n_heads + h) * D;
    for (int d = lane; d < D; d += 32) o[d] = FromF32<T>(os[row * kLdO + d] * inv);
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
  kernel<<<grid, kThreads, kSmem, stream>>>(p, q_stride);
  CUDA_RETURN_IF_LAUNCH_ERROR("attention_prefill_kernel");
  return Status::Ok();
}

}  // namespace

bool AttentionPrefillApplies(const AttentionParams& p) {
  return (p.dtype == DType::kF16 || p.dtype == DType::kBF16) &&
         (p.head_dim == 64 || p.head_dim == 80 || p.head_dim == 96 || p.head_dim == 128) &&
         p.n_tokens > p.n_seqs && p.n_seqs > 0 && p.n_kv_heads > 0 && p.n_heads % p.n_kv_heads == 0;
}

Status attention_prefill_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (!AttentionPrefillApplies(p)) {
    return InvalidArgumentError("attention_prefill_cuda: not a batch it takes (dtype, head_dim=" +
                                std::to_string(p.head_dim) +
                                ", n_tokens=" + std::to_string(p.n_tokens) +
                                ", n_seqs=" + std::to_string(p.n_seqs) + ")");
  }
  if (p.n_heads > 65535) return InvalidArgumentError("attention_prefill_cuda: n_heads > 65535");
  const int64_t q_stride = p.q_stride ? p.q_stride : p.n_heads * p.head_dim;
  return DispatchDType(p.q_type, [&](auto q_zero) {
    return DispatchDType(p.dtype, [&](auto zero) -> Status {
      using Tq = decltype(q_zero);
      using T = decltype(zero);
      if constexpr (std::is_same_v<T, float>) {
        return InvalidArgumentError("attention_prefill_cuda: F32 cache");  // excluded above
      } else {
        switch (p.head_dim) {
          case 64:
            return LaunchPrefill<Tq, T, 64>(p, q_stride, stream);
          case 80:
            return LaunchPrefill<Tq, T, 80>(p, q_stride, stream);
          case 96:
            return LaunchPrefill<Tq, T, 96>(p, q_stride, stream);
          default:
            return LaunchPrefill<Tq, T, 128>(p, q_stride, stream);
        }
      }
    });
  });
}

}  // namespace forge::cuda
