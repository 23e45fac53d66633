// ModelWeights: every tensor of a llama-family model bound by name with its shape checked, as
// views over the mapped GGUF (no copy). Fused phi3 tensors are split into row views.
#pragma once

#include <functional>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "quant/weight_view.h"

namespace forge {

// A 1-D F32 tensor (norm weights, biases); null when absent.
struct VectorView {
  const float* data = nullptr;
  int64_t size = 0;
};

struct LayerWeights {
  VectorView attn_norm;             // [n_embd]
  WeightView wq, wk, wv, wo;        // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
  VectorView bq, bk, bv;            // qwen2 biases
  VectorView q_norm, k_norm;        // qwen3 [head_dim]
  VectorView ffn_norm;              // [n_embd]
  WeightView w_gate, w_up, w_down;  // [n_ff, n_embd] x2, [n_embd, n_ff]
  VectorView attn_post_norm, ffn_post_norm;  // Gemma [n_embd]: the sublayers' outputs
  // Mixture of experts (instead of w_gate / w_up / w_down): the router [n_expert, n_embd] and each
  // expert's matrices, views into the stacked GGUF tensors (the *_all views: the whole stacked
  // tensor, prepared once; empty when sharded); the shared expert and its gate [1, n_embd].
  WeightView router;
  // [n_ff_exp, n_embd] (gate, up) and [n_embd, n_ff_exp] (down), one per expert.
  std::vector<WeightView> gate_exps, up_exps, down_exps;
  WeightView gate_exps_all, up_exps_all, down_exps_all;
  WeightView shexp_gate, shexp_up, shexp_down, shexp_router;
  // On a backend that stacks weights: q/k/v as one [q_dim + 2 kv_dim, n_embd] tensor (biases
  // likewise) and gate/up as one [2 n_ff, n_embd]; wq..w_up are then row views of them. Where v's
  // format differs from q's and k's (Q4_K_M's Q6_K attn_v layers), q/k as one [q_dim + kv_dim,
  // n_embd] tensor (wqk, bqk) and v apart.
  WeightView wqkv, w_gate_up, wqk;
  VectorView bqkv, bqk;
  // Encoders (BERT's layout): the output projections' biases, and the LayerNorms (weight, bias)
  // after the attention and after the FFN. Their FFN is w_up then w_down (w_gate too where gated).
  VectorView bo, b_up, b_down;
  VectorView attn_out_norm, attn_out_norm_b, out_norm, out_norm_b;
};

struct ModelWeights {
  WeightView token_embd;  // [n_vocab, n_embd]
  std::vector<LayerWeights> layers;
  VectorView output_norm;
  WeightView output;      // token_embd when the embeddings are tied
  VectorView rope_freqs;  // [rope_dims / 2] or empty
  // Encoders: learned positions [n_ctx_train, n_embd] (empty with rotary ones), token type 0's
  // embedding [n_embd] (empty when the model has none) and the embeddings' LayerNorm.
  WeightView position_embd;
  VectorView token_type0;
  VectorView embd_norm, embd_norm_b;
};

// Binds every tensor; a missing tensor or a wrong shape names the tensor, expected and found.
StatusOr<ModelWeights> BindModelWeights(const GgufFile& file, const ModelConfig& config);

// Bytes the weight matrices take where `w` points (views into one tensor counted once): the
// output head and every layer's matrices, plus token_embd when with_token_embd.
int64_t WeightMatrixBytes(const ModelWeights& w, bool with_token_embd);

class Backend;
// The same weights made usable by `backend` with `act` activations (Backend::PrepareWeight on
// every tensor). Views of fused tensors stay views into one prepared tensor. On a backend that
// reports its memory, weights that cannot fit are refused up front with the numbers.
// progress(done_bytes, total_bytes) is called as tensors are prepared (may be empty).
using LoadProgress = std::function<void(int64_t, int64_t)>;
StatusOr<ModelWeights> PrepareModelWeights(const ModelWeights& host, Backend& backend, DType act,
                                           const LoadProgress& progress = {});

}  // namespace forge
