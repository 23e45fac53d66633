// MoeBlock: route, group by expert on the host, per-expert matmuls, gather back, weighted sum.
#include "model/moe.h"

#include <string>
#include <vector>

#include "model/blocks.h"

namespace forge {
namespace {

// The step's routed rows grouped by expert (host side): slot i of the grouped order holds token
// order[i]'s input; slot (t, s) of the output is row back[t * k + s] of the grouped outputs;
// expert e owns the grouped rows [begin[e], begin[e + 1]).
struct Grouping {
  std::vector<int32_t> ids;         // [n_tokens, k] from the device
  std::vector<int32_t> order_back;  // [2, n_tokens * k]: order, then back
  std::vector<int64_t> begin;       // [n_expert + 1]
  std::vector<int64_t> next;        // scratch: each expert's next grouped row
};

Status Group(int64_t n_tokens, int64_t k, int64_t n_expert, Grouping& g) {
  const int64_t n = n_tokens * k;
  g.begin.assign(n_expert + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t e = g.ids[i];
    if (e < 0 || e >= n_expert) {
      return InternalError("the router chose expert " + std::to_string(e) + " of " +
                           std::to_string(n_expert) + " (non-finite router logits?)");
    }
    ++g.begin[e + 1];
  }
  for (int64_t e = 0; e < n_expert; ++e) g.begin[e + 1] += g.begin[e];
  g.order_back.resize(2 * n);
  g.next.assign(g.begin.begin(), g.begin.end() - 1);
  for (int64_t i = 0; i < n; ++i) {  // stable: within an expert, in (token, slot) order
    const int64_t at = g.next[g.ids[i]]++;
    g.order_back[at] = static_cast<int32_t>(i / k);
    g.order_back[n + i] = static_cast<int32_t>(at);
  }
  return Status::Ok();
}

// The F32 matmul of `rows` rows of x (dtype) from grouped row `first` by w into out.
Status RowsMatmul(const StepContext& s, const void* x, int64_t x_cols, const WeightView& w,
                  int64_t first, int64_t rows, float* out) {
  const char* in = static_cast<const char*>(x) + first * x_cols * DTypeSize(s.dtype);
  return s.backend.Matmul({.x = in,
                           .w = w,
                           .out = out + first * w.rows,
                           .m = rows,
                           .x_type = s.dtype,
                           .out_type = DType::kF32});
}

// Lays the buffers out from `base` (null: only counts), each 256-byte aligned; returns the bytes.
int64_t Layout(char* base, const ModelConfig& c, int64_t tokens, DType dtype, MoeWorkspace* w) {
  const int64_t n = tokens * c.n_expert_used, a = static_cast<int64_t>(DTypeSize(dtype));
  int64_t at = 0;
  auto take = [&](int64_t bytes) -> void* {
    void* p = base != nullptr ? base + at : nullptr;
    at += (bytes + 255) / 256 * 256;
    return p;
  };
  w->logits = static_cast<float*>(take(tokens * c.n_expert * 4));
  w->ids = static_cast<int32_t*>(take(n * 4));
  w->weights = static_cast<float*>(take(n * 4));
  w->order = static_cast<int32_t*>(take(2 * n * 4));
  w->x = take(n * c.n_embd * a);
  w->gate = static_cast<float*>(take(2 * n * c.n_ff_exp * 4));
  w->act = take(n * c.n_ff_exp * a);
  w->y = static_cast<float*>(take(n * c.n_embd * 4));
  w->y_slots = static_cast<float*>(take(n * c.n_embd * 4));
  w->shared = static_cast<float*>(take(tokens * c.n_embd * 4));
  w->shared_gate = static_cast<float*>(take(tokens * 4));
  return at;
}

}  // namespace

int64_t MoeWorkspaceBytes(const ModelConfig& c, int64_t tokens, DType dtype) {
  if (c.n_expert == 0) return 0;
  MoeWorkspace w;
  return Layout(nullptr, c, tokens, dtype, &w);
}

MoeWorkspace MoeWorkspaceAt(void* base, const ModelConfig& c, int64_t tokens, DType dtype) {
  MoeWorkspace w;
  if (c.n_expert > 0 && base != nullptr) Layout(static_cast<char*>(base), c, tokens, dtype, &w);
  return w;
}

Status MoeBlock(const StepContext& s, int64_t l) {
  const ModelConfig& c = s.config;
  const LayerWeights& w = s.weights.layers[l];
  const MoeWorkspace& ws = s.ws.moe;
  Backend& be = s.backend;
  const int64_t T = s.meta.n_tokens, E = c.n_expert, K = c.n_expert_used, D = c.n_embd;
  const int64_t F = c.n_ff_exp, n = T * K;
  // The router's logits stay F32: the choice of experts turns on them.
  RETURN_IF_ERROR(StepMatmul(s, s.ws.xn, w.router, nullptr, ws.logits));
  RETURN_IF_ERROR(be.Route({.logits = ws.logits,
                            .ids = ws.ids,
                            .weights = ws.weights,
                            .n_tokens = T,
                            .n_expert = E,
                            .k = K,
                            .gating = c.expert_gating,
                            .normalize = c.expert_weights_norm,
                            .scale = c.expert_weights_scale}));
  thread_local Grouping g;  // one per rank thread
  g.ids.resize(n);
  RETURN_IF_ERROR(be.Download(g.ids.data(), ws.ids, n * sizeof(int32_t)));
  RETURN_IF_ERROR(Group(T, K, E, g));
  RETURN_IF_ERROR(be.Upload(ws.order, g.order_back.data(), 2 * n * sizeof(int32_t)));
  RETURN_IF_ERROR(be.GatherRows(
      {.src = s.ws.xn, .indices = ws.order, .n = n, .row_len = D, .dst = ws.x, .dtype = s.dtype}));
  float* up = ws.gate + n * F;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t first = g.begin[e], rows = g.begin[e + 1] - first;
    if (rows == 0) continue;  // an expert no token chose: its weights are not read
    RETURN_IF_ERROR(RowsMatmul(s, ws.x, D, w.gate_exps[e], first, rows, ws.gate));
    RETURN_IF_ERROR(RowsMatmul(s, ws.x, D, w.up_exps[e], first, rows, up));
  }
  RETURN_IF_ERROR(be.Swiglu({.gate = ws.gate,
                             .up = up,
                             .out = ws.act,
                             .n_tokens = n,
                             .dim = F,
                             .in_type = DType::kF32,
                             .out_type = s.dtype,
                             .act = c.ffn_act}));
  for (int64_t e = 0; e < E; ++e) {
    const int64_t first = g.begin[e], rows = g.begin[e + 1] - first;
    if (rows == 0) continue;
    RETURN_IF_ERROR(RowsMatmul(s, ws.act, F, w.down_exps[e], first, rows, ws.y));
  }
  RETURN_IF_ERROR(be.GatherRows({.src = ws.y,
                                 .indices = ws.order + n,
                                 .n = n,
                                 .row_len = D,
                                 .dst = ws.y_slots,
                                 .dtype = DType::kF32}));
  ExpertSumParams sum{
      .y = ws.y_slots, .weights = ws.weights, .out = s.ws.delta, .n_tokens = T, .k = K, .n = D};
  if (w.shexp_down.data != nullptr) {
    // The shared expert: a dense gated FFN of every token, weighted by the sigmoid of its gate.
    const int64_t Fs = c.n_ff_shexp;
    float* sg = s.ws.ff;
    float* su = s.ws.ff + T * Fs;
    RETURN_IF_ERROR(StepMatmul(s, s.ws.xn, w.shexp_gate, nullptr, sg));
    RETURN_IF_ERROR(StepMatmul(s, s.ws.xn, w.shexp_up, nullptr, su));
    RETURN_IF_ERROR(be.Swiglu({.gate = sg,
                               .up = su,
                               .out = s.ws.act,
                               .n_tokens = T,
                               .dim = Fs,
                               .in_type = DType::kF32,
                               .out_type = s.dtype,
                               .act = c.ffn_act}));
    RETURN_IF_ERROR(StepMatmul(s, s.ws.act, w.shexp_down, nullptr, ws.shared));
    sum.shared = ws.shared;
    if (w.shexp_router.data != nullptr) {
      RETURN_IF_ERROR(StepMatmul(s, s.ws.xn, w.shexp_router, nullptr, ws.shared_gate));
      sum.shared_gate = ws.shared_gate;
    }
  }
  RETURN_IF_ERROR(be.ExpertSum(sum));
  return ReduceDelta(s);
}

}  // namespace forge
