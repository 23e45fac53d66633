// Attention of a ragged batch over the paged KV cache (prefill chunks and decode tokens mixed).
// Sequence s owns queries [cu_seqlens_q[s], cu_seqlens_q[s+1]) and sees seq_lens_k[s] keys in its
// blocks (block_tables row s); its new tokens are the last q_len of those keys. Query head h reads
// KV head h / (n_heads / n_kv_heads) (GQA without copying K/V). Causal: query i of a chunk of
// q_len sees keys [0, seq_len_k - q_len + i].
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"

namespace forge {

struct AttentionParams {
  const void* q = nullptr;                // [n_tokens, n_heads, head_dim], row stride q_stride
  int64_t q_stride = 0;                   // 0: n_heads * head_dim
  const void* k_cache = nullptr;          // [num_blocks, block_size, n_kv_heads, head_dim]
  const void* v_cache = nullptr;          // same layout
  void* out = nullptr;                    // [n_tokens, n_heads, head_dim]
  const int32_t* cu_seqlens_q = nullptr;  // [n_seqs + 1]
  const int32_t* seq_lens_k = nullptr;    // [n_seqs]
  const int32_t* block_tables = nullptr;  // [n_seqs, block_table_stride]
  int64_t block_table_stride = 0;
  int64_t n_seqs = 0;
  int64_t n_tokens = 0;  // cu_seqlens_q[n_seqs] (known on the host; device launchers need it)
  // How many leading sequences are known (on the host) to have one query each: a backend may run
  // them as a decode batch apart from the prefill chunks after them. 0: none known.
  int64_t n_single = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;
  int64_t num_blocks = 0;  // bounds check for block ids
  float scale = 1.0f;      // usually 1 / sqrt(head_dim)
  bool causal = true;
  // Soft-capping (Gemma 2): each scaled score s becomes softcap * tanh(s / softcap); 0: none.
  float softcap = 0.0f;
  // Sliding window (causal only): a query at key index i sees keys i - window + 1 .. i, the last
  // `window` keys (its own included); 0: every earlier key. Key indices are positions.
  int64_t window = 0;
  DType dtype = DType::kF32;   // of the cache and out (the CPU: F32 only)
  DType q_type = DType::kF32;  // of q
  // Also out's one row in the form a matmul takes as MatmulParams::xq (n_tokens 1; only where
  // Backend::QuantizedActivationBytes offered it), or null.
  void* out_q = nullptr;
};

// Checks shapes, ids and lengths; shared by every backend's launcher.
Status ValidateAttention(const AttentionParams& p);
// Reference: scores, softmax and the weighted sum in double.
Status attention_ref(const AttentionParams& p);
// CPU backend: float, (token, head) pairs in parallel; batch-invariant.
Status attention_cpu(const AttentionParams& p);

}  // namespace forge
