// attention_ref and attention_cpu: the same loop structure, double vs float arithmetic.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/attention/attention.h"
#include "base/thread_pool.h"

namespace forge {
namespace {

// K or V row of key j of sequence s.
template <typename T>
inline const float* KvRow(const AttentionParams& p, const void* cache, int64_t s, int64_t j,
                          int64_t kv_head) {
  int64_t block = p.block_tables[s * p.block_table_stride + j / p.block_size];
  int64_t slot = block * p.block_size + j % p.block_size;
  return static_cast<const float*>(cache) + (slot * p.n_kv_heads + kv_head) * p.head_dim;
}

// One (query token, head) pair; Acc is double (reference) or float (CPU backend).
template <typename Acc>
void AttendOne(const AttentionParams& p, int64_t s, int64_t t, int64_t h, std::vector<Acc>& scores,
               std::vector<Acc>& acc) {
  const int64_t q_len = p.cu_seqlens_q[s + 1] - p.cu_seqlens_q[s];
  const int64_t i = t - p.cu_seqlens_q[s];
  const int64_t n_keys = p.causal ? p.seq_lens_k[s] - q_len + i + 1 : p.seq_lens_k[s];
  // Keys before `first` lie outside the sliding window.
  const int64_t first = p.causal && p.window > 0 ? std::max<int64_t>(0, n_keys - p.window) : 0;
  const int64_t kv_head = h / (p.n_heads / p.n_kv_heads);
  const int64_t qs = p.q_stride ? p.q_stride : p.n_heads * p.head_dim;
  const float* q = static_cast<const float*>(p.q) + t * qs + h * p.head_dim;
  scores.resize(std::max<int64_t>(n_keys, 1));
  Acc max_score = -INFINITY;
  for (int64_t j = first; j < n_keys; ++j) {
    const float* k = KvRow<Acc>(p, p.k_cache, s, j, kv_head);
    Acc dot = 0;
    for (int64_t d = 0; d < p.head_dim; ++d) dot += static_cast<Acc>(q[d]) * k[d];
    scores[j] = dot * p.scale;
    if (p.softcap != 0) scores[j] = p.softcap * std::tanh(scores[j] / p.softcap);
    max_score = std::max(max_score, scores[j]);
  }
  Acc sum = 0;
  for (int64_t j = first; j < n_keys; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  acc.assign(p.head_dim, 0);
  for (int64_t j = first; j < n_keys; ++j) {
    const float* v = KvRow<Acc>(p, p.v_cache, s, j, kv_head);
    for (int64_t d = 0; d < p.head_dim; ++d) acc[d] += scores[j] * v[d];
  }
  float* o = static_cast<float*>(p.out) + (t * p.n_heads + h) * p.head_dim;
  for (int64_t d = 0; d < p.head_dim; ++d) {
    o[d] = n_keys > 0 ? static_cast<float>(acc[d] / sum) : 0.0f;
  }
}

template <typename Acc>
void AttendRange(const AttentionParams& p, int64_t begin, int64_t end) {
  std::vector<Acc> scores, acc;
  // Work items are (token, head) pairs in token order; each token's sequence is found by a scan.
  int64_t s = 0;
  for (int64_t w = begin; w < end; ++w) {
    int64_t t = w / p.n_heads, h = w % p.n_heads;
    while (t >= p.cu_seqlens_q[s + 1]) ++s;  // skips empty sequences too
    AttendOne<Acc>(p, s, t, h, scores, acc);
  }
}

}  // namespace

Status ValidateAttention(const AttentionParams& p) {
  if (p.n_heads <= 0 || p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0) {
    return InvalidArgumentError("attention: n_heads=" + std::to_string(p.n_heads) +
                                " is not a multiple of n_kv_heads=" + std::to_string(p.n_kv_heads));
  }
  if (p.head_dim <= 0 || p.block_size <= 0) return InvalidArgumentError("attention: bad dims");
  if (p.window < 0 || (p.window > 0 && !p.causal)) {
    return InvalidArgumentError("attention: window " + std::to_string(p.window) +
                                " (a sliding window is causal and not negative)");
  }
  if (!(p.softcap >= 0) || !std::isfinite(p.softcap)) {
    return InvalidArgumentError("attention: softcap must be finite and not negative");
  }
  if (p.cu_seqlens_q[0] != 0) return InvalidArgumentError("attention: cu_seqlens_q[0] != 0");
  for (int64_t s = 0; s < p.n_seqs; ++s) {
    int64_t q_len = p.cu_seqlens_q[s + 1] - p.cu_seqlens_q[s];
    int64_t k_len = p.seq_lens_k[s];
    if (q_len < 0 || k_len < q_len) {
      return InvalidArgumentError("attention: sequence " + std::to_string(s) + " has " +
                                  std::to_string(q_len) + " queries but " + std::to_string(k_len) +
                                  " keys");
    }
    int64_t blocks = (k_len + p.block_size - 1) / p.block_size;
    if (blocks > p.block_table_stride) {
      return InvalidArgumentError("attention: sequence " + std::to_string(s) + " needs " +
                                  std::to_string(blocks) + " blocks, table holds " +
                                  std::to_string(p.block_table_stride));
    }
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t id = p.block_tables[s * p.block_table_stride + b];
      if (id < 0 || id >= p.num_blocks) {
        return OutOfRangeError("attention: sequence " + std::to_string(s) + " block " +
                               std::to_string(b) + " is " + std::to_string(id) + ", pool has " +
                               std::to_string(p.num_blocks));
      }
    }
  }
  return Status::Ok();
}

Status attention_ref(const AttentionParams& p) {
  RETURN_IF_ERROR(ValidateAttention(p));
  if (p.dtype != DType::kF32) return UnsupportedDType("attention", p.dtype);
  if (p.q_type != DType::kF32) return UnsupportedDType("attention", p.q_type);
  AttendRange<double>(p, 0, int64_t{p.cu_seqlens_q[p.n_seqs]} * p.n_heads);
  return Status::Ok();
}

Status attention_cpu(const AttentionParams& p) {
  RETURN_IF_ERROR(ValidateAttention(p));
  if (p.dtype != DType::kF32) return UnsupportedDType("attention", p.dtype);
  if (p.q_type != DType::kF32) return UnsupportedDType("attention", p.q_type);
  ThreadPool::Global().ParallelFor(int64_t{p.cu_seqlens_q[p.n_seqs]} * p.n_heads,
                                   [&](int64_t b, int64_t e) { AttendRange<float>(p, b, e); });
  return Status::Ok();
}

}  // namespace forge
