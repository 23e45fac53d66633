// ModelConfig: the hyperparameters of a llama-family model, read from GGUF metadata, with the
// architecture's traits (rope style, biases, q/k norm, fused tensors).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/rope/rope.h"
#include "base/status.h"
#include "gguf/gguf_file.h"

namespace forge {

// One layer's hyperparameters. llama.cpp writes some keys either once for every layer or as an
// array of one value per layer (attention.head_count, attention.head_count_kv,
// feed_forward_length); the forward reads these.
struct LayerConfig {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t n_ff = 0;
  float rope_theta = 10000.0f;
  int64_t sliding_window = 0;  // keys a query attends back over; 0: none (every earlier key)
};

struct ModelConfig {
  std::string arch;        // "llama", "qwen2", "qwen3", "phi3"
  std::string name;
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  // Layer 0's head counts and FFN width (every layer's: layers that differ are refused at load,
  // CheckUniformLayers).
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
  std::vector<LayerConfig> layers;  // [n_layer]

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  std::string Summary() const;
};

// Reads and validates the configuration. Unknown architectures, mixture-of-experts models, rope
// scaling Forge cannot apply and layers that differ where the engine cannot take it
// (CheckUniformLayers) are errors that say so.
StatusOr<ModelConfig> LoadModelConfig(const GgufFile& file);

// Refuses layers whose head counts or FFN width differ (naming the GGUF key and the layer): the
// weights are bound, the KV cache pools shaped, the workspace sized and tensor-parallel shards cut
// for one value of each. Layers may differ in the other LayerConfig fields.
Status CheckUniformLayers(const ModelConfig& config);

}  // namespace forge
