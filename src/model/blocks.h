// Blocks: the pieces of a decoder forward that the architectures (architecture.h) compose, each a
// few Backend ops over one step on one rank (step_context.h): the embedding lookup, the norm that
// opens a sublayer, the attention sublayer, the gated FFN and the logits. Every block reads its
// hyperparameters from the step's config and layer config, so an architecture's forward is the
// order of its blocks and the ops between them.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "model/step_context.h"

namespace forge {

// Whether the backend's matmul of `w` takes its activation row in the form `form` holds (one-token
// steps only; Backend::QuantizedActivationBytes).
bool TakesForm(const StepContext& s, const WeightView& w, const ActivationForm& form);
bool AnyTakesForm(const StepContext& s, std::initializer_list<const WeightView*> views,
                  const ActivationForm& form);

// out = in · wᵀ (+ bias) for the step's rows, in F32 (products feeding an elementwise op or the
// residual stay F32); q: in's one-row form where the op before wrote it (TakesForm), or null.
Status StepMatmul(const StepContext& s, const void* in, const WeightView& w, const float* bias,
                  void* out, const ActivationForm* q = nullptr);

// Tensor parallelism: delta's partial sums over the rank's heads / features, all-reduced.
Status ReduceDelta(const StepContext& s);

// x = the tokens' embeddings (times config.embd_scale); all-reduced under tensor parallelism.
Status EmbedTokens(const StepContext& s);

// Opens a sublayer: xn = RmsNorm(x) by `weight` on the first layer's attention, else x += delta
// then xn = RmsNorm(x) (the previous sublayer's output joins the residual here). Where the
// matmuls of `next` take xn's one-row form, it is written into ws.xn_q too.
Status NormInput(const StepContext& s, const float* weight, bool first,
                 std::initializer_list<const WeightView*> next);

// delta = RmsNorm(delta) by `weight`, in place (Gemma's post-norms).
Status NormOutput(const StepContext& s, const float* weight);

// The attention sublayer of layer l: q/k/v from xn (biases, q/k norm), RoPE and the KV cache
// write, paged attention (the config's scale and soft-cap, the layer's window), and the output
// projection into delta, all-reduced under tensor parallelism. xn_q: xn's one-row form where
// NormInput wrote it (null on the first layer).
Status AttentionBlock(const StepContext& s, int64_t l, const ActivationForm* xn_q);

// The gated FFN of layer l: gate and up from xn, act(gate) * up (config.ffn_act), the down
// projection into delta, all-reduced under tensor parallelism; in a model with experts, the
// mixture-of-experts block (moe.h).
Status FfnBlock(const StepContext& s, int64_t l);

// The final norm (after delta joins the residual), the rows whose logits are wanted, and the LM
// head (soft-capped at config.final_softcap when set); a no-op for steps that want no logits. In
// a model that pools (config.pooling), the normed states pooled instead (PoolHidden).
Status OutputLogits(const StepContext& s);

// A model that pools: one L2-normalized vector per sequence of the step from `hidden` [n_tokens,
// n_embd] F32, into ws.logits [n_seqs, n_embd]; the step's output rows must be its sequences.
Status PoolHidden(const StepContext& s, const float* hidden);

}  // namespace forge
