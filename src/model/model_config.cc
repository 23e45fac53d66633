// LoadModelConfig: the common llama-family keys, then each architecture's traits.
#include "model/model_config.h"

#include <cstdio>

namespace forge {
namespace {

struct ArchTraits {
  const char* name;
  RopeStyle rope;
  bool qkv_bias, qk_norm, fused_qkv, fused_gate_up;
};

// One row per supported architecture.
constexpr ArchTraits kArchs[] = {
    {"llama", RopeStyle::kAdjacent, false, false, false, false},
    {"qwen2", RopeStyle::kNeox, true, false, false, false},
    {"qwen3", RopeStyle::kNeox, false, true, false, false},
    {"phi3", RopeStyle::kNeox, false, false, true, true},
};

StatusOr<int64_t> GetDim(const GgufFile& f, const std::string& key) {
  ASSIGN_OR_RETURN(uint32_t v, f.GetU32(key));
  if (v == 0) return InvalidArgumentError(key + " is 0");
  return static_cast<int64_t>(v);
}

}  // namespace

std::string ModelConfig::Summary() const {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "%s: vocab %lld, embd %lld, layers %lld, heads %lld/%lld kv, head_dim %lld, ffn "
                "%lld, rope %s theta %g",
                arch.c_str(), (long long)n_vocab, (long long)n_embd, (long long)n_layer,
                (long long)n_head, (long long)n_head_kv, (long long)head_dim, (long long)n_ff,
                rope_style == RopeStyle::kNeox ? "neox" : "adjacent", rope_theta);
  return buf;
}

StatusOr<ModelConfig> LoadModelConfig(const GgufFile& f) {
  ModelConfig c;
  ASSIGN_OR_RETURN(c.arch, f.GetString("general.architecture"));
  const ArchTraits* traits = nullptr;
  for (const ArchTraits& t : kArchs) {
    if (c.arch == t.name) traits = &t;
  }
  const std::string a = c.arch + ".";
  if (f.Has(a + "expert_count")) {
    ASSIGN_OR_RETURN(uint32_t experts, f.GetU32(a + "expert_count"));
    if (experts > 0) {
      return UnimplementedError("'" + c.arch + "' is a mixture-of-experts model (" +
                                std::to_string(experts) +
                                " experts); Forge does not run mixture-of-experts models");
    }
  }
  if (traits == nullptr) {
    return UnimplementedError("unknown architecture '" + c.arch +
                              "' (Forge runs llama, qwen2, qwen3, phi3)");
  }
  ASSIGN_OR_RETURN(c.name, f.GetStringOr("general.name", ""));
  ASSIGN_OR_RETURN(c.n_embd, GetDim(f, a + "embedding_length"));
  ASSIGN_OR_RETURN(c.n_layer, GetDim(f, a + "block_count"));
  ASSIGN_OR_RETURN(c.n_head, GetDim(f, a + "attention.head_count"));
  ASSIGN_OR_RETURN(c.n_ff, GetDim(f, a + "feed_forward_length"));
  c.n_head_kv = c.n_head;
  if (f.Has(a + "attention.head_count_kv")) {
    ASSIGN_OR_RETURN(c.n_head_kv, GetDim(f, a + "attention.head_count_kv"));
  }
  if (c.n_head % c.n_head_kv != 0) {
    return InvalidArgumentError("head_count " + std::to_string(c.n_head) +
                                " is not a multiple of head_count_kv " +
                                std::to_string(c.n_head_kv));
  }
  c.head_dim = c.n_embd / c.n_head;
  if (f.Has(a + "attention.key_length")) {
    ASSIGN_OR_RETURN(c.head_dim, GetDim(f, a + "attention.key_length"));
  } else if (c.n_embd % c.n_head != 0) {
    return InvalidArgumentError("embedding_length is not a multiple of head_count and "
                                "attention.key_length is absent");
  }
  if (f.Has(a + "attention.value_length")) {
    ASSIGN_OR_RETURN(int64_t v, GetDim(f, a + "attention.value_length"));
    if (v != c.head_dim) {
      return UnimplementedError("attention.value_length " + std::to_string(v) +
                                " differs from key_length " + std::to_string(c.head_dim));
    }
  }
  ASSIGN_OR_RETURN(uint32_t ctx, f.GetU32Or(a + "context_length", 2048));
  c.n_ctx_train = ctx;
  ASSIGN_OR_RETURN(c.rms_eps, f.GetF32Or(a + "attention.layer_norm_rms_epsilon", 1e-5f));
  ASSIGN_OR_RETURN(c.rope_theta, f.GetF32Or(a + "rope.freq_base", 10000.0f));
  ASSIGN_OR_RETURN(uint32_t rope_dims, f.GetU32Or(a + "rope.dimension_count",
                                                  static_cast<uint32_t>(c.head_dim)));
  c.rope_dims = rope_dims;
  if (c.rope_dims % 2 != 0 || c.rope_dims > c.head_dim) {
    return InvalidArgumentError("rope.dimension_count " + std::to_string(c.rope_dims) +
                                " must be even and at most the head dim " +
                                std::to_string(c.head_dim));
  }
  ASSIGN_OR_RETURN(std::string scaling, f.GetStringOr(a + "rope.scaling.type", "none"));
  if (scaling == "linear") {
    ASSIGN_OR_RETURN(float factor, f.GetF32(a + "rope.scaling.factor"));
    if (!(factor > 0)) return InvalidArgumentError("rope.scaling.factor must be positive");
    c.rope_freq_scale = 1.0f / factor;
  } else if (scaling == "yarn") {
    return UnimplementedError("rope.scaling.type 'yarn' is not supported yet");
  } else if (scaling != "none") {
    return UnimplementedError("unknown rope.scaling.type '" + scaling + "'");
  }
  c.rope_style = traits->rope;
  c.qkv_bias = traits->qkv_bias;
  c.qk_norm = traits->qk_norm;
  c.fused_qkv = traits->fused_qkv;
  c.fused_gate_up = traits->fused_gate_up;
  c.rope_freq_factors = f.FindTensor("rope_freqs.weight") != nullptr;
  c.tied_embeddings = f.FindTensor("output.weight") == nullptr;
  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFoundError("tensor 'token_embd.weight' is missing");
  if (embd->dims.size() != 2) return InvalidArgumentError("token_embd.weight is not 2-D");
  c.n_vocab = embd->dims[1];
  return c;
}

}  // namespace forge
