// MakeModel: llama tensor names and shapes, a synthetic SentencePiece-style vocabulary
// (<unk>, <s>, </s>, 256 byte tokens, then letter pieces) and N(0, 0.02)-like weights.
#include "modelgen/model_maker.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gguf/gguf_writer.h"

namespace forge {
namespace {

struct TensorPlan {
  std::string name;
  std::vector<int64_t> dims;
  bool is_norm;
};

std::vector<TensorPlan> PlanTensors(const ModelSpec& s) {
  const int64_t head_dim = s.n_embd / s.n_head;
  const int64_t kv_dim = head_dim * s.n_head_kv;
  std::vector<TensorPlan> plan;
  plan.push_back({"token_embd.weight", {s.n_embd, s.n_vocab}, false});
  for (int64_t l = 0; l < s.n_layer; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    plan.push_back({p + "attn_norm.weight", {s.n_embd}, true});
    plan.push_back({p + "attn_q.weight", {s.n_embd, s.n_embd}, false});
    plan.push_back({p + "attn_k.weight", {s.n_embd, kv_dim}, false});
    plan.push_back({p + "attn_v.weight", {s.n_embd, kv_dim}, false});
    plan.push_back({p + "attn_output.weight", {s.n_embd, s.n_embd}, false});
    plan.push_back({p + "ffn_norm.weight", {s.n_embd}, true});
    plan.push_back({p + "ffn_gate.weight", {s.n_embd, s.n_ff}, false});
    plan.push_back({p + "ffn_up.weight", {s.n_embd, s.n_ff}, false});
    plan.push_back({p + "ffn_down.weight", {s.n_ff, s.n_embd}, false});
  }
  plan.push_back({"output_norm.weight", {s.n_embd}, true});
  plan.push_back({"output.weight", {s.n_embd, s.n_vocab}, false});
  return plan;
}

void SetVocab(const ModelSpec& s, GgufWriter& w) {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  tokens = {"<unk>", "<s>", "</s>"};
  scores = {0, 0, 0};
  types = {2, 3, 3};  // unknown, control, control
  for (int b = 0; b < 256 && static_cast<int64_t>(tokens.size()) < s.n_vocab; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    scores.push_back(0);
    types.push_back(6);  // byte
  }
  // Pieces: "\u2581a".."\u2581z", "a".."z", then two-letter pieces, until the vocab is full.
  const std::string space = "\xe2\x96\x81";
  std::vector<std::string> pieces;
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back(space + c);
  for (char c = 'a'; c <= 'z'; ++c) pieces.push_back(std::string(1, c));
  pieces.push_back(space);
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b) pieces.push_back(std::string(1, a) + b);
  size_t next = 0;
  while (static_cast<int64_t>(tokens.size()) < s.n_vocab) {
    std::string piece = next < pieces.size() ? pieces[next]
                                             : "<extra_" + std::to_string(next) + ">";
    tokens.push_back(piece);
    scores.push_back(-static_cast<float>(next));
    types.push_back(1);  // normal
    ++next;
  }
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  w.Set("tokenizer.ggml.scores", GgufValue::F32Array(scores));
  w.Set("tokenizer.ggml.token_type", GgufValue::I32Array(types));
  w.Set("tokenizer.ggml.bos_token_id", GgufValue::U32(1));
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::U32(2));
  w.Set("tokenizer.ggml.unknown_token_id", GgufValue::U32(0));
}

}  // namespace

StatusOr<ModelSpec> ModelPreset(const std::string& name) {
  ModelSpec s;
  if (name == "tiny") return s;
  return InvalidArgumentError("unknown model preset '" + name + "' (known: tiny)");
}

Status MakeModel(const ModelSpec& s, const std::string& path) {
  if (s.arch != "llama") return UnimplementedError("make-model: architecture '" + s.arch + "'");
  if (s.n_head <= 0 || s.n_embd % s.n_head != 0 || s.n_head_kv <= 0 ||
      s.n_head % s.n_head_kv != 0 || s.n_vocab < 3 || s.n_layer <= 0 || s.n_ff <= 0) {
    return InvalidArgumentError("make-model: inconsistent shape (n_embd=" +
                                std::to_string(s.n_embd) + ", n_head=" + std::to_string(s.n_head) +
                                ", n_head_kv=" + std::to_string(s.n_head_kv) + ")");
  }
  if (s.weight_type != GgmlType::kF32) {
    return UnimplementedError("make-model: weight type " + std::string(TypeName(s.weight_type)));
  }
  GgufWriter w;
  const std::string a = s.arch + ".";
  w.Set("general.architecture", GgufValue::String(s.arch));
  w.Set("general.name", GgufValue::String(s.name));
  w.Set("general.file_type", GgufValue::U32(0));
  w.Set(a + "context_length", GgufValue::U32(static_cast<uint32_t>(s.n_ctx)));
  w.Set(a + "embedding_length", GgufValue::U32(static_cast<uint32_t>(s.n_embd)));
  w.Set(a + "block_count", GgufValue::U32(static_cast<uint32_t>(s.n_layer)));
  w.Set(a + "feed_forward_length", GgufValue::U32(static_cast<uint32_t>(s.n_ff)));
  w.Set(a + "attention.head_count", GgufValue::U32(static_cast<uint32_t>(s.n_head)));
  w.Set(a + "attention.head_count_kv", GgufValue::U32(static_cast<uint32_t>(s.n_head_kv)));
  w.Set(a + "rope.dimension_count", GgufValue::U32(static_cast<uint32_t>(s.n_embd / s.n_head)));
  w.Set(a + "rope.freq_base", GgufValue::F32(s.rope_theta));
  w.Set(a + "attention.layer_norm_rms_epsilon", GgufValue::F32(s.rms_eps));
  w.Set(a + "vocab_size", GgufValue::U32(static_cast<uint32_t>(s.n_vocab)));
  SetVocab(s, w);

  std::vector<TensorPlan> plan = PlanTensors(s);
  for (const TensorPlan& t : plan) RETURN_IF_ERROR(w.AddTensor(t.name, GgmlType::kF32, t.dims));
  RETURN_IF_ERROR(w.Begin(path));
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values;
  for (size_t i = 0; i < plan.size(); ++i) {
    const TensorPlan& t = plan[i];
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    values.resize(n);
    float scale = t.is_norm ? 0.1f : 1.0f / std::sqrt(static_cast<float>(t.dims[0]));
    for (float& v : values) v = (t.is_norm ? 1.0f : 0.0f) + scale * normal(rng);
    RETURN_IF_ERROR(w.WriteTensorData(
        i, {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(float)}));
  }
  return w.Finish();
}

}  // namespace forge
