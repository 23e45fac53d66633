// Gemma 2 and Gemma 3: the keys llama.cpp reads for them, and their layer over blocks.h.
#include "model/gemma.h"

#include <cmath>
#include <string>
#include <vector>

#include "model/blocks.h"

namespace forge {
namespace {

// The GGUF has no query_pre_attn_scalar: the 27B shapes (Gemma 2: 46 layers, Gemma 3: 62) scale
// scores by 1 / sqrt(n_embd / n_head), the others by 1 / sqrt(head_dim), as llama.cpp does.
float GemmaAttentionScale(const ModelConfig& c, int64_t layers_27b) {
  if (c.n_layer == layers_27b) {
    return 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head));
  }
  return 1.0f / std::sqrt(static_cast<float>(c.head_dim));
}

// Which layers attend over the window: `attention.sliding_window_pattern` as a period p (layer l
// is windowed unless l % p == p - 1; 0 or absent: default_period) or as one flag per layer.
StatusOr<std::vector<bool>> WindowedLayers(const GgufFile& f, const ModelConfig& c,
                                           uint32_t default_period) {
  const std::string key = c.arch + ".attention.sliding_window_pattern";
  std::vector<bool> windowed(c.n_layer);
  const GgufValue* v = f.Find(key);
  if (v != nullptr && v->type() == GgufType::kArray) {
    const std::vector<GgufValue>& items = v->items();
    if (static_cast<int64_t>(items.size()) != c.n_layer) {
      return InvalidArgumentError(key + " has " + std::to_string(items.size()) + " values for " +
                                  std::to_string(c.n_layer) + " layers");
    }
    if (v->elem_type() != GgufType::kBool && !GgufIsInteger(v->elem_type())) {
      return InvalidArgumentError(key + " is an array of " +
                                  std::string(GgufTypeName(v->elem_type())) +
                                  ", expected booleans");
    }
    for (int64_t l = 0; l < c.n_layer; ++l) windowed[l] = items[l].u64() != 0;
    return windowed;
  }
  ASSIGN_OR_RETURN(uint32_t period, f.GetU32Or(key, default_period));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    windowed[l] = period == 0 || static_cast<uint32_t>(l % period) < period - 1;
  }
  return windowed;
}

// The family's keys: Gemma 2 windows every other layer (4,096 keys unless the file says), caps
// scores at 50 and logits at 30 unless the file says; Gemma 3 windows five layers of six when the
// file gives a window, at a rope base of its own (10,000 unless the file says) and without the
// global layers' rope scaling, and caps logits only when the file says.
struct GemmaFamily {
  uint32_t default_window;  // 0: windows only when the file gives one
  uint32_t default_period;
  float default_attn_softcap, default_final_softcap;
  bool local_base_is_global;  // the windowed layers' rope base defaults to the global one
  bool local_rope_scaled;     // the windowed layers share the global rope scaling
  int64_t layers_27b;
};

Status ConfigureGemma(const GgufFile& f, ModelConfig& c, const GemmaFamily& family) {
  const std::string a = c.arch + ".";
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.attn_scale = GemmaAttentionScale(c, family.layers_27b);
  if (family.default_attn_softcap > 0) {
    ASSIGN_OR_RETURN(c.attn_softcap,
                     GetPositiveF32(f, a + "attn_logit_softcapping", family.default_attn_softcap));
  }
  if (family.default_final_softcap > 0 || f.Has(a + "final_logit_softcapping")) {
    ASSIGN_OR_RETURN(c.final_softcap, GetPositiveF32(f, a + "final_logit_softcapping",
                                                     family.default_final_softcap));
  }
  ASSIGN_OR_RETURN(uint32_t window,
                   f.GetU32Or(a + "attention.sliding_window", family.default_window));
  if (window == 0) return Status::Ok();
  ASSIGN_OR_RETURN(std::vector<bool> windowed, WindowedLayers(f, c, family.default_period));
  ASSIGN_OR_RETURN(float local_base,
                   GetPositiveF32(f, a + "rope.freq_base_swa",
                                  family.local_base_is_global ? c.rope_theta : 10000.0f));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    if (!windowed[l]) continue;
    LayerConfig& lc = c.layers[l];
    lc.sliding_window = window;
    lc.rope_theta = local_base;
    if (!family.local_rope_scaled) lc.rope_freq_scale = 1.0f;
  }
  return Status::Ok();
}

}  // namespace

Status ConfigureGemma2(const GgufFile& f, ModelConfig& c) {
  return ConfigureGemma(f, c,
                        {.default_window = 4096,
                         .default_period = 2,
                         .default_attn_softcap = 50.0f,
                         .default_final_softcap = 30.0f,
                         .local_base_is_global = true,
                         .local_rope_scaled = true,
                         .layers_27b = 46});
}

Status ConfigureGemma3(const GgufFile& f, ModelConfig& c) {
  return ConfigureGemma(f, c,
                        {.default_window = 0,
                         .default_period = 6,
                         .default_attn_softcap = 0.0f,
                         .default_final_softcap = 0.0f,
                         .local_base_is_global = false,
                         .local_rope_scaled = false,
                         .layers_27b = 62});
}

Status GemmaForward(const StepContext& s) {
  const ModelConfig& c = s.config;
  RETURN_IF_ERROR(EmbedTokens(s));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& w = s.weights.layers[l];
    RETURN_IF_ERROR(NormInput(s, w.attn_norm.data, l == 0, {&w.wqkv, &w.wqk, &w.wq, &w.wk, &w.wv}));
    RETURN_IF_ERROR(AttentionBlock(s, l, l > 0 ? &s.ws.xn_q : nullptr));
    RETURN_IF_ERROR(NormOutput(s, w.attn_post_norm.data));
    RETURN_IF_ERROR(NormInput(s, w.ffn_norm.data, false, {&w.w_gate_up, &w.w_gate, &w.w_up}));
    RETURN_IF_ERROR(FfnBlock(s, l));
    RETURN_IF_ERROR(NormOutput(s, w.ffn_post_norm.data));
  }
  return OutputLogits(s);
}

}  // namespace forge
