// attention_cuda: paged attention's entry (the output row's form, batches that mix decode rows
// with prefill chunks, then the variant table of attention_dispatch.h), and the generic kernel
// for any head dim up to 256 (DESIGN.md's named generic dispatch entry): one warp per (query
// token, head), keys walked in order with an online softmax; each lane holds head_dim / 32
// elements; soft-capping and sliding windows. Correct for every shape, not fast. Q, K, V and the
// output may be F32, F16 or BF16; scores and sums are F32.
#include <cfloat>
#include <string_view>

#include "backend/cuda/attention/attention_decode_cuda.h"
#include "backend/cuda/attention/attention_dispatch.h"
#include "backend/cuda/attention/attention_prefill_cuda.h"
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/act_quant/act_quant_cuda.h"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

template <typename Tq, typename T, int kPerLane>
__global__ void attention_generic_kernel(AttentionParams p, int64_t q_stride, int64_t pairs) {
  const int64_t warp = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= pairs) return;
  const int64_t t = warp / p.n_heads, h = warp % p.n_heads;
  int64_t lo = 0, hi = p.n_seqs - 1;  // the last sequence s with cu_seqlens_q[s] <= t
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (p.cu_seqlens_q[mid] <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  int64_t s = lo;
  while (s + 1 < p.n_seqs && p.cu_seqlens_q[s + 1] <= t) ++s;  // skip empty sequences
  const int64_t q_len = p.cu_seqlens_q[s + 1] - p.cu_seqlens_q[s];
  const int64_t i = t - p.cu_seqlens_q[s];
  const int64_t n_keys = p.causal ? p.seq_lens_k[s] - q_len + i + 1 : p.seq_lens_k[s];
  // Keys before `first` lie outside the sliding window (AttentionParams::window).
  const int64_t first = p.causal && p.window > 0 ? max(int64_t{0}, n_keys - p.window) : 0;
  const int64_t kv_head = h / (p.n_heads / p.n_kv_heads);
  const Tq* q = static_cast<const Tq*>(p.q) + t * q_stride + h * p.head_dim;
  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  float qv[kPerLane], acc[kPerLane];
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t d = lane + 32 * e;
    qv[e] = d < p.head_dim ? ToF32(q[d]) : 0.0f;
    acc[e] = 0.0f;
  }
  float m = -FLT_MAX, l = 0.0f;
  const int32_t* table = p.block_tables + s * p.block_table_stride;
  for (int64_t j = first; j < n_keys; ++j) {
    const int64_t slot =
        static_cast<int64_t>(table[j / p.block_size]) * p.block_size + j % p.block_size;
    const T* k = k_cache + (slot * p.n_kv_heads + kv_head) * p.head_dim;
    const T* v = v_cache + (slot * p.n_kv_heads + kv_head) * p.head_dim;
    float dot = 0.0f;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int64_t d = lane + 32 * e;
      if (d < p.head_dim) dot += qv[e] * ToF32(k[d]);
    }
    dot = WarpSum(dot) * p.scale;
    if (p.softcap != 0.0f) dot = p.softcap * tanhf(dot / p.softcap);
    const float m_new = fmaxf(m, dot);
    const float corr = expf(m - m_new), w = expf(dot - m_new);
    l = l * corr + w;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int64_t d = lane + 32 * e;
      acc[e] = acc[e] * corr + (d < p.head_dim ? w * ToF32(v[d]) : 0.0f);
    }
    m = m_new;
  }
  T* o = static_cast<T*>(p.out) + (t * p.n_heads + h) * p.head_dim;
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int64_t d = lane + 32 * e;
    if (d < p.head_dim) o[d] = FromF32<T>(n_keys > 0 ? acc[e] / l : 0.0f);
  }
}

}  // namespace

Status attention_cuda(const AttentionParams& p, cudaStream_t stream, void* workspace,
                      size_t workspace_bytes) {
  if (p.head_dim <= 0 || p.head_dim > 256) {
    return UnimplementedError("attention_cuda: unsupported head_dim=" + std::to_string(p.head_dim));
  }
  if (p.n_heads % p.n_kv_heads != 0) {
    return InvalidArgumentError("attention_cuda: n_heads % n_kv_heads != 0");
  }
  // cu_seqlens_q lives in device memory: the token count comes from AttentionParams::n_tokens.
  const int64_t pairs = p.n_tokens * p.n_heads;
  if (pairs == 0) return Status::Ok();
  if (p.out_q != nullptr) {
    // The output row's form (act_quant.cuh): written by the decode kernels where they can, else
    // formed from the written row by a kernel of its own.
    const int64_t k = p.n_heads * p.head_dim;
    if (p.n_tokens != 1 || p.dtype != DType::kF16 || k % 256 != 0 || k > (int64_t{1} << 24) ||
        !IsAligned(p.out, 16) || !IsAligned(p.out_q, 16)) {
      return InvalidArgumentError(
          "attention_cuda: out_q takes one F16 row of a multiple of 256 (16-byte aligned); got " +
          std::to_string(p.n_tokens) + " rows of " + std::to_string(k) + " " + DTypeName(p.dtype));
    }
    if (AttentionDecodeFormsRow(p))
      return attention_decode_cuda(p, workspace, workspace_bytes, stream);
    AttentionParams plain = p;
    plain.out_q = nullptr;
    RETURN_IF_ERROR(attention_cuda(plain, stream, workspace, workspace_bytes));
    return act_quant_cuda(p.out, k, p.out_q, stream);
  }
  // A batch with n_single > 0 leading one-query sequences beside prefill chunks: those through
  // the split-KV decode kernel (each K/V row read once for its query heads), the rest through
  // the prefill kernels, which would give each decode row a 128-query tile per head.
  const AttentionResources res{stream, workspace, workspace_bytes};
  if (p.n_single > 0 && p.n_single < p.n_seqs) {
    AttentionParams d = p;
    d.n_seqs = d.n_tokens = p.n_single;
    d.n_single = 0;
    AttentionParams f = p;
    f.cu_seqlens_q += p.n_single;  // absolute token indices: the rows after the decode ones
    f.seq_lens_k += p.n_single;
    f.block_tables += p.n_single * p.block_table_stride;
    f.n_seqs -= p.n_single;
    f.n_tokens -= p.n_single;
    f.n_single = 0;
    const AttentionChoice dc = ChooseAttention(d), fc = ChooseAttention(f);
    auto named = [](const AttentionChoice& c, std::string_view prefix) {
      return c.variant != nullptr && std::string_view(c.variant->name).starts_with(prefix);
    };
    if (named(dc, "attention_decode") && named(fc, "attention_prefill")) {
      RETURN_IF_ERROR(dc.variant->run(d, res));
      return fc.variant->run(f, res);
    }
  }
  // The first variant of attention_dispatch.h that runs the batch (the generic kernel runs any).
  const AttentionChoice c = ChooseAttention(p);
  if (c.variant == nullptr) return InvalidArgumentError("attention_cuda: " + c.Explain());
  return c.variant->run(p, res);
}

Status attention_generic_cuda(const AttentionParams& p, cudaStream_t stream) {
  if (p.head_dim <= 0 || p.head_dim > 256 || p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0) {
    return InvalidArgumentError("attention_generic_cuda: head_dim " + std::to_string(p.head_dim) +
                                " (1 to 256) or heads " + std::to_string(p.n_heads) + " / " +
                                std::to_string(p.n_kv_heads));
  }
  const int64_t pairs = p.n_tokens * p.n_heads;
  if (pairs == 0) return Status::Ok();
  const int64_t q_stride = p.q_stride ? p.q_stride : p.n_heads * p.head_dim;
  const int threads = 128;
  const unsigned blocks = static_cast<unsigned>((pairs * 32 + threads - 1) / threads);
  return DispatchDType(p.q_type, [&](auto q_zero) {
    return DispatchDType(p.dtype, [&](auto zero) {
      using Tq = decltype(q_zero);
      using T = decltype(zero);
      if (p.head_dim <= 64) {
        attention_generic_kernel<Tq, T, 2><<<blocks, threads, 0, stream>>>(p, q_stride, pairs);
      } else if (p.head_dim <= 128) {
        attention_generic_kernel<Tq, T, 4><<<blocks, threads, 0, stream>>>(p, q_stride, pairs);
      } else {
        attention_generic_kernel<Tq, T, 8><<<blocks, threads, 0, stream>>>(p, q_stride, pairs);
      }
      CUDA_RETURN_IF_LAUNCH_ERROR("attention_generic_kernel");
      return Status::Ok();
    });
  });
}

}  // namespace forge::cuda
