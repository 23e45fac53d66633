// LlamaForward: the llama layer over Backend ops, on one rank.
#include "model/llama.h"

#include <cmath>
#include <initializer_list>
#include <string>

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
  const ModelWeights& weights = s.weights;
  const StepMeta& m = s.meta;
  const StepWorkspace& ws = s.ws;
  Backend& be = s.backend;
  const DType a = s.dtype;
  const int64_t T = m.n_tokens;
  const bool parallel = s.n_ranks > 1;
  float* x = ws.x;
  void* xn = ws.xn;
  void* attn = ws.attn;
  void* act = ws.act;
  // Products that feed an elementwise op or the residual stay F32 (q/k/v, gate/up, the o and
  // down outputs): each rounding to a half type costs accuracy, and these buffers are small next
  // to the weights. Only GEMM inputs (xn, attn, act) and the KV cache are in the dtype.
  float* delta = ws.delta;
  // One-token steps: where the backend's matmul of a weight reads its activation row in a form
  // of its own (Backend::QuantizedActivationBytes), the op that writes xn or act writes that form
  // too (once, instead of in every matmul that reads the row), and those matmuls take it.
  auto takes_q = [&](const WeightView& w, const ActivationForm& form) {
    if (T != 1 || form.data == nullptr || w.data == nullptr) return false;
    const int64_t need = be.QuantizedActivationBytes(w, 1, a, DType::kF32);
    return need > 0 && need <= form.bytes;
  };
  auto any_takes_q = [&](std::initializer_list<const WeightView*> views,
                         const ActivationForm& form) {
    for (const WeightView* w : views) {
      if (takes_q(*w, form)) return true;
    }
    return false;
  };
  auto matmul = [&](const void* in, const WeightView& w, const float* bias, void* out,
                    DType out_type, const ActivationForm* q = nullptr) {
    MatmulParams p{
        .x = in, .w = w, .bias = bias, .out = out, .m = T, .x_type = a, .out_type = out_type};
    if (q != nullptr && takes_q(w, *q)) p.xq = q->data;
    return be.Matmul(p);
  };
  // The residual stream x += delta, normed by `weight` into xn.
  auto add_norm = [&](const float* weight) {
    return AddRmsNormParams{.residual = x,
                            .delta = delta,
                            .weight = weight,
                            .out = xn,
                            .n_rows = T,
                            .dim = c.n_embd,
                            .eps = c.rms_eps,
                            .delta_type = DType::kF32,
                            .out_type = a};
  };
  // Per-head RMSNorm of n_heads heads per token, in place (q/k norm).
  auto head_norm = [&](float* t, const VectorView& weight, int64_t n_heads) {
    return be.RmsNorm({.x = t,
                       .weight = weight.data,
                       .out = t,
                       .n_rows = T * n_heads,
                       .dim = c.head_dim,
                       .eps = c.rms_eps});
  };

  // Tensor parallelism: each rank holds a slice of the vocabulary, looks up the ids in it (zeros
  // for the others) and the all-reduce sums the slices; likewise for the row-parallel matmuls
  // (o and down), whose partial sums over the rank's heads / features meet in `delta`.
  RETURN_IF_ERROR(be.Embedding({.table = weights.token_embd,
                                .ids = m.ids,
                                .n_tokens = T,
                                .out = x,
                                .row_offset = s.vocab_begin,
                                .n_vocab = s.n_vocab}));
  if (parallel) RETURN_IF_ERROR(s.collective->AllReduceSum(s.rank, x, T * c.n_embd));
  const float* freq_factors = weights.rope_freqs.data;
  const int64_t num_slots = s.kv.num_blocks * s.kv.block_size;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const LayerWeights& w = weights.layers[l];
    const LayerConfig& lc = c.layers[l];
    const int64_t q_dim = lc.n_head * c.head_dim, kv_dim = lc.n_head_kv * c.head_dim;
    const int64_t qkv_dim = q_dim + 2 * kv_dim;
    if (l == 0) {
      RETURN_IF_ERROR(be.RmsNorm({.x = x,
                                  .weight = w.attn_norm.data,
                                  .out = xn,
                                  .n_rows = T,
                                  .dim = c.n_embd,
                                  .eps = c.rms_eps,
                                  .x_type = DType::kF32,
                                  .out_type = a}));
    } else {  // the previous layer's FFN output joins the residual here
      AddRmsNormParams an = add_norm(w.attn_norm.data);
      if (any_takes_q({&w.wqkv, &w.wqk, &w.wq, &w.wk, &w.wv}, ws.xn_q)) an.out_q = ws.xn_q.data;
      RETURN_IF_ERROR(be.AddRmsNorm(an));
    }
    // Layers after the first: xn_q holds this xn's form where the AddRmsNorm above wrote it (the
    // matmuls below take it under the same condition, takes_q).
    const ActivationForm* xn_q = l > 0 ? &ws.xn_q : nullptr;
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
      RETURN_IF_ERROR(matmul(xn, w.wqkv, w.bqkv.data, q, DType::kF32, xn_q));
    } else if (fused_qk) {
      RETURN_IF_ERROR(matmul(xn, w.wqk, w.bqk.data, q, DType::kF32, xn_q));
      RETURN_IF_ERROR(matmul(xn, w.wv, w.bv.data, v, DType::kF32, xn_q));
    } else {
      RETURN_IF_ERROR(matmul(xn, w.wq, w.bq.data, q, DType::kF32, xn_q));
      RETURN_IF_ERROR(matmul(xn, w.wk, w.bk.data, k, DType::kF32, xn_q));
      RETURN_IF_ERROR(matmul(xn, w.wv, w.bv.data, v, DType::kF32, xn_q));
    }
    if (c.qk_norm) {
      RETURN_IF_ERROR(head_norm(q, w.q_norm, lc.n_head));
      RETURN_IF_ERROR(head_norm(k, w.k_norm, lc.n_head_kv));
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
                            .freq_scale = c.rope_freq_scale,
                            .freq_factors = freq_factors,
                            .style = c.rope_style};
    RopeParams rope_k = rope_q;
    rope_k.x = k;
    rope_k.n_heads = lc.n_head_kv;
    rope_k.token_stride = k_stride;
    RETURN_IF_ERROR(be.RopeKvWrite({.q = rope_q,
                                    .k = rope_k,
                                    .kv = {.k = k,
                                           .v = v,
                                           .k_stride = k_stride,
                                           .v_stride = v_stride,
                                           .slot_mapping = m.slots,
                                           .n_tokens = T,
                                           .n_kv_heads = lc.n_head_kv,
                                           .head_dim = c.head_dim,
                                           .num_slots = num_slots,
                                           .k_cache = k_cache,
                                           .v_cache = v_cache,
                                           .dtype = a,
                                           .src_type = DType::kF32}}));
    AttentionParams ap{.q = q,
                       .q_stride = q_stride,
                       .k_cache = k_cache,
                       .v_cache = v_cache,
                       .out = attn,
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
                       .scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim)),
                       .dtype = a,
                       .q_type = DType::kF32};
    if (takes_q(w.wo, ws.attn_q)) ap.out_q = ws.attn_q.data;
    RETURN_IF_ERROR(be.Attention(ap));
    RETURN_IF_ERROR(matmul(attn, w.wo, nullptr, delta, DType::kF32, &ws.attn_q));
    if (parallel) RETURN_IF_ERROR(s.collective->AllReduceSum(s.rank, delta, T * c.n_embd));
    AddRmsNormParams fn = add_norm(w.ffn_norm.data);
    if (any_takes_q({&w.w_gate_up, &w.w_gate, &w.w_up}, ws.xn_q)) fn.out_q = ws.xn_q.data;
    RETURN_IF_ERROR(be.AddRmsNorm(fn));
    // Stacked: one matmul, rows [T, gate | up]; else [T, gate] then [T, up].
    float* gate = ws.ff;
    const bool stacked = w.w_gate_up.data != nullptr;
    float* up = stacked ? gate + lc.n_ff : gate + T * lc.n_ff;
    const int64_t ff_stride = stacked ? 2 * lc.n_ff : 0;
    SwigluParams sw{.gate = gate,
                    .up = up,
                    .out = act,
                    .n_tokens = T,
                    .dim = lc.n_ff,
                    .gate_stride = ff_stride,
                    .up_stride = ff_stride,
                    .in_type = DType::kF32,
                    .out_type = a};
    if (takes_q(w.w_down, ws.act_q)) sw.out_q = ws.act_q.data;
    if (stacked) {
      RETURN_IF_ERROR(matmul(xn, w.w_gate_up, nullptr, gate, DType::kF32, &ws.xn_q));
    } else {
      RETURN_IF_ERROR(matmul(xn, w.w_gate, nullptr, gate, DType::kF32, &ws.xn_q));
      RETURN_IF_ERROR(matmul(xn, w.w_up, nullptr, up, DType::kF32, &ws.xn_q));
    }
    RETURN_IF_ERROR(be.Swiglu(sw));
    RETURN_IF_ERROR(matmul(act, w.w_down, nullptr, delta, DType::kF32, &ws.act_q));
    if (parallel) RETURN_IF_ERROR(s.collective->AllReduceSum(s.rank, delta, T * c.n_embd));
  }
  if (m.n_out == 0) return Status::Ok();
  RETURN_IF_ERROR(be.AddRmsNorm(add_norm(weights.output_norm.data)));
  void* rows = ws.out_rows;
  RETURN_IF_ERROR(be.GatherRows({.src = xn,
                                 .indices = m.out_idx,
                                 .n = m.n_out,
                                 .row_len = c.n_embd,
                                 .dst = rows,
                                 .dtype = a}));
  // Tensor parallelism: the rank's vocabulary rows into [n_out, vocab_pad] (the runner gathers
  // every rank's).
  return be.Matmul({.x = rows,
                    .w = weights.output,
                    .out = parallel ? ws.logits_part : ws.logits,
                    .out_stride = parallel ? s.vocab_pad : 0,
                    .m = m.n_out,
                    .x_type = a,
                    .out_type = DType::kF32});
}

}  // namespace forge
