// attention_decode_cuda: split-KV decode attention. A persistent grid (the resident capacity of
// the GPU, or fewer blocks where the batch has fewer items) walks items (sequence, split, KV head);
// the batch's keys are spread over the GPU (BatchChunk: at least 128 keys a split per sequence of
// the batch, 1024 from 8 sequences on, whole KV blocks), so a few long sequences spread over
// every SM and many sequences take one item per (sequence, KV head). Splits' partial states go to a
// fixed workspace (no allocation: the launch may be captured in a CUDA graph); the block that
// completes a (sequence, KV head) merges its splits in order (up to 8 query heads per KV head), or
// the merge kernel here does. The main kernel is in attention_decode_kernel.cuh.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cuda/attention/attention_decode_cuda.h"
#include "backend/cuda/attention/attention_decode_kernel.cuh"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"

namespace forge::cuda {
namespace {

using decode::kMaxSplits;
using decode::kThreads;
using decode::kWarps;
using decode::SplitArgs;

// One block per (sequence, head) of a sequence with more than one split: out = sum_j O_j c_j /
// sum_j l_j c_j with c_j = 2^(m_j - max m). Warp w sums splits w, w + 4, ... (several loads in
// flight per thread), then the warps' sums are added in order: a fixed order for a given split
// count, so the result is deterministic and independent of the batch.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) attention_merge_kernel(AttentionParams p, SplitArgs a) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  constexpr int kPer = (D + 31) / 32;
  __shared__ float c_s[kMaxSplits];   // c_j
  __shared__ float lc_s[kMaxSplits];  // l_j c_j
  __shared__ float red[kWarps];
  __shared__ float acc_s[kWarps][D];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t s = blockIdx.x / p.n_heads, h = blockIdx.x % p.n_heads;
  const int first = a.plan[s], n_split = a.plan[s + 1] - first;
  if (n_split <= 1) return;  // written by the main kernel
  auto part_of = [&](int j) { return (int64_t{first} + j) * p.n_heads + h; };
  float mmax = -INFINITY;
  for (int j = threadIdx.x; j < n_split; j += kThreads) {
    if (a.part_ml[2 * part_of(j) + 1] > 0.0f) mmax = fmaxf(mmax, a.part_ml[2 * part_of(j)]);
  }
  for (int o = 16; o > 0; o >>= 1) mmax = fmaxf(mmax, __shfl_xor_sync(0xffffffffu, mmax, o));
  if (lane == 0) red[warp] = mmax;
  __syncthreads();
  mmax = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
  for (int j = threadIdx.x; j < n_split; j += kThreads) {
    const float lj = a.part_ml[2 * part_of(j) + 1];
    const float c = lj > 0.0f ? exp2f(a.part_ml[2 * part_of(j)] - mmax) : 0.0f;
    c_s[j] = c;
    lc_s[j] = lj > 0.0f ? lj * c : 0.0f;
  }
  __syncthreads();
  float acc[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) acc[e] = 0.0f;
#pragma unroll 4
  for (int j = warp; j < n_split; j += kWarps) {
    const float c = c_s[j];
    const float* oj = a.part_o + part_of(j) * D;
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const int d = lane + 32 * e;
      if (d < D) acc[e] = fmaf(oj[d], c, acc[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int d = lane + 32 * e;
    if (d < D) acc_s[warp][d] = acc[e];
  }
  float sum = 0.0f;  // every warp the same: lanes take splits lane, lane + 32, ..., then a tree
  for (int j = lane; j < n_split; j += 32) sum += lc_s[j];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  __syncthreads();
  T* out = static_cast<T*>(p.out) + (int64_t{p.cu_seqlens_q[s]} * p.n_heads + h) * D;
  for (int d = threadIdx.x; d < D; d += kThreads) {
    const float o = (acc_s[0][d] + acc_s[1][d]) + (acc_s[2][d] + acc_s[3][d]);
    out[d] = FromF32<T>(sum > 0.0f ? o / sum : 0.0f);
  }
  if constexpr (std::is_same_v<T, __half> && D % 32 == 0) {
    if (a.out_q != nullptr) {  // the head's blocks of the row's form (one row: s = 0)
      __syncthreads();         // out, written above, is visible to the block
      QuantizeUnits(out, D / 8, static_cast<int>(h * D), static_cast<int>(p.n_heads * D), a.out_q);
    }
  }
}

// The workspace: [plan: (kMaxPlanSeqs + 1) int32, padded to 256 bytes][counters: kMaxPlanSeqs x
// kMaxCountedKvHeads int32][part_ml: cap x 2 F32][part_o: cap x D F32]; cap (a multiple of 4) is
// what the bytes hold.
constexpr size_t kPlanBytes = ((decode::kMaxPlanSeqs + 1) * 4 + 255) / 256 * 256;
constexpr size_t kCounterBytes = size_t{decode::kMaxPlanSeqs} * decode::kMaxCountedKvHeads * 4;

// Blocks of the kernel resident per SM (the same on every device of one architecture; once).
template <typename Tq, typename T, int D, bool kSplit>
int BlocksPerSm() {
  static const int per_sm = [] {
    int v = 0;
    // The shared memory it launches with is past the default limit: allowed first.
    if (cudaFuncSetAttribute(decode::attention_split_kernel<Tq, T, D, kSplit>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(decode::DecodeSmem<D>::kBytes)) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &v, decode::attention_split_kernel<Tq, T, D, kSplit>, kThreads,
            decode::DecodeSmem<D>::kBytes) != cudaSuccess) {
      cudaGetLastError();
      v = 1;
    }
    return std::max(v, 1);
  }();
  return per_sm;
}

// The grid: the resident capacity, or fewer where the batch cannot have that many items (its
// table width bounds every sequence's splits: MinChunk(n) keys each at the least; BatchChunk
// keeps the items within the capacity).
int64_t DecodeGrid(const AttentionParams& p, bool split, int64_t capacity) {
  const int64_t width_keys = p.block_table_stride * p.block_size;
  const int64_t min_chunk = decode::MinChunk(p.n_seqs);
  const int64_t per_seq =
      split ? std::min<int64_t>(decode::kMaxSplits, (width_keys + min_chunk - 1) / min_chunk) : 1;
  return std::max<int64_t>(
      1, std::min(capacity, p.n_seqs * p.n_kv_heads * std::max<int64_t>(1, per_seq)));
}

template <typename Tq, typename T, int D, bool kSplit>
Status LaunchKernel(const AttentionParams& p, const decode::SplitArgs& a, int sms,
                    cudaStream_t stream) {
  constexpr size_t kSmem = decode::DecodeSmem<D>::kBytes;
  auto* kernel = decode::attention_split_kernel<Tq, T, D, kSplit>;
  static std::atomic<uint64_t> smem_set{0};
  CUDA_RETURN_IF_ERROR(SetMaxDynamicSmemOnce(kernel, static_cast<int>(kSmem), &smem_set));
  const int64_t capacity = int64_t{BlocksPerSm<Tq, T, D, kSplit>()} * sms;
  const int64_t grid = DecodeGrid(p, kSplit, capacity);
  decode::SplitArgs args = a;
  args.capacity = static_cast<int>(capacity);
  CUDA_RETURN_IF_ERROR(LaunchDependent(kernel, dim3(static_cast<unsigned>(grid)), dim3(kThreads),
                                       kSmem, stream, p, args));
  CUDA_RETURN_IF_LAUNCH_ERROR("attention_split_kernel");
  return Status::Ok();
}

template <typename Tq, typename T, int D>
Status LaunchDecode(const AttentionParams& p, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream) {
  int device = 0, sms = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));

  decode::SplitArgs a;
  a.q_stride = p.q_stride ? p.q_stride : p.n_heads * D;
  a.group = static_cast<int>(p.n_heads / p.n_kv_heads);
  if constexpr (std::is_same_v<T, __half> && D % 32 == 0) a.out_q = static_cast<int8_t*>(p.out_q);
  int64_t cap = 0;
  if (workspace != nullptr && workspace_bytes > kPlanBytes + kCounterBytes) {
    cap = static_cast<int64_t>((workspace_bytes - kPlanBytes - kCounterBytes) / ((D + 2) * 4)) / 4 *
          4;
    char* w = static_cast<char*>(workspace);
    a.plan = reinterpret_cast<int32_t*>(w);
    a.counters = reinterpret_cast<int32_t*>(w + kPlanBytes);
    a.part_ml = reinterpret_cast<float*>(w + kPlanBytes + kCounterBytes);
    a.part_o = a.part_ml + 2 * cap;
    a.cap_parts = cap;
  }
  // Split mode needs the plan in shared memory and room for one partial per (sequence, head)
  // (the plan's chunk doubles until the batch fits; it cannot shrink below that).
  // A table of at most kMinChunkTokens keys takes the other form (one item per (sequence, KV
  // head), no plan): at one sequence after 512 prompt tokens (a 640-key table) it measured faster
  // than splits of 128 keys (S_TG 425 against 421 tokens/s, H200).
  a.split = p.n_seqs <= decode::kMaxPlanSeqs && p.n_seqs * p.n_heads <= cap &&
            p.block_table_stride * p.block_size > decode::kMinChunkTokens;
  a.fuse = a.split && a.group <= decode::kFuseMaxRows && p.n_kv_heads <= decode::kMaxCountedKvHeads;
  // The q rows of an item as one bulk copy: 16-byte aligned start and stride, within the buffer.
  const size_t q_bytes = static_cast<size_t>(a.group) * D * sizeof(Tq);
  a.q_bulk = reinterpret_cast<uintptr_t>(p.q) % 16 == 0 && (a.q_stride * sizeof(Tq)) % 16 == 0 &&
             q_bytes % 16 == 0 && q_bytes <= static_cast<size_t>(decode::kQBytes);
  if (!a.split) return LaunchKernel<Tq, T, D, false>(p, a, sms, stream);
  RETURN_IF_ERROR((LaunchKernel<Tq, T, D, true>(p, a, sms, stream)));
  if (!a.fuse) {
    // One block per (sequence, head); those of one-split sequences return at once.
    const unsigned blocks = static_cast<unsigned>(p.n_seqs * p.n_heads);
    CUDA_RETURN_IF_ERROR(LaunchDependent(attention_merge_kernel<T, D>, dim3(blocks), dim3(kThreads),
                                         0, stream, p, a));
    CUDA_RETURN_IF_LAUNCH_ERROR("attention_merge_kernel");
  }
  return Status::Ok();
}

}  // namespace

bool AttentionDecodeFormsRow(const AttentionParams& p) {
  return AttentionDecodeApplies(p) && p.dtype == DType::kF16 && p.head_dim % 32 == 0;
}

bool AttentionDecodeApplies(const AttentionParams& p) {
  const int64_t group = p.n_kv_heads > 0 ? p.n_heads / p.n_kv_heads : 0;
  return p.n_tokens == p.n_seqs && p.n_seqs > 0 && p.q_type == DType::kF32 && p.softcap == 0.0f &&
         p.window == 0 && (p.dtype == DType::kF16 || p.dtype == DType::kBF16) &&
         (p.head_dim == 64 || p.head_dim == 80 || p.head_dim == 96 || p.head_dim == 128) &&
         p.n_heads % p.n_kv_heads == 0 && group >= 1 && group <= decode::kMaxRows &&
         p.block_size > 0;
}

int64_t AttentionDecodeSplits(const AttentionParams& p, const std::vector<int64_t>& lens,
                              int64_t seq) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    cudaGetLastError();
    return 1;
  }
  int64_t keys = 0;
  for (int64_t len : lens) keys += len;
  // The capacity of a BF16 cache and F32 q (the kernel's residency is the same for every pair).
  int per_sm = 0;
  switch (p.head_dim) {
    case 64:
      per_sm = BlocksPerSm<float, __nv_bfloat16, 64, true>();
      break;
    case 80:
      per_sm = BlocksPerSm<float, __nv_bfloat16, 80, true>();
      break;
    case 96:
      per_sm = BlocksPerSm<float, __nv_bfloat16, 96, true>();
      break;
    default:
      per_sm = BlocksPerSm<float, __nv_bfloat16, 128, true>();
  }
  return decode::SplitCount(lens[seq], p.block_size,
                            decode::BatchChunk(keys, static_cast<int64_t>(lens.size()),
                                               p.n_kv_heads, int64_t{per_sm} * sms));
}

Status attention_decode_cuda(const AttentionParams& p, void* workspace, size_t workspace_bytes,
                             cudaStream_t stream) {
  if (!AttentionDecodeApplies(p)) {
    return InvalidArgumentError("attention_decode_cuda: not a decode batch it takes (dtype " +
                                std::string(DTypeName(p.dtype)) +
                                ", head_dim=" + std::to_string(p.head_dim) +
                                ", n_heads=" + std::to_string(p.n_heads) +
                                ", n_kv_heads=" + std::to_string(p.n_kv_heads) + ")");
  }
  return DispatchDType(p.dtype, [&](auto zero) -> Status {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float>) {
      return InvalidArgumentError("attention_decode_cuda: F32 cache");  // excluded above
    } else {  // q is F32 (AttentionDecodeApplies)
      switch (p.head_dim) {
        case 64:
          return LaunchDecode<float, T, 64>(p, workspace, workspace_bytes, stream);
        case 80:
          return LaunchDecode<float, T, 80>(p, workspace, workspace_bytes, stream);
        case 96:
          return LaunchDecode<float, T, 96>(p, workspace, workspace_bytes, stream);
        default:
          return LaunchDecode<float, T, 128>(p, workspace, workspace_bytes, stream);
      }
    }
  });
}

}  // namespace forge::cuda
