// ModelConfig: the hyperparameters of a llama-family model, read from GGUF metadata, with the
// architecture's traits (rope style, biases, q/k norm, fused tensors).
#pragma once

#include <cstdint>
#include <string>

#include "backend/cpu/rope/rope.h"
#include "base/status.h"
#include "gguf/gguf_file.h"

namespace forge {

struct ModelConfig {
  std::string arch;        // "llama", "qwen2", "qwen3", "phi3"
  std::string name;
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;    // attention.key_length, default n_embd / n_head
  int64_t n_ff = 0;
  int64_t n_ctx_train = 0;
  float rms_eps = 1e-5f;
  // RoPE.
  RopeStyle rope_style = RopeStyle::kAdjacent;
  int64_t rope_dims = 0;
  float rope_theta = 10000.0f;
  float rope_freq_scale = 1.0f;  // linear scaling: 1 / factor
  bool rope_freq_factors = false;  // rope_freqs.weight present (Llama 3.1 scaling)
  // Architecture traits.
  bool qkv_bias = false;     // qwen2
  bool qk_norm = false;      // qwen3: per-head RMSNorm of q and k
  bool fused_qkv = false;    // phi3: attn_qkv
  bool fused_gate_up = false;  // phi3: ffn_up holds gate then up
  bool tied_embeddings = false;  // no output.weight: logits use token_embd

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  std::string Summary() const;
};

// Reads and validates the configuration. Unknown architectures, mixture-of-experts models and
// rope scaling Forge cannot apply are errors that say so.
StatusOr<ModelConfig> LoadModelConfig(const GgufFile& file);

}  // namespace forge
