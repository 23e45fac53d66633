// StepContext: everything an architecture's forward (architecture.h) reads for one step on one
// rank: the rank's backend, config and weights; the step's metadata; the rank's KV pools and
// workspace; and, under tensor parallelism, the collective and the rank's vocabulary slice. Raw
// pointers into memory the runner (runtime/model_runner.h) owns: a forward only offsets them and
// hands them to Backend ops, never reads through them.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/collective.h"
#include "base/dtype.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace forge {

// One step's metadata in backend memory (a ForwardBatch uploaded).
struct StepMeta {
  const int32_t* ids = nullptr;         // [n_tokens] token ids
  const int32_t* pos = nullptr;         // [n_tokens] positions
  const int32_t* slots = nullptr;       // [n_tokens] K/V slots (block * block_size + offset)
  const int32_t* cu_seqlens = nullptr;  // [n_seqs + 1] query tokens of each sequence
  const int32_t* lens = nullptr;        // [n_seqs] keys of each sequence after the step
  const int32_t* tables = nullptr;      // [n_seqs, table_stride] block tables
  const int32_t* out_idx = nullptr;     // [n_out] token rows whose logits are wanted
  int64_t n_tokens = 0, n_seqs = 0, n_out = 0, table_stride = 0;
  int64_t n_single = 0;  // leading sequences of one query (AttentionParams::n_single)
};

// One rank's KV cache: per layer K and V pools [num_blocks, block_size, n_kv_heads, head_dim] in
// the activation dtype.
struct StepKv {
  void* const* k = nullptr;  // [n_layer]
  void* const* v = nullptr;  // [n_layer]
  int64_t block_size = 0;
  int64_t num_blocks = 0;
};

// A buffer of one activation row in the form a matmul reads directly
// (Backend::QuantizedActivationBytes); null where no layer's matmul takes one.
struct ActivationForm {
  void* data = nullptr;
  int64_t bytes = 0;
};

// The mixture-of-experts block's buffers (moe.h), for T tokens of k experts each; null in a dense
// model.
struct MoeWorkspace {
  float* logits = nullptr;       // [T, n_expert] the router's
  int32_t* ids = nullptr;        // [T, k] the chosen experts
  float* weights = nullptr;      // [T, k] their weights
  int32_t* order = nullptr;      // [2, T * k] row indices: into expert order, and back
  void* x = nullptr;             // [T * k, n_embd] xn's rows in expert order, in the dtype
  float* gate = nullptr;         // [2, T * k, n_ff_exp] gate, then up
  void* act = nullptr;           // [T * k, n_ff_exp] in the dtype
  float* y = nullptr;            // [T * k, n_embd] the experts' outputs, in expert order
  float* y_slots = nullptr;      // [T * k, n_embd] the same in (token, slot) order
  float* shared = nullptr;       // [T, n_embd] the shared expert's output
  float* shared_gate = nullptr;  // [T] its gate's logit
};

// One rank's workspace (backend memory), sized for the step's tokens and logits rows.
struct StepWorkspace {
  float* x = nullptr;            // [n_tokens, n_embd] the residual stream (F32)
  void* xn = nullptr;            // [n_tokens, n_embd] normed, in the dtype
  float* qkv = nullptr;          // [n_tokens, q_dim + 2 kv_dim]
  void* attn = nullptr;          // [n_tokens, q_dim] in the dtype
  float* ff = nullptr;           // [n_tokens, 2 n_ff] gate and up
  void* act = nullptr;           // [n_tokens, n_ff] in the dtype
  float* delta = nullptr;        // [n_tokens, n_embd] what joins the residual next
  void* out_rows = nullptr;      // [n_out, n_embd] in the dtype: the rows the LM head reads
  float* logits = nullptr;       // [n_out, n_vocab]; rank 0's only (null on other ranks)
  float* logits_part = nullptr;  // tensor parallelism: [n_out, vocab_pad], this rank's slice
  // One-token steps: xn, attn and act in the form the backend's matmul reads directly.
  ActivationForm xn_q, attn_q, act_q;
  MoeWorkspace moe;
};

struct StepContext {
  Backend& backend;
  const ModelConfig& config;    // the shard's: its head counts, n_ff and vocabulary rows
  const ModelWeights& weights;  // as the backend uses them
  DType dtype;                  // GEMM inputs (xn, attn, act) and the KV cache
  StepMeta meta;
  StepKv kv;
  StepWorkspace ws;
  // Tensor parallelism: rank `rank` of n_ranks; collective null with one rank.
  Collective* collective = nullptr;
  int rank = 0;
  int n_ranks = 1;
  int64_t n_vocab = 0;      // the whole vocabulary (token ids are checked against it)
  int64_t vocab_begin = 0;  // the first vocabulary row this rank holds
  int64_t vocab_pad = 0;    // every rank's logits width in logits_part
};

}  // namespace forge
