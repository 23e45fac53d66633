// LlamaForward: the llama layer over Backend ops, on one rank.
#include "model/llama.h"

#include <string>

#include "model/blocks.h"

namespace forge {

Status CheckLlamaConfig(const ModelConfig& c) {
  for (int64_t l = 0; l < c.n_layer; ++l) {
    if (c.layers[l].sliding_window != 0) {
      return UnimplementedError(c.arch + ".attention.sliding_window: layer " + std::to_string(l) +
                                " attends over a sliding window of " +
                                std::to_string(c.layers[l].sliding_window) + " keys; Forge's " +
                                c.arch + " layer attends over every key");
    }
  }
  return Status::Ok();
}

Status LlamaForward(const StepContext& s) {
  const ModelConfig& c = s.config;  // the shard's head counts, n_ff and vocabulary rows
  RETURN_IF_ERROR(EmbedTokens(s));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& w = s.weights.layers[l];
    RETURN_IF_ERROR(NormInput(s, w.attn_norm.data, l == 0, {&w.wqkv, &w.wqk, &w.wq, &w.wk, &w.wv}));
    // Layers after the first: xn_q holds xn's one-row form where NormInput wrote it.
    RETURN_IF_ERROR(AttentionBlock(s, l, l > 0 ? &s.ws.xn_q : nullptr));
    RETURN_IF_ERROR(NormInput(s, w.ffn_norm.data, false, {&w.w_gate_up, &w.w_gate, &w.w_up}));
    RETURN_IF_ERROR(FfnBlock(s, l));
  }
  return OutputLogits(s);
}

}  // namespace forge
