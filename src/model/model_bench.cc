// RunModelBench.
#include "model/model_bench.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

namespace forge {
namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

StatusOr<ModelBenchResult> RunModelBench(Model& model, const ModelBenchOptions& o) {
  const ModelConfig& c = model.config();
  const int bs = 16;
  const int64_t max_tokens = std::max(o.pp_tokens, o.tg_tokens);
  const int64_t blocks = (max_tokens + bs - 1) / bs;
  ASSIGN_OR_RETURN(auto cache, KvCache::Create(model.backend(), model.CacheShape(blocks, bs)));
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(1);
  std::vector<int32_t> tokens(max_tokens);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % c.n_vocab);

  ModelBenchResult r;
  r.backend = model.backend().name();
  for (const auto& t : model.file().tensors()) {
    if (t.name != "token_embd.weight") r.weight_bytes_per_token += t.n_bytes;
  }
  if (c.tied_embeddings) r.weight_bytes_per_token += model.host_weights().token_embd.bytes();
  std::vector<float> logits;
  std::vector<double> pp_times, tg_times;
  for (int rep = 0; rep < o.repetitions + 1; ++rep) {  // the first round warms up
    if (o.pp_tokens > 0) {
      ForwardBatch b;
      b.block_size = bs;
      RETURN_IF_ERROR(b.AddSequence({tokens.begin(), tokens.begin() + o.pp_tokens}, 0, table));
      b.Finish();
      auto t0 = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(model.Forward(b, *cache, &logits));
      if (rep > 0) pp_times.push_back(Seconds(t0));
    }
    if (o.tg_tokens > 0) {
      auto t0 = std::chrono::steady_clock::now();
      for (int pos = 0; pos < o.tg_tokens; ++pos) {
        ForwardBatch b;
        b.block_size = bs;
        RETURN_IF_ERROR(b.AddSequence({tokens[pos]}, pos, table));
        b.Finish();
        RETURN_IF_ERROR(model.Forward(b, *cache, &logits));
      }
      if (rep > 0) tg_times.push_back(Seconds(t0));
    }
    if (rep == 0 && o.repetitions == 0) break;
  }
  const double kv_row = 2.0 * c.n_layer * c.kv_dim() * 4;  // K and V, F32
  if (!pp_times.empty()) r.pp_tokens_per_s = o.pp_tokens / Median(pp_times);
  if (!tg_times.empty()) r.tg_tokens_per_s = o.tg_tokens / Median(tg_times);
  // Decode step at position p reads p + 1 K/V rows; mean over the run.
  r.kv_bytes_per_token = kv_row * (o.tg_tokens + 1) / 2.0;
  if (o.copy_bytes_per_s > 0) {
    // DESIGN.md: floor time = bytes read per step / measured copy bandwidth (read + written).
    r.tg_floor_tokens_per_s =
        o.copy_bytes_per_s / (r.weight_bytes_per_token + r.kv_bytes_per_token);
  }
  int64_t params = 0;
  for (const auto& t : model.file().tensors()) {
    if (t.name != "token_embd.weight" && t.dims.size() >= 2) params += t.n_elements;
  }
  if (c.tied_embeddings) params += c.n_vocab * c.n_embd;
  // Attention FLOPs per token at mean context pp/2: QK^T and PV, 2 * 2 * ctx * q_dim per layer.
  const double attn = 4.0 * c.n_layer * c.q_dim() * (o.pp_tokens / 2.0);
  r.pp_flops_per_token = 2.0 * params + attn;
  if (o.flops_per_s > 0) r.pp_floor_tokens_per_s = o.flops_per_s / r.pp_flops_per_token;
  return r;
}

}  // namespace forge
