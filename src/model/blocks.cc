// The blocks of blocks.h over Backend ops.
#include "model/blocks.h"

#include "model/moe.h"

namespace forge {
namespace {

AddRmsNormParams AddNorm(const StepContext& s, const float* weight) {
  return AddRmsNormParams{.residual = s.ws.x,
                          .delta = s.ws.delta,
                          .weight = weight,
                          .out = s.ws.xn,
                          .n_rows = s.meta.n_tokens,
                          .dim = s.config.n_embd,
                          .eps = s.config.rms_eps,
                          .delta_type = DType::kF32,
                          .out_type = s.dtype};
}

// Per-head RMSNorm of n_heads heads per token, in place (q/k norm).
Status HeadNorm(const StepContext& s, float* t, const VectorView& weight, int64_t n_heads) {
  return s.backend.RmsNorm({.x = t,
                            .weight = weight.data,
                            .out = t,
                            .n_rows = s.meta.n_tokens * n_heads,
                            .dim = s.config.head_dim,
                            .eps = s.config.rms_eps});
}

}  // namespace

// Products that feed an elementwise op or the residual stay F32 (q/k/v, gate/up, the o and down
// outputs): each rounding to a half type costs accuracy, and these buffers are small next to the
// weights. Only GEMM inputs (xn, attn, act) and the KV cache are in the step's dtype.
Status StepMatmul(const StepContext& s, const void* in, const WeightView& w, const float* bias,
                  void* out, const ActivationForm* q) {
  MatmulParams p{.x = in,
                 .w = w,
                 .bias = bias,
                 .out = out,
                 .m = s.meta.n_tokens,
                 .x_type = s.dtype,
                 .out_type = DType::kF32};
  if (q != nullptr && TakesForm(s, w, *q)) p.xq = q->data;
  return s.backend.Matmul(p);
}

// Tensor parallelism: the row-parallel matmuls' (o and down) partial sums over the rank's heads /
// features meet in delta.
Status ReduceDelta(const StepContext& s) {
  if (s.n_ranks <= 1) return Status::Ok();
  return s.collective->AllReduceSum(s.rank, s.ws.delta, s.meta.n_tokens * s.config.n_embd);
}

// One-token steps: where the backend's matmul of a weight reads its activation row in a form of
// its own, the op that writes xn or act writes that form too (once, instead of in every matmul
// that reads the row), and those matmuls take it.
bool TakesForm(const StepContext& s, const WeightView& w, const ActivationForm& form) {
  if (s.meta.n_tokens != 1 || form.data == nullptr || w.data == nullptr) return false;
  const int64_t need = s.backend.QuantizedActivationBytes(w, 1, s.dtype, DType::kF32);
  return need > 0 && need <= form.bytes;
}

bool AnyTakesForm(const StepContext& s, std::initializer_list<const WeightView*> views,
                  const ActivationForm& form) {
  for (const WeightView* w : views) {
    if (TakesForm(s, *w, form)) return true;
  }
  return false;
}

// Tensor parallelism: each rank holds a slice of the vocabulary, looks up the ids in it (zeros for
// the others) and the all-reduce sums the slices.
Status EmbedTokens(const StepContext& s) {
  RETURN_IF_ERROR(s.backend.Embedding({.table = s.weights.token_embd,
                                       .ids = s.meta.ids,
                                       .n_tokens = s.meta.n_tokens,
                                       .out = s.ws.x,
                                       .row_offset = s.vocab_begin,
                                       .n_vocab = s.n_vocab,
                                       .scale = s.config.embd_scale}));
  if (s.n_ranks <= 1) return Status::Ok();
  return s.collective->AllReduceSum(s.rank, s.ws.x, s.meta.n_tokens * s.config.n_embd);
}

Status NormInput(const StepContext& s, const float* weight, bool first,
                 std::initializer_list<const WeightView*> next) {
  if (first) {
    return s.backend.RmsNorm({.x = s.ws.x,
                              .weight = weight,
                              .out = s.ws.xn,
                              .n_rows = s.meta.n_tokens,
                              .dim = s.config.n_embd,
                              .eps = s.config.rms_eps,
                              .x_type = DType::kF32,
                              .out_type = s.dtype});
  }
  AddRmsNormParams p = AddNorm(s, weight);
  if (AnyTakesForm(s, next, s.ws.xn_q)) p.out_q = s.ws.xn_q.data;
  return s.backend.AddRmsNorm(p);
}

Status NormOutput(const StepContext& s, const float* weight) {
  return s.backend.RmsNorm({.x = s.ws.delta,
                            .weight = weight,
                            .out = s.ws.delta,
                            .n_rows = s.meta.n_tokens,
                            .dim = s.config.n_embd,
                            .eps = s.config.rms_eps});
}

Status AttentionBlock(const StepContext& s, int64_t l, const ActivationForm* xn_q) {
  const ModelConfig& c = s.config;
  const LayerWeights& w = s.weights.layers[l];
  const LayerConfig& lc = c.layers[l];
  const StepMeta& m = s.meta;
  const StepWorkspace& ws = s.ws;
  const int64_t T = m.n_tokens;
  const int64_t q_dim = lc.n_head * c.head_dim, kv_dim = lc.n_head_kv * c.head_dim;
  const int64_t qkv_dim = q_dim + 2 * kv_dim;
  // q, k and v stay F32 through bias, q/k norm and RoPE: K and V are rounded once, into the
  // cache, and q not at all. Stacked weights: one matmul, rows [T, q | k | v]; q/k stacked (v in
  // another format): rows [T, q | k] then [T, v]; else three matmuls into [T, q], [T, k], [T, v].
  const bool fused_qkv = w.wqkv.data != nullptr;
  const bool fused_qk = !fused_qkv && w.wqk.data != nullptr;
  float* q = ws.qkv;
  const int64_t q_stride = fused_qkv ? qkv_dim : (fused_qk ? q_dim + kv_dim : q_dim);
  const int64_t k_stride = fused_qkv || fused_qk ? q_stride : kv_dim;
  const int64_t v_stride = fused_qkv ? qkv_dim : kv_dim;
  float* k = fused_qkv || fused_qk ? q + q_dim : q + T * q_dim;
  float* v = fused_qkv ? k + kv_dim : (fused_qk ? q + T * q_stride : k + T * kv_dim);
  if (fused_qkv) {
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.wqkv, w.bqkv.data, q, xn_q));
  } else if (fused_qk) {
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.wqk, w.bqk.data, q, xn_q));
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.wv, w.bv.data, v, xn_q));
  } else {
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.wq, w.bq.data, q, xn_q));
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.wk, w.bk.data, k, xn_q));
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.wv, w.bv.data, v, xn_q));
  }
  if (c.qk_norm) {
    RETURN_IF_ERROR(HeadNorm(s, q, w.q_norm, lc.n_head));
    RETURN_IF_ERROR(HeadNorm(s, k, w.k_norm, lc.n_head_kv));
  }
  void* k_cache = s.kv.k[l];
  void* v_cache = s.kv.v[l];
  const RopeParams rope_q{.x = q,
                          .positions = m.pos,
                          .n_tokens = T,
                          .n_heads = lc.n_head,
                          .head_dim = c.head_dim,
                          .token_stride = q_stride,
                          .rope_dims = c.rope_dims,
                          .theta = lc.rope_theta,
                          .freq_scale = lc.rope_freq_scale,
                          .freq_factors = s.weights.rope_freqs.data,
                          .style = c.rope_style};
  RopeParams rope_k = rope_q;
  rope_k.x = k;
  rope_k.n_heads = lc.n_head_kv;
  rope_k.token_stride = k_stride;
  const KvWriteParams kv_write{.k = k,
                               .v = v,
                               .k_stride = k_stride,
                               .v_stride = v_stride,
                               .slot_mapping = m.slots,
                               .n_tokens = T,
                               .n_kv_heads = lc.n_head_kv,
                               .head_dim = c.head_dim,
                               .num_slots = s.kv.num_blocks * s.kv.block_size,
                               .k_cache = k_cache,
                               .v_cache = v_cache,
                               .dtype = s.dtype,
                               .src_type = DType::kF32};
  if (c.rope_dims == 0) {  // learned positions (BERT): nothing to rotate
    RETURN_IF_ERROR(s.backend.KvWrite(kv_write));
  } else {
    RETURN_IF_ERROR(s.backend.RopeKvWrite({.q = rope_q, .k = rope_k, .kv = kv_write}));
  }
  AttentionParams ap{.q = q,
                     .q_stride = q_stride,
                     .k_cache = k_cache,
                     .v_cache = v_cache,
                     .out = ws.attn,
                     .cu_seqlens_q = m.cu_seqlens,
                     .seq_lens_k = m.lens,
                     .block_tables = m.tables,
                     .block_table_stride = m.table_stride,
                     .n_seqs = m.n_seqs,
                     .n_tokens = T,
                     .n_single = m.n_single,
                     .n_heads = lc.n_head,
                     .n_kv_heads = lc.n_head_kv,
                     .head_dim = c.head_dim,
                     .block_size = s.kv.block_size,
                     .num_blocks = s.kv.num_blocks,
                     .scale = c.AttentionScale(),
                     .softcap = c.attn_softcap,
                     .window = lc.sliding_window,
                     .dtype = s.dtype,
                     .q_type = DType::kF32};
  ap.causal = c.causal;
  if (TakesForm(s, w.wo, ws.attn_q)) ap.out_q = ws.attn_q.data;
  RETURN_IF_ERROR(s.backend.Attention(ap));
  RETURN_IF_ERROR(StepMatmul(s, ws.attn, w.wo, w.bo.data, ws.delta, &ws.attn_q));
  return ReduceDelta(s);
}

Status FfnBlock(const StepContext& s, int64_t l) {
  if (s.config.n_expert > 0) return MoeBlock(s, l);
  const LayerWeights& w = s.weights.layers[l];
  const int64_t n_ff = s.config.layers[l].n_ff;
  const StepWorkspace& ws = s.ws;
  const int64_t T = s.meta.n_tokens;
  // Stacked: one matmul, rows [T, gate | up]; else [T, gate] then [T, up]. Ungated (BERT):
  // act(up) alone.
  float* gate = ws.ff;
  const bool stacked = w.w_gate_up.data != nullptr;
  if (!stacked && w.w_gate.data == nullptr) {
    SwigluParams act{.gate = gate,
                     .up = nullptr,
                     .out = ws.act,
                     .n_tokens = T,
                     .dim = n_ff,
                     .in_type = DType::kF32,
                     .out_type = s.dtype,
                     .act = s.config.ffn_act};
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.w_up, w.b_up.data, gate, &ws.xn_q));
    RETURN_IF_ERROR(s.backend.Swiglu(act));
    RETURN_IF_ERROR(StepMatmul(s, ws.act, w.w_down, w.b_down.data, ws.delta));
    return ReduceDelta(s);
  }
  float* up = stacked ? gate + n_ff : gate + T * n_ff;
  const int64_t ff_stride = stacked ? 2 * n_ff : 0;
  SwigluParams glu{.gate = gate,
                   .up = up,
                   .out = ws.act,
                   .n_tokens = T,
                   .dim = n_ff,
                   .gate_stride = ff_stride,
                   .up_stride = ff_stride,
                   .in_type = DType::kF32,
                   .out_type = s.dtype,
                   .act = s.config.ffn_act};
  if (TakesForm(s, w.w_down, ws.act_q)) glu.out_q = ws.act_q.data;
  if (stacked) {
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.w_gate_up, nullptr, gate, &ws.xn_q));
  } else {
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.w_gate, nullptr, gate, &ws.xn_q));
    RETURN_IF_ERROR(StepMatmul(s, ws.xn, w.w_up, w.b_up.data, up, &ws.xn_q));
  }
  RETURN_IF_ERROR(s.backend.Swiglu(glu));
  RETURN_IF_ERROR(StepMatmul(s, ws.act, w.w_down, w.b_down.data, ws.delta, &ws.act_q));
  return ReduceDelta(s);
}

Status PoolHidden(const StepContext& s, const float* hidden) {
  const StepMeta& m = s.meta;
  if (m.n_out == 0) return Status::Ok();
  if (s.n_ranks > 1) return UnimplementedError("embedding models run on one device");
  if (m.n_out != m.n_seqs) {
    return InvalidArgumentError(
        "a model that pools gives one vector per sequence: " + std::to_string(m.n_out) +
        " output rows for " + std::to_string(m.n_seqs) + " sequences");
  }
  return s.backend.Pool({.x = hidden,
                         .cu_seqlens = m.cu_seqlens,
                         .out = s.ws.logits,
                         .n_seqs = m.n_seqs,
                         .dim = s.config.n_embd,
                         .type = s.config.pooling,
                         .normalize = true});
}

// Tensor parallelism: the rank's vocabulary rows into [n_out, vocab_pad] (the runner gathers
// every rank's).
Status OutputLogits(const StepContext& s) {
  const StepMeta& m = s.meta;
  if (m.n_out == 0) return Status::Ok();
  if (s.config.pooling != PoolingType::kNone) {  // a decoder that embeds: its normed states
    const int64_t n = m.n_tokens * s.config.n_embd;
    RETURN_IF_ERROR(s.backend.Add({.a = s.ws.x, .b = s.ws.delta, .out = s.ws.x, .n = n}));
    RETURN_IF_ERROR(s.backend.RmsNorm({.x = s.ws.x,
                                       .weight = s.weights.output_norm.data,
                                       .out = s.ws.delta,
                                       .n_rows = m.n_tokens,
                                       .dim = s.config.n_embd,
                                       .eps = s.config.rms_eps}));
    return PoolHidden(s, s.ws.delta);
  }
  RETURN_IF_ERROR(s.backend.AddRmsNorm(AddNorm(s, s.weights.output_norm.data)));
  RETURN_IF_ERROR(s.backend.GatherRows({.src = s.ws.xn,
                                        .indices = m.out_idx,
                                        .n = m.n_out,
                                        .row_len = s.config.n_embd,
                                        .dst = s.ws.out_rows,
                                        .dtype = s.dtype}));
  const bool parallel = s.n_ranks > 1;
  float* logits = parallel ? s.ws.logits_part : s.ws.logits;
  RETURN_IF_ERROR(s.backend.Matmul({.x = s.ws.out_rows,
                                    .w = s.weights.output,
                                    .out = logits,
                                    .out_stride = parallel ? s.vocab_pad : 0,
                                    .m = m.n_out,
                                    .x_type = s.dtype,
                                    .out_type = DType::kF32}));
  if (s.config.final_softcap <= 0) return Status::Ok();
  const int64_t width = parallel ? s.vocab_pad : s.weights.output.rows;
  return s.backend.SoftCap({.x = logits, .n = m.n_out * width, .cap = s.config.final_softcap});
}

}  // namespace forge
