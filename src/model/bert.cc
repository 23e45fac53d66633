// BertForward: the post-norm encoder layer over Backend ops.
#include "model/bert.h"

#include "model/blocks.h"

namespace forge {
namespace {

// x = LayerNorm(x + delta) (delta null: no add; add_row: added to every row too), written to x
// (the residual, F32) and xn (the next matmuls' input, in the step's dtype).
Status PostNorm(const StepContext& s, const float* delta, const float* add_row, const float* weight,
                const float* bias) {
  return s.backend.LayerNorm({.x = s.ws.x,
                              .delta = delta,
                              .add_row = add_row,
                              .weight = weight,
                              .bias = bias,
                              .out = s.ws.x,
                              .out_cast = s.ws.xn,
                              .cast_type = s.dtype,
                              .n_rows = s.meta.n_tokens,
                              .dim = s.config.n_embd,
                              .eps = s.config.rms_eps});
}

}  // namespace

Status ConfigureBert(const GgufFile& file, ModelConfig& config) {
  if (file.FindTensor("position_embd.weight") != nullptr) config.rope_dims = 0;
  return Status::Ok();
}

Status BertForward(const StepContext& s) {
  const ModelConfig& c = s.config;
  const ModelWeights& w = s.weights;
  if (s.n_ranks > 1) return UnimplementedError(c.arch + " runs on one device");
  RETURN_IF_ERROR(EmbedTokens(s));
  const float* positions = nullptr;
  if (w.position_embd.data != nullptr) {  // learned positions: their rows into delta
    RETURN_IF_ERROR(s.backend.Embedding({.table = w.position_embd,
                                         .ids = s.meta.pos,
                                         .n_tokens = s.meta.n_tokens,
                                         .out = s.ws.delta}));
    positions = s.ws.delta;
  }
  RETURN_IF_ERROR(PostNorm(s, positions, w.token_type0.data, w.embd_norm.data, w.embd_norm_b.data));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& lw = w.layers[l];
    RETURN_IF_ERROR(AttentionBlock(s, l, nullptr));
    RETURN_IF_ERROR(
        PostNorm(s, s.ws.delta, nullptr, lw.attn_out_norm.data, lw.attn_out_norm_b.data));
    RETURN_IF_ERROR(FfnBlock(s, l));
    RETURN_IF_ERROR(PostNorm(s, s.ws.delta, nullptr, lw.out_norm.data, lw.out_norm_b.data));
  }
  return PoolHidden(s, s.ws.x);
}

}  // namespace forge
