// Tensor names and shapes of the llama, qwen2, qwen3, gemma2, gemma3, their mixture-of-experts
// forms, bert and nomic-bert architectures as llama.cpp names them.
#include "modelgen/tensor_plan.h"

#include <functional>

#include "modelgen/quant_recipe.h"

namespace forge {
namespace {

using AddTensor = std::function<void(std::string, std::vector<int64_t>, TensorRole, int)>;

// llama's layout and its variants.
void PlanDecoder(const ModelSpec& s, const AddTensor& add) {
  const int64_t head_dim = HeadDim(s);
  const int64_t q_dim = head_dim * s.n_head, kv_dim = head_dim * s.n_head_kv;
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {s.n_embd}, TensorRole::kNorm, l);
    add(p + "attn_q.weight", {s.n_embd, q_dim}, TensorRole::kAttnQ, l);
    if (s.qkv_bias) add(p + "attn_q.bias", {q_dim}, TensorRole::kBias, l);
    add(p + "attn_k.weight", {s.n_embd, kv_dim}, TensorRole::kAttnK, l);
    if (s.qkv_bias) add(p + "attn_k.bias", {kv_dim}, TensorRole::kBias, l);
    add(p + "attn_v.weight", {s.n_embd, kv_dim}, TensorRole::kAttnV, l);
    if (s.qkv_bias) add(p + "attn_v.bias", {kv_dim}, TensorRole::kBias, l);
    if (s.arch == "qwen3" || s.arch == "gemma3" || s.arch == "qwen3moe") {  // q/k RMSNorm
      add(p + "attn_q_norm.weight", {head_dim}, TensorRole::kNorm, l);
      add(p + "attn_k_norm.weight", {head_dim}, TensorRole::kNorm, l);
    }
    add(p + "attn_output.weight", {q_dim, s.n_embd}, TensorRole::kAttnOut, l);
    add(p + "ffn_norm.weight", {s.n_embd}, TensorRole::kNorm, l);
    if (s.n_expert > 0) {  // the router and the experts stacked, as llama.cpp stores them
      const int64_t E = s.n_expert, F = s.n_ff_exp;
      add(p + "ffn_gate_inp.weight", {s.n_embd, E}, TensorRole::kRouter, l);
      add(p + "ffn_gate_exps.weight", {s.n_embd, F, E}, TensorRole::kFfnGate, l);
      add(p + "ffn_up_exps.weight", {s.n_embd, F, E}, TensorRole::kFfnUp, l);
      add(p + "ffn_down_exps.weight", {F, s.n_embd, E}, TensorRole::kFfnDown, l);
      if (s.n_ff_shexp > 0) {
        add(p + "ffn_gate_inp_shexp.weight", {s.n_embd}, TensorRole::kRouter, l);
        add(p + "ffn_gate_shexp.weight", {s.n_embd, s.n_ff_shexp}, TensorRole::kFfnGate, l);
        add(p + "ffn_up_shexp.weight", {s.n_embd, s.n_ff_shexp}, TensorRole::kFfnUp, l);
        add(p + "ffn_down_shexp.weight", {s.n_ff_shexp, s.n_embd}, TensorRole::kFfnDown, l);
      }
    } else {
      add(p + "ffn_gate.weight", {s.n_embd, s.n_ff}, TensorRole::kFfnGate, l);
      add(p + "ffn_up.weight", {s.n_embd, s.n_ff}, TensorRole::kFfnUp, l);
      add(p + "ffn_down.weight", {s.n_ff, s.n_embd}, TensorRole::kFfnDown, l);
    }
    if (s.arch == "gemma2" || s.arch == "gemma3") {  // RMSNorms of the sublayers' outputs
      add(p + "post_attention_norm.weight", {s.n_embd}, TensorRole::kNorm, l);
      add(p + "post_ffw_norm.weight", {s.n_embd}, TensorRole::kNorm, l);
    }
  }
  add("output_norm.weight", {s.n_embd}, TensorRole::kNorm, -1);
  if (!s.tied_embeddings) add("output.weight", {s.n_embd, s.n_vocab}, TensorRole::kOutput, -1);
}

// BERT's layout (bert: learned positions, two token types, biases everywhere, a GELU FFN;
// nomic-bert: rotary, one qkv matrix, SwiGLU, no biases), LayerNorms with biases.
void PlanEncoder(const ModelSpec& s, const AddTensor& add) {
  const bool bert = s.arch == "bert";
  const int64_t kv_dim = HeadDim(s) * s.n_head_kv;
  const int64_t q_dim = HeadDim(s) * s.n_head;
  if (bert) add("position_embd.weight", {s.n_embd, s.n_ctx}, TensorRole::kPositions, -1);
  add("token_types.weight", {s.n_embd, 2}, TensorRole::kPositions, -1);
  add("token_embd_norm.weight", {s.n_embd}, TensorRole::kNorm, -1);
  add("token_embd_norm.bias", {s.n_embd}, TensorRole::kBias, -1);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    if (bert) {
      add(p + "attn_q.weight", {s.n_embd, q_dim}, TensorRole::kAttnQ, l);
      add(p + "attn_q.bias", {q_dim}, TensorRole::kBias, l);
      add(p + "attn_k.weight", {s.n_embd, kv_dim}, TensorRole::kAttnK, l);
      add(p + "attn_k.bias", {kv_dim}, TensorRole::kBias, l);
      add(p + "attn_v.weight", {s.n_embd, kv_dim}, TensorRole::kAttnV, l);
      add(p + "attn_v.bias", {kv_dim}, TensorRole::kBias, l);
    } else {
      add(p + "attn_qkv.weight", {s.n_embd, q_dim + 2 * kv_dim}, TensorRole::kAttnQ, l);
    }
    add(p + "attn_output.weight", {q_dim, s.n_embd}, TensorRole::kAttnOut, l);
    if (bert) add(p + "attn_output.bias", {s.n_embd}, TensorRole::kBias, l);
    add(p + "attn_output_norm.weight", {s.n_embd}, TensorRole::kNorm, l);
    add(p + "attn_output_norm.bias", {s.n_embd}, TensorRole::kBias, l);
    if (!bert) add(p + "ffn_gate.weight", {s.n_embd, s.n_ff}, TensorRole::kFfnGate, l);
    add(p + "ffn_up.weight", {s.n_embd, s.n_ff}, TensorRole::kFfnUp, l);
    if (bert) add(p + "ffn_up.bias", {s.n_ff}, TensorRole::kBias, l);
    add(p + "ffn_down.weight", {s.n_ff, s.n_embd}, TensorRole::kFfnDown, l);
    if (bert) add(p + "ffn_down.bias", {s.n_embd}, TensorRole::kBias, l);
    add(p + "layer_output_norm.weight", {s.n_embd}, TensorRole::kNorm, l);
    add(p + "layer_output_norm.bias", {s.n_embd}, TensorRole::kBias, l);
  }
}

}  // namespace

StatusOr<ModelPlan> PlanModel(const ModelSpec& s) {
  RETURN_IF_ERROR(ValidateSpec(s));
  ModelPlan plan;
  auto add = [&](std::string name, std::vector<int64_t> dims, TensorRole role, int layer) {
    TensorPlan t;
    t.name = std::move(name);
    t.dims = std::move(dims);
    t.role = role;
    t.layer = layer;
    t.n_elements = 1;
    for (int64_t d : t.dims) t.n_elements *= d;
    plan.tensors.push_back(std::move(t));
  };
  add("token_embd.weight", {s.n_embd, s.n_vocab}, TensorRole::kTokenEmbd, -1);
  if (s.arch == "bert" || s.arch == "nomic-bert") {
    PlanEncoder(s, add);
  } else {
    PlanDecoder(s, add);
  }
  for (TensorPlan& t : plan.tensors) {
    t.type = ChooseTensorType(s, t, &t.fallback);
    ASSIGN_OR_RETURN(int64_t row_bytes, RowBytes(t.type, t.dims[0]));
    t.n_bytes = row_bytes * t.rows();
    plan.n_params += t.n_elements;
    plan.n_bytes += t.n_bytes;
    plan.n_fallback += t.fallback ? 1 : 0;
  }
  return plan;
}

}  // namespace forge
