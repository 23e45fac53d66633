// ModelConfig: the hyperparameters of a llama-family model, read from GGUF metadata, with the
// architecture's traits (rope style, biases, q/k norm, fused tensors).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/pool/pool.h"
#include "backend/cpu/rope/rope.h"
#include "backend/cpu/route/route.h"
#include "backend/cpu/swiglu/swiglu.h"
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
  float rope_freq_scale = 1.0f;
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
  float rms_eps = 1e-5f;  // the norms' epsilon (LayerNorm's in an encoder)
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
  // Gemma's traits (1 and 0: none).
  float embd_scale = 1.0f;     // embeddings times this (Gemma: sqrt(n_embd))
  float attn_scale = 0.0f;     // the scores' scale; 0: 1 / sqrt(head_dim)
  float attn_softcap = 0.0f;   // attention scores soft-capped at this (Gemma 2)
  float final_softcap = 0.0f;  // logits soft-capped at this (Gemma 2)
  GluAct ffn_act = GluAct::kSilu;  // the FFN's gate activation
  bool post_norms = false;     // RMSNorm of the attention and FFN outputs before the residual
  // Mixture of experts (n_expert 0: a dense FFN): every layer's FFN is n_expert experts of
  // n_ff_exp features, n_expert_used of them per token, weighted as the gating says; plus a
  // shared expert of n_ff_shexp features where the model has one (Qwen2-MoE).
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  bool expert_weights_norm = false;  // the chosen experts' weights divided by their sum
  float expert_weights_scale = 1.0f;
  // Embedding models (the GGUF's pooling_type): the forward's output is one pooled, L2-normalized
  // vector of n_embd per sequence instead of logits; kNone: a model that generates.
  PoolingType pooling = PoolingType::kNone;
  bool causal = true;  // attention.causal: false for encoders (every query sees every key)
  bool encoder = false;  // BERT's layout (Architecture::encoder; bert.h)
  std::vector<LayerConfig> layers;  // [n_layer]

  int64_t q_dim() const { return n_head * head_dim; }
  // Values per output row of a step: n_embd for a model that pools, else n_vocab.
  int64_t OutputWidth() const { return pooling != PoolingType::kNone ? n_embd : n_vocab; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
  float AttentionScale() const;
  std::string Summary() const;
};

// Reads and validates the configuration. Unknown architectures, mixture-of-experts keys that are
// missing or out of range, rope scaling Forge cannot apply and layers that differ where the
// engine cannot take it (CheckUniformLayers) are errors that say so.
StatusOr<ModelConfig> LoadModelConfig(const GgufFile& file);

// A finite, positive f32 `key` (below `below` when given), or def when the key is absent; errors
// name the key.
StatusOr<float> GetPositiveF32(const GgufFile& f, const std::string& key, float def,
                               float below = INFINITY);

// Refuses layers whose head counts or FFN width differ (naming the GGUF key and the layer): the
// weights are bound, the KV cache pools shaped, the workspace sized and tensor-parallel shards cut
// for one value of each. Layers may differ in the other LayerConfig fields.
Status CheckUniformLayers(const ModelConfig& config);

}  // namespace forge
