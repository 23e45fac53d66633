// What the two prefill attention kernels share: the block -> (sequence, query tile) mapping over
// a ragged batch (the last tile of a sequence, which sees the most keys, first), the visible-key
// rule of a query row, and a fast 2^x. Included by the prefill kernels' .cu files only.
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace forge::cuda::prefill {

constexpr float kLog2e = 1.4426950408889634f;

// 2^x (approximate, flush to zero; 2^-inf = 0).
__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The rank-th query tile of the batch: tiles counted over the sequences in order, a sequence of
// q_len queries having ceil(q_len / block_m); within a sequence the last tile comes first. Every
// warp scans cu_seqlens_q 32 sequences at a time and gets the same answer, so a caller's exit on
// *seq < 0 (rank past the last tile) is block-uniform.
__device__ __forceinline__ void FindTile(const AttentionParams& p, int rank, int block_m, int* seq,
                                         int* tile) {
  const int lane = threadIdx.x & 31;
  *seq = -1;
  *tile = 0;
  int remaining = rank;
  for (int64_t base = 0; base < p.n_seqs; base += 32) {
    const int64_t s = base + lane;
    int nt = 0;
    if (s < p.n_seqs) nt = (p.cu_seqlens_q[s + 1] - p.cu_seqlens_q[s] + block_m - 1) / block_m;
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
      const int count = __shfl_sync(0xffffffffu, nt, src);
      *seq = static_cast<int>(base) + src;
      *tile = count - 1 - (remaining - before);
      return;
    }
    remaining -= total;
  }
}

// Keys [0, RowEnd(i)) are visible to query i of a sequence of q_len queries over k_len keys (the
// queries are the last q_len of the keys' positions); 0 for rows past q_len.
__device__ __forceinline__ int RowEnd(const AttentionParams& p, int q_len, int k_len, int i) {
  if (i >= q_len) return 0;
  return max(p.causal ? min(k_len, k_len - q_len + i + 1) : k_len, 0);
}

// log2(block_size) for a power of two (shifts in the gather), else -1 (divisions).
inline int BlockShift(int64_t block_size) {
  if ((block_size & (block_size - 1)) != 0) return -1;
  int shift = 0;
  while ((int64_t{1} << shift) < block_size) ++shift;
  return shift;
}

// Cache row (slot) of key j of a sequence whose block table is `table`.
__device__ __forceinline__ int64_t KeySlot(const int32_t* table, int j, int bs, int bs_shift) {
  return bs_shift >= 0 ? (int64_t{table[j >> bs_shift]} << bs_shift) + (j & (bs - 1))
                       : int64_t{table[j / bs]} * bs + j % bs;
}

}  // namespace forge::cuda::prefill
