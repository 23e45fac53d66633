// LoadModelConfig: the common llama-family keys, then each architecture's traits
// (architecture.h).
#include "model/model_config.h"

#include <cmath>
#include <cstdio>

#include "model/architecture.h"

namespace forge {
namespace {

// Bounds far past any real model that keep sizes computed from them (products of several, in
// int64) from overflowing.
constexpr int64_t kMaxEmbd = int64_t{1} << 18;
constexpr int64_t kMaxLayers = int64_t{1} << 14;
constexpr int64_t kMaxHeads = int64_t{1} << 14;
constexpr int64_t kMaxHeadDim = int64_t{1} << 12;
constexpr int64_t kMaxFf = int64_t{1} << 22;
constexpr int64_t kMaxContext = int64_t{1} << 30;
constexpr int64_t kMaxVocab = int64_t{1} << 28;

// `name` = v as a dimension: positive, at most max.
Status CheckDim(const std::string& name, uint64_t v, int64_t max) {
  if (v == 0) return InvalidArgumentError(name + " is 0");
  if (v > static_cast<uint64_t>(max)) {
    return InvalidArgumentError(name + " = " + std::to_string(v) +
                                " is past any real model (at most " + std::to_string(max) + ")");
  }
  return Status::Ok();
}

// A positive u32 dimension, at most max.
StatusOr<int64_t> GetDim(const GgufFile& f, const std::string& key, int64_t max) {
  ASSIGN_OR_RETURN(uint32_t v, f.GetU32(key));
  RETURN_IF_ERROR(CheckDim(key, v, max));
  return static_cast<int64_t>(v);
}

bool IsArray(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.Find(key);
  return v != nullptr && v->type() == GgufType::kArray;
}

// How an error names layer l's value of `key`: the key, indexed where the file has one value per
// layer.
std::string LayerKey(const GgufFile& f, const std::string& key, int64_t l) {
  return IsArray(f, key) ? key + "[" + std::to_string(l) + "]" : key;
}

// A dimension of every layer (GetDim's bounds): one u32 for all of them, or an array of n_layer
// integers, one per layer, as llama.cpp writes head counts and FFN widths.
StatusOr<std::vector<int64_t>> GetLayerDims(const GgufFile& f, const std::string& key,
                                            int64_t n_layer, int64_t max) {
  if (!IsArray(f, key)) {
    ASSIGN_OR_RETURN(int64_t v, GetDim(f, key, max));
    return std::vector<int64_t>(n_layer, v);
  }
  const GgufValue& array = *f.Find(key);
  if (!GgufIsInteger(array.elem_type())) {
    return InvalidArgumentError(key + " is an array of " +
                                std::string(GgufTypeName(array.elem_type())) +
                                ", expected integers");
  }
  const std::vector<GgufValue>& items = array.items();
  if (static_cast<int64_t>(items.size()) != n_layer) {
    return InvalidArgumentError(key + " has " + std::to_string(items.size()) + " values for " +
                                std::to_string(n_layer) + " layers");
  }
  std::vector<int64_t> dims(items.size());
  for (size_t l = 0; l < items.size(); ++l) {
    const std::string name = key + "[" + std::to_string(l) + "]";
    const GgufType t = items[l].type();
    const bool is_signed =
        t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
    if (is_signed && items[l].i64() < 0) {
      return InvalidArgumentError(name + " = " + std::to_string(items[l].i64()) + " is negative");
    }
    RETURN_IF_ERROR(CheckDim(name, items[l].u64(), max));
    dims[l] = static_cast<int64_t>(items[l].u64());
  }
  return dims;
}

}  // namespace

StatusOr<float> GetPositiveF32(const GgufFile& f, const std::string& key, float def, float below) {
  ASSIGN_OR_RETURN(float v, f.GetF32Or(key, def));
  if (!std::isfinite(v) || !(v > 0) || !(v < below)) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%g", v);
    std::string want = "finite and positive";
    if (std::isfinite(below)) {
      char b[32];
      std::snprintf(b, sizeof(b), "%g", below);
      want += std::string(", below ") + b;
    }
    return InvalidArgumentError(key + " = " + buf + ": must be " + want);
  }
  return v;
}

namespace {

// The vocabulary (when the file has one) and the embedding must have the same size: a token id
// past the embedding rows would read past them, and rows past the vocabulary are logits no token
// stands for. llama.cpp requires the same (converters pad the token list with [PAD] tokens).
Status CheckVocabSize(const GgufFile& f, const std::string& arch, int64_t rows) {
  if (const GgufValue* tokens = f.Find("tokenizer.ggml.tokens"); tokens != nullptr) {
    if (tokens->type() != GgufType::kArray) {
      return InvalidArgumentError("tokenizer.ggml.tokens is not an array");
    }
    const int64_t n = static_cast<int64_t>(tokens->items().size());
    if (n != rows) {
      return InvalidArgumentError("tokenizer.ggml.tokens has " + std::to_string(n) +
                                  " tokens but token_embd.weight has " + std::to_string(rows) +
                                  " rows; they must match");
    }
  }
  const std::string key = arch + ".vocab_size";
  if (f.Has(key)) {
    ASSIGN_OR_RETURN(uint64_t n, f.GetU64(key));
    if (n != static_cast<uint64_t>(rows)) {
      return InvalidArgumentError(key + " = " + std::to_string(n) + " but token_embd.weight has " +
                                  std::to_string(rows) + " rows; they must match");
    }
  }
  return Status::Ok();
}

// rope_freqs.weight (Llama 3.1 scaling) divides the rotation frequencies: each must be finite and
// positive. Its shape and type are checked when the weights are bound.
Status CheckRopeFreqs(const GgufFile& f) {
  const GgufTensorInfo* t = f.FindTensor("rope_freqs.weight");
  if (t == nullptr || t->type != GgmlType::kF32 || t->data == nullptr) return Status::Ok();
  const float* v = reinterpret_cast<const float*>(t->data);
  for (int64_t i = 0; i < t->n_elements; ++i) {
    if (!std::isfinite(v[i]) || !(v[i] > 0)) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%g", v[i]);
      return InvalidArgumentError("rope_freqs.weight[" + std::to_string(i) + "] = " + buf +
                                  ": rope frequency factors must be finite and positive");
    }
  }
  return Status::Ok();
}

// The mixture-of-experts keys as llama.cpp writes them.
// Embedding models: the pooling type, causality and (encoders) the LayerNorm epsilon.
Status ReadPooling(const GgufFile& f, const Architecture& arch, ModelConfig& c) {
  const std::string a = c.arch + ".";
  c.encoder = arch.encoder;
  ASSIGN_OR_RETURN(c.causal, f.GetBoolOr(a + "attention.causal", !arch.encoder));
  ASSIGN_OR_RETURN(uint32_t pooling, f.GetU32Or(a + "pooling_type", 0));
  if (pooling == 4) {
    return UnimplementedError(a + "pooling_type 4 (rank): reranking models are not supported yet");
  }
  if (pooling > 4) {
    return InvalidArgumentError(a + "pooling_type " + std::to_string(pooling) +
                                " is not one of 0 (none), 1 (mean), 2 (cls), 3 (last), 4 (rank)");
  }
  c.pooling = static_cast<PoolingType>(pooling);
  if (arch.encoder) {
    if (c.pooling == PoolingType::kNone) {
      return NotFoundError(a + "pooling_type is missing or 0: an encoder's output is pooled " +
                           "vectors, and the file must say how (1 mean, 2 cls, 3 last)");
    }
    ASSIGN_OR_RETURN(c.rms_eps,
                     GetPositiveF32(f, a + "attention.layer_norm_epsilon", 1e-12f, 1.0f));
  }
  if (!c.causal && !arch.encoder) {
    return UnimplementedError(a + "attention.causal is false: Forge runs " + c.arch +
                              " as a causal decoder only");
  }
  return Status::Ok();
}

Status ReadExperts(const GgufFile& f, const Architecture& arch, ModelConfig& c) {
  const std::string a = c.arch + ".";
  ASSIGN_OR_RETURN(uint32_t experts, f.GetU32Or(a + "expert_count", 0));
  if (experts == 0) {
    if (arch.needs_experts) return NotFoundError(a + "expert_count is missing or 0");
    return Status::Ok();
  }
  RETURN_IF_ERROR(CheckDim(a + "expert_count", experts, kMaxExperts));
  c.n_expert = experts;
  ASSIGN_OR_RETURN(c.n_expert_used,
                   GetDim(f, a + "expert_used_count", std::min<int64_t>(experts, 32)));
  c.n_ff_exp = c.n_ff;
  if (f.Has(a + "expert_feed_forward_length")) {
    ASSIGN_OR_RETURN(c.n_ff_exp, GetDim(f, a + "expert_feed_forward_length", kMaxFf));
  }
  if (f.Has(a + "expert_shared_feed_forward_length")) {
    ASSIGN_OR_RETURN(c.n_ff_shexp, GetDim(f, a + "expert_shared_feed_forward_length", kMaxFf));
  }
  c.expert_weights_norm = arch.expert_weights_norm;
  if (f.Has(a + "expert_weights_norm")) {
    ASSIGN_OR_RETURN(c.expert_weights_norm, f.GetBool(a + "expert_weights_norm"));
  }
  if (f.Has(a + "expert_weights_scale")) {
    ASSIGN_OR_RETURN(float scale, GetPositiveF32(f, a + "expert_weights_scale", 1.0f));
    c.expert_weights_scale = scale;
  }
  // llama.cpp's expert_gating_func: 1 softmax, 2 sigmoid, 3 softmax of the chosen logits.
  ASSIGN_OR_RETURN(uint32_t gating, f.GetU32Or(a + "expert_gating_func", 1));
  switch (gating) {
    case 0:
    case 1:
      c.expert_gating = ExpertGating::kSoftmax;
      break;
    case 2:
      c.expert_gating = ExpertGating::kSigmoid;
      break;
    case 3:
      c.expert_gating = ExpertGating::kSoftmaxTopK;
      break;
    default:
      return UnimplementedError(a + "expert_gating_func " + std::to_string(gating) +
                                " (Forge reads 1 softmax, 2 sigmoid, 3 softmax of the chosen)");
  }
  return Status::Ok();
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
  std::string s = buf;
  if (rope_dims == 0) s = s.substr(0, s.find(", rope ")) + ", learned positions";
  if (pooling != PoolingType::kNone) {
    s += std::string(causal ? ", causal" : ", bidirectional") + ", pooling " + PoolingName(pooling);
  }
  if (n_expert > 0) {
    std::snprintf(buf, sizeof(buf), ", %lld experts (%lld a token) of %lld", (long long)n_expert,
                  (long long)n_expert_used, (long long)n_ff_exp);
    s += buf;
    if (n_ff_shexp > 0) s += " + a shared expert of " + std::to_string(n_ff_shexp);
  }
  int64_t windowed = 0;
  for (const LayerConfig& l : layers) windowed += l.sliding_window > 0 ? 1 : 0;
  if (windowed > 0) {
    for (const LayerConfig& l : layers) {
      if (l.sliding_window == 0) continue;
      s += ", a window of " + std::to_string(l.sliding_window) + " keys on " +
           std::to_string(windowed) + " of " + std::to_string(n_layer) + " layers";
      break;
    }
  }
  return s;
}

float ModelConfig::AttentionScale() const {
  return attn_scale > 0 ? attn_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

StatusOr<ModelConfig> LoadModelConfig(const GgufFile& f) {
  ModelConfig c;
  ASSIGN_OR_RETURN(c.arch, f.GetString("general.architecture"));
  const Architecture* architecture = FindArchitecture(c.arch);
  const std::string a = c.arch + ".";
  if (architecture == nullptr) {
    return UnimplementedError("unknown architecture '" + c.arch + "' (Forge runs " +
                              ArchitectureNames() + ")");
  }
  ASSIGN_OR_RETURN(c.name, f.GetStringOr("general.name", ""));
  ASSIGN_OR_RETURN(c.n_embd, GetDim(f, a + "embedding_length", kMaxEmbd));
  ASSIGN_OR_RETURN(c.n_layer, GetDim(f, a + "block_count", kMaxLayers));
  const std::string heads_key = a + "attention.head_count", kv_key = a + "attention.head_count_kv";
  ASSIGN_OR_RETURN(std::vector<int64_t> heads, GetLayerDims(f, heads_key, c.n_layer, kMaxHeads));
  ASSIGN_OR_RETURN(std::vector<int64_t> ffs,
                   GetLayerDims(f, a + "feed_forward_length", c.n_layer, kMaxFf));
  std::vector<int64_t> kv_heads = heads;
  if (f.Has(kv_key)) {
    ASSIGN_OR_RETURN(kv_heads, GetLayerDims(f, kv_key, c.n_layer, kMaxHeads));
  }
  for (int64_t l = 0; l < c.n_layer; ++l) {
    if (heads[l] % kv_heads[l] != 0) {
      return InvalidArgumentError(LayerKey(f, heads_key, l) + " " + std::to_string(heads[l]) +
                                  " is not a multiple of " + LayerKey(f, kv_key, l) + " " +
                                  std::to_string(kv_heads[l]));
    }
  }
  c.n_head = heads[0];
  c.n_head_kv = kv_heads[0];
  c.n_ff = ffs[0];
  c.head_dim = c.n_embd / c.n_head;
  if (f.Has(a + "attention.key_length")) {
    ASSIGN_OR_RETURN(c.head_dim, GetDim(f, a + "attention.key_length", kMaxHeadDim));
  } else if (c.n_embd % c.n_head != 0) {
    return InvalidArgumentError(a + "embedding_length is not a multiple of " + a +
                                "attention.head_count and " + a + "attention.key_length is absent");
  } else if (c.head_dim > kMaxHeadDim) {
    return InvalidArgumentError(
        a + "embedding_length / " + a + "attention.head_count = " + std::to_string(c.head_dim) +
        " is past any real head dim (at most " + std::to_string(kMaxHeadDim) + ")");
  }
  if (f.Has(a + "attention.value_length")) {
    ASSIGN_OR_RETURN(int64_t v, GetDim(f, a + "attention.value_length", kMaxHeadDim));
    if (v != c.head_dim) {
      return UnimplementedError(a + "attention.value_length " + std::to_string(v) +
                                " differs from the key length " + std::to_string(c.head_dim));
    }
  }
  c.n_ctx_train = 2048;
  if (f.Has(a + "context_length")) {
    ASSIGN_OR_RETURN(c.n_ctx_train, GetDim(f, a + "context_length", kMaxContext));
  }
  // An epsilon of 1 or more is no longer a guard against division by zero but a change of scale.
  ASSIGN_OR_RETURN(c.rms_eps,
                   GetPositiveF32(f, a + "attention.layer_norm_rms_epsilon", 1e-5f, 1.0f));
  if (f.Has(a + "attention.layer_norm_epsilon")) {  // read by LayerNorm architectures
    RETURN_IF_ERROR(GetPositiveF32(f, a + "attention.layer_norm_epsilon", 1e-5f, 1.0f).status());
  }
  ASSIGN_OR_RETURN(c.rope_theta, GetPositiveF32(f, a + "rope.freq_base", 10000.0f));
  ASSIGN_OR_RETURN(uint32_t rope_dims,
                   f.GetU32Or(a + "rope.dimension_count", static_cast<uint32_t>(c.head_dim)));
  c.rope_dims = rope_dims;
  if (c.rope_dims % 2 != 0 || c.rope_dims > c.head_dim) {
    return InvalidArgumentError(a + "rope.dimension_count " + std::to_string(c.rope_dims) +
                                " must be even and at most the head dim " +
                                std::to_string(c.head_dim));
  }
  ASSIGN_OR_RETURN(std::string scaling, f.GetStringOr(a + "rope.scaling.type", "none"));
  if (scaling == "linear") {
    if (!f.Has(a + "rope.scaling.factor")) {
      return NotFoundError(a + "rope.scaling.factor is missing (rope.scaling.type is 'linear')");
    }
    ASSIGN_OR_RETURN(float factor, GetPositiveF32(f, a + "rope.scaling.factor", 1.0f));
    c.rope_freq_scale = 1.0f / factor;
  } else if (scaling == "yarn") {
    return UnimplementedError("rope.scaling.type 'yarn' is not supported yet");
  } else if (scaling != "none") {
    return UnimplementedError("unknown rope.scaling.type '" + scaling + "'");
  }
  c.layers.resize(c.n_layer);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    c.layers[l] = {.n_head = heads[l],
                   .n_head_kv = kv_heads[l],
                   .n_ff = ffs[l],
                   .rope_theta = c.rope_theta,
                   .rope_freq_scale = c.rope_freq_scale,
                   .sliding_window = 0};
  }
  c.rope_style = architecture->rope;
  c.qkv_bias = architecture->qkv_bias;
  c.qk_norm = architecture->qk_norm;
  c.fused_qkv = architecture->fused_qkv;
  c.fused_gate_up = architecture->fused_gate_up;
  c.post_norms = architecture->post_norms;
  c.ffn_act = architecture->ffn_act;
  RETURN_IF_ERROR(ReadExperts(f, *architecture, c));
  RETURN_IF_ERROR(ReadPooling(f, *architecture, c));
  c.rope_freq_factors = f.FindTensor("rope_freqs.weight") != nullptr;
  RETURN_IF_ERROR(CheckRopeFreqs(f));
  c.tied_embeddings = f.FindTensor("output.weight") == nullptr;
  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) return NotFoundError("tensor 'token_embd.weight' is missing");
  if (embd->dims.size() != 2) return InvalidArgumentError("token_embd.weight is not 2-D");
  c.n_vocab = embd->dims[1];
  if (c.n_vocab <= 0 || c.n_vocab > kMaxVocab) {
    return InvalidArgumentError("token_embd.weight has " + std::to_string(c.n_vocab) +
                                " rows: no usable vocabulary");
  }
  RETURN_IF_ERROR(CheckVocabSize(f, c.arch, c.n_vocab));
  if (architecture->configure != nullptr) RETURN_IF_ERROR(architecture->configure(f, c));
  RETURN_IF_ERROR(CheckUniformLayers(c));
  if (architecture->check != nullptr) RETURN_IF_ERROR(architecture->check(c));
  return c;
}

Status CheckUniformLayers(const ModelConfig& c) {
  struct Field {
    const char* key;
    int64_t LayerConfig::*value;
  };
  constexpr Field kFields[] = {{"attention.head_count", &LayerConfig::n_head},
                               {"attention.head_count_kv", &LayerConfig::n_head_kv},
                               {"feed_forward_length", &LayerConfig::n_ff}};
  for (const Field& field : kFields) {
    for (int64_t l = 1; l < static_cast<int64_t>(c.layers.size()); ++l) {
      const int64_t first = c.layers[0].*field.value, here = c.layers[l].*field.value;
      if (here != first) {
        return UnimplementedError(c.arch + "." + field.key +
                                  " differs between layers (layer 0: " + std::to_string(first) +
                                  ", layer " + std::to_string(l) + ": " + std::to_string(here) +
                                  "); Forge runs models whose layers all have the same head "
                                  "counts and FFN width");
      }
    }
  }
  return Status::Ok();
}

}  // namespace forge
