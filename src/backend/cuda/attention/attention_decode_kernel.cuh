// Device templates of split-KV decode attention (attention_decode_cuda.cu launches them): the
// split rule, the workspace arguments and the tensor-core main kernel over (sequence, split, KV
// head) items, whose K/V pipeline runs on from one item into the next. Included by
// attention_decode_cuda.cu only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/backend.h"
#include "backend/cuda/attention/warp_mma.cuh"
#include "backend/cuda/bulk_copy.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/act_quant/act_quant.cuh"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda::decode {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTileKeys = 16;       // keys per pipeline stage of a warp (the mma k of P V)
constexpr int kStages = 3;          // cp.async stages per warp
constexpr int kMaxRows = 16;        // query heads per KV head (the mma M)
constexpr int kMaxPlanSeqs = 1024;  // most sequences the split plan holds (shared memory)
constexpr int64_t kMaxSplits = 128;
// Fewest keys per split: kMinChunkPerSeq per sequence of the batch, at most kMinChunkTokens
// (MinChunk: 128 at one sequence, 1024 from 8 on; 2 to 7 sequences were not measured apart).
// H200, 8B Q4_K_M, S_TG at one sequence after 2,048 prompt tokens: 1024 -> 356, 512 -> 372,
// 256 -> 381, 128 -> 395 tokens/s (with evict-first weights: 370 -> 417-419); 128 at 16
// sequences after 512 lost 7% (3,315 -> 3,094): that batch already fills the GPU with items
// (bench/results/decode-attn-minchunk-*-s20.txt).
constexpr int64_t kMinChunkTokens = 1024;
constexpr int64_t kMinChunkPerSeq = 128;
constexpr int kFuseMaxRows = 8;          // query heads per KV head the in-kernel merge takes
constexpr int kMaxCountedKvHeads = 128;  // KV heads the merge counters cover
constexpr int kQBytes = 4096;            // the shared buffer of the next item's q rows
constexpr float kLog2e = 1.4426950408889634f;

// The chunk of a batch of n sequences with batch_keys keys on a GPU of `capacity` resident
// blocks: none split where the (sequence, KV head) pairs alone fill the GPU; else the keys spread
// so that the items (a sequence of len keys takes at most ceil(len / chunk) splits) still fit in
// one round: with chunk >= keys * KV / (capacity - n * KV), sum ceil(len / chunk) * KV <= n * KV +
// keys * KV / chunk <= capacity. At least MinChunk(n) keys a split (shorter splits cost more
// in their merge than they gain). A sequence's splits therefore depend on the batch: the
// GPU is compared within the bounds (DESIGN.md), and its matmuls differ by batch size anyway.
__host__ __device__ inline int64_t MinChunk(int64_t n) {
  const int64_t c = kMinChunkPerSeq * (n < 1 ? 1 : n);
  return c < kMinChunkTokens ? c : kMinChunkTokens;
}
__host__ __device__ inline int64_t BatchChunk(int64_t batch_keys, int64_t n, int64_t n_kv_heads,
                                              int64_t capacity) {
  const int64_t pairs = n * n_kv_heads;
  const int64_t min_chunk = MinChunk(n);
  if (pairs >= capacity) return batch_keys > min_chunk ? batch_keys : min_chunk;
  const int64_t free = capacity - pairs;
  const int64_t c = (batch_keys * n_kv_heads + free - 1) / free;
  return c < min_chunk ? min_chunk : c;
}

// The split rule: a sequence of len keys is cut into ceil(len / chunk) splits (1 to kMaxSplits)
// of whole KV blocks, as even as blocks allow.
__host__ __device__ inline int64_t SplitBlocks(int64_t len, int64_t bs, int64_t chunk) {
  const int64_t blocks = (len + bs - 1) / bs;
  if (blocks <= 1) return 1;
  int64_t want = (len + chunk - 1) / chunk;
  want = want < 1 ? 1 : (want > kMaxSplits ? kMaxSplits : want);
  return (blocks + want - 1) / want;
}
__host__ __device__ inline int64_t SplitCount(int64_t len, int64_t bs, int64_t chunk) {
  const int64_t blocks = (len + bs - 1) / bs;
  if (blocks <= 1) return 1;
  const int64_t per = SplitBlocks(len, bs, chunk);
  return (blocks + per - 1) / per;
}

// What the kernels share beyond AttentionParams. Workspace: plan, counters, part_ml, part_o.
struct SplitArgs {
  int64_t q_stride = 0;
  int32_t* plan = nullptr;  // [n_seqs + 1] first item index of each sequence (block 0 writes)
  // [kMaxPlanSeqs * kMaxCountedKvHeads] splits of (sequence, KV head) done so far in this call:
  // zero before the call, and zero again after it (the block that completes one resets it).
  int32_t* counters = nullptr;
  float* part_ml = nullptr;  // [cap_parts, 2] running max (log2 units) and sum of a split
  float* part_o = nullptr;   // [cap_parts, head_dim] unnormalized output of a split
  int64_t cap_parts = 0;     // (split, head) partials the workspace holds
  int split = 0;             // 0: one item per (sequence, KV head) and the output written directly
  int fuse = 0;      // split mode: the block that finishes a (sequence, KV head) merges its splits
  int q_bulk = 0;    // q rows of an item are one 16-byte aligned run of <= kQBytes: bulk-copied
  int group = 1;     // query heads per KV head (1..kMaxRows)
  int capacity = 1;  // blocks of the kernel resident on the GPU (BatchChunk)
  // One query row (n_seqs 1), F16 out, head_dim a multiple of 32: also the row's form
  // (act_quant.cuh), each head's blocks formed by the block that writes its output; or null.
  int8_t* out_q = nullptr;
};

// Shared memory of the main kernel, in bytes: kStages stages, each of the kWarps warps' K then V
// tiles ([stage][warp]; kTileKeys rows of D + 8 halves: 16-byte padding keeps ldmatrix free of
// bank conflicts), then the plan. The warps' partial states (o, m, l: kMergeBytes) are merged in
// the last stage (at kMerge), while the next item's first kStages - 1 tiles stream into the others.
template <int D>
struct DecodeSmem {
  static constexpr int kLd = D + 8;
  static constexpr int kStageHalves = 2 * kTileKeys * kLd;                  // a warp's K and V tile
  static constexpr size_t kStageBytes = size_t{kWarps} * kStageHalves * 2;  // the warps' tiles
  static constexpr size_t kMerge = (kStages - 1) * kStageBytes;
  static constexpr size_t kMergeBytes = size_t{kWarps} * kMaxRows * (D + 2) * 4;
  static constexpr size_t kPlan = kStages * kStageBytes;
  static constexpr size_t kQ = kPlan + ((kMaxPlanSeqs + 1) * 4 + 15) / 16 * 16;  // q rows
  static constexpr size_t kQBar = kQ + kQBytes;  // the q buffer's mbarrier
  static constexpr size_t kBytes = kQBar + 8;
  // The in-kernel merge's scratch in the merge stage: the rows' c_j, then the warps' sums of the
  // G x D outputs.
  static constexpr size_t kFuseBytes =
      size_t{kFuseMaxRows} * kMaxSplits * 4 + size_t{kWarps} * kFuseMaxRows * D * 4;
  static_assert(kFuseBytes <= kStageBytes);
  static_assert(kStages >= 2 && kStageBytes % 128 == 0 && kMergeBytes <= kStageBytes);
  // 2 blocks per SM (__launch_bounds__): 228 KB per SM, 1 KB reserved per block, static red.
  static_assert(2 * (kBytes + 1024 + 128) <= 228 * 1024);
};

// An item (sequence s, split j, KV head kvh) as the warp sees it: keys [k0, k1), of which the warp
// takes my_tiles tiles (its i-th: keys k0 + 16 (warp + 4 i) + [0, 16)). my_tiles is 0 past the last
// item.
struct DecodeItem {
  bool valid = false;
  int s = 0, j = 0, n_split = 1, kvh = 0;
  int k0 = 0, k1 = 0, my_tiles = 0;
  int newest = 0;                  // the sequence's last key (its query's own, this step's)
  const int32_t* table = nullptr;  // [max blocks] the sequence's block table
};

// Sum of v over the block, in every thread (red: kWarps values of shared memory).
template <typename V>
__device__ __forceinline__ V BlockSum(V v, V* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  V total = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += red[w];
  __syncthreads();
  return total;
}

// Sum of v over the threads before this one (threadIdx order), in every thread.
__device__ __forceinline__ int BlockExclusiveScan(int v, int* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int incl = v;
  for (int o = 1; o < 32; o <<= 1) {
    const int u = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += u;
  }
  if (lane == 31) red[warp] = incl;
  __syncthreads();
  int before = 0;
  for (int w = 0; w < warp; ++w) before += red[w];
  __syncthreads();
  return before + incl - v;
}

// The in-kernel merge of item it's (sequence, KV head): out = sum_j O_j c_j / sum_j l_j c_j with
// c_j = 2^(m_j - max m) over its n_split partials (read past L1: other blocks wrote them), for
// its G <= kFuseMaxRows heads. Each row's weights come from one warp (lanes over splits, then the
// fixed butterfly); warp w sums splits w, w + 4, ... of every output, and the warps' sums are
// added in order: a fixed order for a given split count. scratch: the merge stage (kFuseBytes).
template <typename T, int D>
__device__ void MergeSplits(const AttentionParams& p, const SplitArgs& a, const DecodeItem& it,
                            int64_t first_part, int64_t tq, float* scratch) {
  static_assert(kWarps == 4);
  constexpr int kPer = kFuseMaxRows * D / 128;  // float4s a lane sums at most
  __shared__ float sum_s[kFuseMaxRows];
  const int G = a.group, n_split = it.n_split, GD = G * D;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* c_s = scratch;                            // [kFuseMaxRows][kMaxSplits]: c_j
  float* acc_s = c_s + kFuseMaxRows * kMaxSplits;  // [kWarps][G * D]
  const int64_t h0 = int64_t{it.kvh} * G;
  auto part = [&](int j, int row) { return first_part + int64_t{j} * p.n_heads + h0 + row; };
  const float2* ml = reinterpret_cast<const float2*>(a.part_ml);
  constexpr int kPerLane = kMaxSplits / 32;  // splits lane, lane + 32, ...
  for (int row = warp; row < G; row += kWarps) {
    float2 v[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int j = lane + 32 * i;
      v[i] = j < n_split ? __ldcg(ml + part(j, row)) : make_float2(0.0f, 0.0f);
    }
    float mmax = -INFINITY;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (v[i].y > 0.0f) mmax = fmaxf(mmax, v[i].x);
    }
    for (int o = 16; o > 0; o >>= 1) mmax = fmaxf(mmax, __shfl_xor_sync(0xffffffffu, mmax, o));
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int j = lane + 32 * i;
      const float c = v[i].y > 0.0f ? exp2f(v[i].x - mmax) : 0.0f;
      if (j < n_split) c_s[row * kMaxSplits + j] = c;
      sum += v[i].y > 0.0f ? v[i].y * c : 0.0f;
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) sum_s[row] = sum;
  }
  __syncthreads();
  float4 acc[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) acc[e] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const int n4 = GD / 4;
#pragma unroll 4
  for (int j = warp; j < n_split; j += kWarps) {
    const float4* src = reinterpret_cast<const float4*>(a.part_o + part(j, 0) * D);
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int q = lane + 32 * e;
      if (q < n4) {
        const float c = c_s[(4 * q / D) * kMaxSplits + j];
        const float4 v = __ldcg(src + q);
        acc[e].x = fmaf(v.x, c, acc[e].x);
        acc[e].y = fmaf(v.y, c, acc[e].y);
        acc[e].z = fmaf(v.z, c, acc[e].z);
        acc[e].w = fmaf(v.w, c, acc[e].w);
      }
    }
  }
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int q = lane + 32 * e;
    if (q < n4) reinterpret_cast<float4*>(acc_s + warp * GD)[q] = acc[e];
  }
  __syncthreads();
  T* out = static_cast<T*>(p.out) + (tq * p.n_heads + h0) * D;
  for (int idx = threadIdx.x; idx < GD; idx += kThreads) {
    const float o = (acc_s[idx] + acc_s[GD + idx]) + (acc_s[2 * GD + idx] + acc_s[3 * GD + idx]);
    const float sum = sum_s[idx / D];
    out[idx] = FromF32<T>(sum > 0.0f ? o / sum : 0.0f);
  }
}

// Grid: a fixed number of blocks (at most the resident capacity), each looping over items
// (sequence s, split j, KV head) in the order of the plan. Block 0..: item = blockIdx.x +
// i * gridDim.x. An item's keys [k0, k1) go to the 4 warps in tiles of 16 keys (warp w takes
// tiles w, w + 4, ...), each streamed through a 3-stage cp.async pipeline; S = Q K^T and
// O += P V run on mma.sync m16n8k16 with the item's G query heads as the rows (padded to 16,
// q scaled by scale * log2 e and rounded to T, as the prefill kernel does), so each K/V
// element is read from memory once for all G heads. The warps' (max, sum, O) states are merged
// in shared memory (stage 2); a sequence with one split writes its output, else the split's F32
// partial goes to the workspace, and (fuse) the block that completes the (sequence, KV head)'s
// splits merges them in split order, or attention_merge_kernel does. The pipeline does not drain
// between items: once a warp has consumed its last tile of an item, it issues its first 2 tiles
// of the block's next item into stages 0 and 1, which load during the merge; the next item's q
// rows are bulk-copied (q_bulk) as soon as this item's are in registers.
//
// kSplit (a.split): the plan, the in-kernel merge and the q bulk copies; the other form is the
// one-item-per-(sequence, KV head) kernel alone (no code, hence no registers, for them).
template <typename Tq, typename T, int D, bool kSplit>
__global__ void __launch_bounds__(kThreads, 2)
    attention_split_kernel(AttentionParams p, SplitArgs a) {
  static_assert(D % 16 == 0 && (kTileKeys * (D / 8)) % 32 == 0);
  using Smem = DecodeSmem<D>;
  constexpr int kLd = Smem::kLd;
  constexpr int kChunks = D / 8;  // 16-byte pieces of a K/V row
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ int red[kWarps];
  __shared__ long long red64[kWarps];
  __shared__ int last_s;
  const uint32_t qbar = SmemAddr(smem + Smem::kQBar);
  const bool q_bulk = kSplit && a.q_bulk;
  if (threadIdx.x == 0 && q_bulk) {
    MbarInit(qbar, 1);
    FenceBarrierInit();
  }
  // Launched as a dependent (pdl.cuh). Before waiting for the kernel before (which writes q and
  // each sequence's newest K/V row: rope_kv_write), only what the step's metadata (lengths, block
  // tables: uploaded before its first kernel) and earlier steps wrote is read: the plan, and the
  // first tiles' K/V rows but each sequence's last. Nothing is written to global memory before it.
  int* plan = reinterpret_cast<int*>(smem + Smem::kPlan);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t4 = lane & 3;  // mma fragment row group and column pair
  const int n = static_cast<int>(p.n_seqs);
  const int bs = static_cast<int>(p.block_size);
  const int G = a.group;

  // The plan (split mode): every block computes the same one. The chunk (BatchChunk) doubles
  // until the partials fit the workspace (only for very large batches). Its barriers also order
  // the q barrier's initialization before any wait on it.
  int64_t chunk = 0;
  int total = n;
  if constexpr (kSplit) {
    long long keys = 0;
    for (int s = threadIdx.x; s < n; s += kThreads) keys += p.seq_lens_k[s];
    chunk = BatchChunk(BlockSum(keys, red64), n, p.n_kv_heads, a.capacity);
    for (;;) {
      int local = 0;
      for (int s = threadIdx.x; s < n; s += kThreads) {
        local += static_cast<int>(SplitCount(p.seq_lens_k[s], bs, chunk));
      }
      total = BlockSum(local, red);
      if (int64_t{total} * p.n_heads <= a.cap_parts) break;
      chunk *= 2;
    }
    const int per = (n + kThreads - 1) / kThreads;
    const int b0 = min(n, static_cast<int>(threadIdx.x) * per), b1 = min(n, b0 + per);
    int local = 0;
    for (int s = b0; s < b1; ++s) local += static_cast<int>(SplitCount(p.seq_lens_k[s], bs, chunk));
    int at = BlockExclusiveScan(local, red);
    for (int s = b0; s < b1; ++s) {
      plan[s] = at;
      at += static_cast<int>(SplitCount(p.seq_lens_k[s], bs, chunk));
    }
    if (threadIdx.x == 0) plan[n] = total;
    __syncthreads();
  }

  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  constexpr int kStageStride = kWarps * Smem::kStageHalves;  // halves from a stage to the next
  T* stages = reinterpret_cast<T*>(smem) + warp * Smem::kStageHalves;  // this warp's stage 0
  const int64_t n_items = int64_t{total} * p.n_kv_heads;
  auto item_at = [&](int64_t item) {
    DecodeItem it;
    if (item >= n_items) return it;
    it.valid = true;
    const int f = static_cast<int>(item / p.n_kv_heads);
    it.kvh = static_cast<int>(item % p.n_kv_heads);
    it.s = f;
    if constexpr (kSplit) {  // the last sequence whose first item is <= f
      int lo = 0, hi = n - 1;
      while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (plan[mid] <= f)
          lo = mid;
        else
          hi = mid - 1;
      }
      it.s = lo;
      it.j = f - plan[lo];
      it.n_split = plan[lo + 1] - plan[lo];
    }
    const int len = p.seq_lens_k[it.s];
    it.k1 = len;
    it.newest = len - 1;
    if (it.n_split > 1) {
      const int64_t keys = SplitBlocks(len, bs, chunk) * bs;
      it.k0 = static_cast<int>(it.j * keys);
      it.k1 = static_cast<int>(min(int64_t{len}, it.k0 + keys));
    }
    const int n_tiles = (it.k1 - it.k0 + kTileKeys - 1) / kTileKeys;
    it.my_tiles = n_tiles > warp ? (n_tiles - warp + kWarps - 1) / kWarps : 0;
    it.table = p.block_tables + int64_t{it.s} * p.block_table_stride;
    return it;
  };
  auto q_rows = [&](const DecodeItem& it) {
    return static_cast<const Tq*>(p.q) + int64_t{p.cu_seqlens_q[it.s]} * a.q_stride +
           int64_t{it.kvh} * G * D;
  };
  // The item's G q rows into the q buffer (one thread; q_bulk).
  Tq* q_buf = reinterpret_cast<Tq*>(smem + Smem::kQ);
  auto issue_q = [&](const DecodeItem& it) {
    const uint32_t bytes = static_cast<uint32_t>(G * D * sizeof(Tq));
    MbarExpectTx(qbar, bytes);
    BulkCopyG2S(SmemAddr(q_buf), q_rows(it), bytes, qbar);
  };

  // Key `key`'s row offset (int64 elements: block ids times the block stride pass 2^31).
  auto key_row = [&](const DecodeItem& it, int key) {
    return ((int64_t{it.table[key / bs]} * bs + key % bs) * p.n_kv_heads + it.kvh) * D;
  };
  // The warp's i-th tile of item it into stage i % kStages; lane r < 16 finds key r's row. Before
  // the wait (early): the item's newest key is not copied (fill_newest copies it after).
  // K/V rows are read once a step: they leave L2 first, so what the step reads again stays
  // (S_TG of the 8B Q4_K_M at 64 / 128 sequences +1.4% / +0.9%, bench/results/*-s20*).
  const uint64_t evict_first = CreatePolicyEvictFirst();
  auto issue = [&](const DecodeItem& it, int i, bool early = false) {
    const int key0 = it.k0 + (warp + i * kWarps) * kTileKeys;
    int64_t row = 0;
    if (lane < kTileKeys && key0 + lane < it.k1) row = key_row(it, key0 + lane);
    T* ks = stages + (i % kStages) * kStageStride;
    T* vs = ks + kTileKeys * kLd;
#pragma unroll
    for (int c = lane; c < kTileKeys * kChunks; c += 32) {
      const int r = c / kChunks, part = c % kChunks;
      const int64_t off = __shfl_sync(0xffffffffu, row, r) + part * 8;
      const bool ok = key0 + r < it.k1;
      if (early && key0 + r == it.newest) continue;
      CpAsync16(SmemAddr(ks + r * kLd + part * 8), ok ? k_cache + off : k_cache, ok, evict_first);
      CpAsync16(SmemAddr(vs + r * kLd + part * 8), ok ? v_cache + off : v_cache, ok, evict_first);
    }
  };
  // Tiles 0..kStages-2 of item it, one group each (empty past its tiles): the key loop below
  // finds exactly kStages - 1 groups committed before its tile 0.
  auto prefetch = [&](const DecodeItem& it, bool early = false) {
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
      if (i < it.my_tiles) issue(it, i, early);
      CpAsyncCommit();
    }
  };
  // After the wait: the newest key's K and V rows into the stage where prefetch(it, true) left
  // them out, by the warp whose tile holds it (plain loads past L1, shared stores: the key loop's
  // warp barrier orders them before its reads).
  auto fill_newest = [&](const DecodeItem& it) {
    if (!it.valid || it.newest < it.k0 || it.newest >= it.k1) return;
    const int tile = (it.newest - it.k0) / kTileKeys, i = tile / kWarps;
    if (tile % kWarps != warp || i >= kStages - 1) return;
    const int r = it.newest - (it.k0 + tile * kTileKeys);
    const int64_t row = key_row(it, it.newest);
    T* ks = stages + (i % kStages) * kStageStride;
    T* vs = ks + kTileKeys * kLd;
    for (int c = lane; c < 2 * kChunks; c += 32) {
      const int part = c % kChunks;
      const bool v = c >= kChunks;
      const uint4 x = __ldcg(reinterpret_cast<const uint4*>((v ? v_cache : k_cache) + row) + part);
      *reinterpret_cast<uint4*>((v ? vs : ks) + r * kLd + part * 8) = x;
    }
  };

  DecodeItem cur = item_at(blockIdx.x);
  prefetch(cur, /*early=*/true);
  PdlWait();
  PdlLaunchDependents();
  if constexpr (kSplit) {
    if (blockIdx.x == 0 && !a.fuse) {  // for attention_merge_kernel
      for (int i = threadIdx.x; i <= n; i += kThreads) a.plan[i] = plan[i];
    }
  }
  fill_newest(cur);
  if (q_bulk && threadIdx.x == 0 && cur.valid) issue_q(cur);
  uint32_t q_phase = 0;
  for (int64_t item = blockIdx.x; item < n_items; item += gridDim.x) {
    // Q fragments (A operand, rows = the group's heads; rows >= G are zero).
    uint32_t qf[D / 16][4];
    {
      const Tq* q = q_rows(cur);
      if (q_bulk) {
        MbarWait(qbar, q_phase);
        q_phase ^= 1;
        q = q_buf;
      }
      const float qs = p.scale * kLog2e;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r = g + 8 * half;
          float x0 = 0.0f, x1 = 0.0f, y0 = 0.0f, y1 = 0.0f;
          if (r < G) {
            const Tq* qr = q + r * D + 16 * kk + 2 * t4;
            x0 = ToF32(qr[0]) * qs;
            x1 = ToF32(qr[1]) * qs;
            y0 = ToF32(qr[8]) * qs;
            y1 = ToF32(qr[9]) * qs;
          }
          qf[kk][half] = Pack2<T>(x0, x1);
          qf[kk][2 + half] = Pack2<T>(y0, y1);
        }
      }
    }
    if (q_bulk) {
      __syncthreads();  // every warp has its fragments: the buffer takes the next item's rows
      if (threadIdx.x == 0) {
        const DecodeItem next = item_at(item + gridDim.x);
        if (next.valid) {
          FenceProxyAsync();
          issue_q(next);
        }
      }
    }

    // Running state of rows g (index 0) and g + 8 (index 1): max in log2 units (equal in the 4
    // lanes of a row), this lane's part of the sum, and O in accumulator layout.
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    float o[D / 8][4];
#pragma unroll
    for (int nd = 0; nd < D / 8; ++nd) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
    const int mi = lane >> 3, ri = lane & 7;  // ldmatrix: this lane's matrix and row

    for (int i = 0; i < cur.my_tiles; ++i) {
      CpAsyncWait<kStages - 2>();
      __syncwarp();  // every lane's copies of tile i landed; stage (i - 1) % kStages is free
      if (i + kStages - 1 < cur.my_tiles) issue(cur, i + kStages - 1);
      CpAsyncCommit();
      const T* ks = stages + (i % kStages) * kStageStride;
      const T* vs = ks + kTileKeys * kLd;
      const int key0 = cur.k0 + (warp + i * kWarps) * kTileKeys;

      // S[16 heads][16 keys] = Q K^T as two 8-key blocks.
      float sc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t b[4];  // keys 8 (mi / 2) + ri, dims 16 kk + 8 (mi % 2)
        LdMatrixX4(SmemAddr(ks + (8 * (mi >> 1) + ri) * kLd + 16 * kk + 8 * (mi & 1)), b);
        Mma<T>(sc[0], qf[kk], b[0], b[1]);
        Mma<T>(sc[1], qf[kk], b[2], b[3]);
      }

      // Online softmax (log2 units); keys past k1 are -inf (their K and V rows are zeros).
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool ok = key0 + 8 * nb + 2 * t4 + e < cur.k1;
          sc[nb][e] = ok ? sc[nb][e] : -INFINITY;
          sc[nb][2 + e] = ok ? sc[nb][2 + e] : -INFINITY;
          mx[0] = fmaxf(mx[0], sc[nb][e]);
          mx[1] = fmaxf(mx[1], sc[nb][2 + e]);
        }
      }
      float corr[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float m_new = fmaxf(m[h], mx[h]);
        corr[h] = m_new == -INFINITY ? 1.0f : exp2f(m[h] - m_new);
        m[h] = m_new;
      }
      float rs[2] = {0.0f, 0.0f};
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int h = e >> 1;
          sc[nb][e] = m[h] == -INFINITY ? 0.0f : exp2f(sc[nb][e] - m[h]);
          rs[h] += sc[nb][e];
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

      // O[16 heads][D] += P V: the S accumulators are P's A fragment (keys 0-7 | 8-15).
      const uint32_t pa[4] = {Pack2<T>(sc[0][0], sc[0][1]), Pack2<T>(sc[0][2], sc[0][3]),
                              Pack2<T>(sc[1][0], sc[1][1]), Pack2<T>(sc[1][2], sc[1][3])};
#pragma unroll
      for (int nd = 0; nd < D / 8; nd += 2) {
        uint32_t b[4];  // keys 8 (mi % 2) + ri, dims 8 nd + 8 (mi / 2), transposed
        LdMatrixX4Trans(SmemAddr(vs + (8 * (mi & 1) + ri) * kLd + 8 * nd + 8 * (mi >> 1)), b);
        Mma<T>(o[nd], pa, b[0], b[1]);
        Mma<T>(o[nd + 1], pa, b[2], b[3]);
      }
    }
    // Every tile of this item was waited for above, and the kStages - 1 groups committed after
    // its last tile's are empty. No wait here: the next item's tiles stay in flight.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }

    // The next item's tiles 0..kStages-2 into stages 0..kStages-2 (this warp's own; the merge
    // uses stage kStages - 1). The warp's last tile, my_tiles - 1, may sit in one of them: the
    // warp barrier orders every lane's ldmatrix reads of it before any lane's copies over it.
    const DecodeItem next = item_at(item + gridDim.x);
    __syncwarp();
    prefetch(next);

    // Merge the 4 warps' states in stage kStages - 1 (every warp must be done reading it; its
    // copies there all completed in the loop).
    __syncthreads();
    float* o_s = reinterpret_cast<float*>(smem + Smem::kMerge);  // [kWarps][kMaxRows][D]
    float* m_s = o_s + kWarps * kMaxRows * D;                    // [kWarps][kMaxRows]
    float* l_s = m_s + kWarps * kMaxRows;                        // [kWarps][kMaxRows]
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = g + 8 * h;
      if (row < G) {
        float* orow = o_s + (warp * kMaxRows + row) * D + 2 * t4;
#pragma unroll
        for (int nd = 0; nd < D / 8; ++nd) {
          *reinterpret_cast<float2*>(orow + 8 * nd) = make_float2(o[nd][2 * h], o[nd][2 * h + 1]);
        }
        if (t4 == 0) {
          m_s[warp * kMaxRows + row] = m[h];
          l_s[warp * kMaxRows + row] = l[h];
        }
      }
    }
    __syncthreads();
    const int64_t tq = p.cu_seqlens_q[cur.s];
    const int64_t first_part = kSplit ? int64_t{plan[cur.s]} * p.n_heads : 0;
    // The row's form (!kSplit: one query row) is made from a shared copy of the item's F16
    // outputs (the q buffer, unused without kSplit), not read back from global memory.
    const bool form_here = !kSplit && std::is_same_v<T, __half> && D % 32 == 0 && a.out_q;
    T* out_s = reinterpret_cast<T*>(smem + Smem::kQ);  // [G][D] (G * D * 2 <= kQBytes)
    // Each thread takes runs of 4 outputs of one row: the row's weights (exp2f of the 4 warps'
    // maxima) once a run, the partial outputs as float4; each output's sum is formed as before
    // (warps in order), bit for bit.
    static_assert(D % 4 == 0 && kMaxRows * D * 2 <= kQBytes);
    for (int idx = threadIdx.x; idx < G * D / 4; idx += kThreads) {
      const int row = 4 * idx / D, d = 4 * idx % D;
      float mmax = -INFINITY;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        if (l_s[w * kMaxRows + row] > 0.0f) mmax = fmaxf(mmax, m_s[w * kMaxRows + row]);
      }
      float sum = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float lw = l_s[w * kMaxRows + row];
        if (lw > 0.0f) {
          const float c = exp2f(m_s[w * kMaxRows + row] - mmax);
          sum += lw * c;
          const float4 ow = *reinterpret_cast<const float4*>(o_s + (w * kMaxRows + row) * D + d);
          acc[0] += ow.x * c;
          acc[1] += ow.y * c;
          acc[2] += ow.z * c;
          acc[3] += ow.w * c;
        }
      }
      const int64_t h = int64_t{cur.kvh} * G + row;
      if (!kSplit || cur.n_split == 1) {
        T* out = static_cast<T*>(p.out) + (tq * p.n_heads + h) * D + d;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const T v = FromF32<T>(sum > 0.0f ? acc[e] / sum : 0.0f);
          out[e] = v;
          if (form_here) out_s[row * D + d + e] = v;
        }
      } else {
        const int64_t part = first_part + int64_t{cur.j} * p.n_heads + h;
        *reinterpret_cast<float4*>(a.part_o + part * D + d) =
            make_float4(acc[0], acc[1], acc[2], acc[3]);
        if (d == 0) {
          a.part_ml[2 * part] = mmax;
          a.part_ml[2 * part + 1] = sum;
        }
      }
    }
    bool formed = cur.n_split == 1;  // the item's G heads of the output are written
    if constexpr (kSplit) {
      if (a.fuse && cur.n_split > 1) {
        // The block's partials (ordered before thread 0's count by the barrier) are released by
        // the count; the block whose count completes the (sequence, KV head) acquires every
        // split's, reads them past L1 and merges them.
        __syncthreads();
        if (threadIdx.x == 0) {
          int* count = a.counters + cur.s * kMaxCountedKvHeads + cur.kvh;
          const bool done = AtomicAddAcqRel(count, 1) == cur.n_split - 1;
          if (done) *count = 0;  // for the next call (every split of this one has counted)
          last_s = done;
        }
        __syncthreads();
        if (last_s) {
          MergeSplits<T, D>(p, a, cur, first_part, tq,
                            reinterpret_cast<float*>(smem + Smem::kMerge));
          formed = true;
        }
      }
    }
    __syncthreads();  // the next item's tile kStages - 1 (its loop's first copies) goes here
    if constexpr (std::is_same_v<T, __half> && D % 32 == 0) {
      // The item's G heads, written above (visible to the block after the barrier), are whole
      // 32-element blocks of the row's form.
      if (a.out_q != nullptr && formed) {
        const int h0 = cur.kvh * G;
        const __half* src = form_here
                                ? reinterpret_cast<const __half*>(out_s)
                                : static_cast<const __half*>(p.out) + (tq * p.n_heads + h0) * D;
        QuantizeUnits(src, G * D / 8, h0 * D, static_cast<int>(p.n_heads * D), a.out_q);
      }
    }
    cur = next;
  }
}

}  // namespace forge::cuda::decode
