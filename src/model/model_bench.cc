// RunModelBench (pp / tg) and RunBatchedBench (the n_seqs sweep).
#include "model/model_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>

namespace forge {
namespace {

// A step as the engine runs it: the forward, then a greedy choice for each logits row where the
// logits are (the token ids come back, not the logits).
Status ForwardAndSample(ModelRunner& model, const ForwardBatch& b, KvCache& cache) {
  RETURN_IF_ERROR(model.Forward(b, cache, nullptr));
  const std::vector<SampleRow> rows(b.logits_indices.size());  // greedy, no edits
  std::vector<SampleOut> out;
  return model.Sample(rows, {}, &out);
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Under tensor parallelism every figure below is one GPU's share (the GPUs read and compute
// their shares at once): the floors are one GPU's, the all-reduces between them not counted.

// Every weight tensor but token_embd (gathered by row), as stored in the file; with tied
// embeddings the output head reads token_embd in full. Tensor parallelism: rank 0's matrices.
int64_t WeightBytesPerStep(ModelRunner& model) {
  if (model.tensor_parallel() > 1) return WeightMatrixBytes(model.host_weights(0), false);
  int64_t bytes = 0;
  for (const auto& t : model.file().tensors()) {
    if (t.name != "token_embd.weight") bytes += t.n_bytes;
  }
  if (model.config().tied_embeddings) bytes += model.host_weights().token_embd.bytes();
  return bytes;
}

// Parameters of the matrices outside the embedding (the output head counts, tied or not).
double ParamsOutsideEmbedding(ModelRunner& model) {
  const ModelConfig& c = model.config();
  int64_t params = 0;
  for (const auto& t : model.file().tensors()) {
    if (t.name != "token_embd.weight" && t.dims.size() >= 2) params += t.n_elements;
  }
  if (c.tied_embeddings) params += c.n_vocab * c.n_embd;
  return static_cast<double>(params) / model.tensor_parallel();
}

// K and V of every layer for one position, in the activation dtype (one rank's KV heads).
int64_t KvBytesPerToken(ModelRunner& model) {
  const ModelConfig& c = model.config();
  return 2 * c.n_layer * model.CacheShape(1).n_kv_heads * c.head_dim *
         static_cast<int64_t>(DTypeSize(model.dtype()));
}

// Query dimensions one rank attends over.
int64_t RankQDim(ModelRunner& model) { return model.config().q_dim() / model.tensor_parallel(); }

}  // namespace

StatusOr<ModelBenchResult> RunModelBench(ModelRunner& model, const ModelBenchOptions& o) {
  const ModelConfig& c = model.config();
  const int bs = 16;
  const int64_t max_tokens = std::max(o.pp_tokens, o.tg_tokens);
  const int64_t blocks = (max_tokens + bs - 1) / bs;
  ASSIGN_OR_RETURN(auto cache, model.CreateKvCache(blocks, bs));
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::mt19937 rng(1);
  std::vector<int32_t> tokens(max_tokens);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % c.n_vocab);

  ModelBenchResult r;
  r.backend = model.backend().name();
  r.weight_bytes_per_token = WeightBytesPerStep(model);
  std::vector<double> pp_times, tg_times;
  for (int rep = 0; rep < o.repetitions + 1; ++rep) {  // the first round warms up
    if (o.pp_tokens > 0) {
      ForwardBatch b;
      b.block_size = bs;
      RETURN_IF_ERROR(b.AddSequence({tokens.begin(), tokens.begin() + o.pp_tokens}, 0, table));
      b.Finish();
      auto t0 = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(ForwardAndSample(model, b, *cache));
      if (rep > 0) pp_times.push_back(Seconds(t0));
    }
    if (o.tg_tokens > 0) {
      auto t0 = std::chrono::steady_clock::now();
      for (int pos = 0; pos < o.tg_tokens; ++pos) {
        ForwardBatch b;
        b.block_size = bs;
        RETURN_IF_ERROR(b.AddSequence({tokens[pos]}, pos, table));
        b.Finish();
        RETURN_IF_ERROR(ForwardAndSample(model, b, *cache));
      }
      if (rep > 0) tg_times.push_back(Seconds(t0));
    }
    if (rep == 0 && o.repetitions == 0) break;
  }
  const double kv_row = static_cast<double>(KvBytesPerToken(model));  // K and V, every layer
  if (!pp_times.empty()) r.pp_tokens_per_s = o.pp_tokens / Median(pp_times);
  if (!tg_times.empty()) r.tg_tokens_per_s = o.tg_tokens / Median(tg_times);
  // Decode step at position p reads p + 1 K/V rows; mean over the run.
  r.kv_bytes_per_token = kv_row * (o.tg_tokens + 1) / 2.0;
  if (o.copy_bytes_per_s > 0) {
    // DESIGN.md: floor time = bytes read per step / measured copy bandwidth (read + written).
    r.tg_floor_tokens_per_s =
        o.copy_bytes_per_s / (r.weight_bytes_per_token + r.kv_bytes_per_token);
  }
  const double params = ParamsOutsideEmbedding(model);
  // Attention FLOPs per token at mean context pp/2: QK^T and PV, 2 * 2 * ctx * q_dim per layer.
  const double attn = 4.0 * c.n_layer * RankQDim(model) * (o.pp_tokens / 2.0);
  r.pp_flops_per_token = 2.0 * params + attn;
  if (o.flops_per_s > 0) r.pp_floor_tokens_per_s = o.flops_per_s / r.pp_flops_per_token;
  return r;
}

namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// Prefills every sequence's prompt in forward calls of at most `chunk` tokens, prompts packed in
// order (split at the budget). Returns the number of calls; `seconds` is their summed wall time.
Status Prefill(ModelRunner& model, KvCache& cache, const std::vector<std::vector<int32_t>>& prompts,
               const std::vector<std::vector<int32_t>>& tables, int chunk, int block_size,
               int* calls, double* seconds) {
  size_t seq = 0;
  int64_t done = 0;  // tokens of prompts[seq] already prefilled
  while (seq < prompts.size()) {
    ForwardBatch b;
    b.block_size = block_size;
    int64_t budget = chunk;
    while (budget > 0 && seq < prompts.size()) {
      const auto& p = prompts[seq];
      const int64_t n = std::min<int64_t>(budget, static_cast<int64_t>(p.size()) - done);
      const bool last = done + n == static_cast<int64_t>(p.size());
      const auto want = last ? ForwardBatch::Logits::kLast : ForwardBatch::Logits::kNone;
      RETURN_IF_ERROR(b.AddSequence({p.begin() + done, p.begin() + done + n},
                                    static_cast<int32_t>(done), tables[seq], want));
      budget -= n;
      done += n;
      if (last) ++seq, done = 0;
    }
    b.Finish();
    auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(ForwardAndSample(model, b, cache));
    *seconds += Seconds(t0);
    ++*calls;
  }
  return Status::Ok();
}

// One decode step: every sequence advances one token at position `pos` and chooses its next.
Status DecodeStep(ModelRunner& model, KvCache& cache, const std::vector<int32_t>& tokens,
                  int32_t pos, const std::vector<std::vector<int32_t>>& tables, int block_size) {
  ForwardBatch b;
  b.block_size = block_size;
  for (size_t s = 0; s < tokens.size(); ++s) {
    RETURN_IF_ERROR(b.AddSequence({tokens[s]}, pos, tables[s], ForwardBatch::Logits::kLast));
  }
  b.Finish();
  return ForwardAndSample(model, b, cache);
}

}  // namespace

StatusOr<BatchedBenchResult> RunBatchedBench(ModelRunner& model, const BatchedBenchOptions& o) {
  if (o.n_seqs.empty()) return InvalidArgumentError("batched bench: no n_seqs given");
  for (int n : o.n_seqs) {
    if (n <= 0) return InvalidArgumentError("batched bench: n_seqs=" + Str(n) + ": must be > 0");
  }
  if (o.pp_tokens <= 0 || o.tg_tokens <= 0) {
    return InvalidArgumentError("batched bench: pp=" + Str(o.pp_tokens) +
                                " tg=" + Str(o.tg_tokens) + ": both must be > 0");
  }
  if (o.prefill_chunk_tokens <= 0 || o.block_size <= 0) {
    return InvalidArgumentError("batched bench: prefill chunk " + Str(o.prefill_chunk_tokens) +
                                " and block size " + Str(o.block_size) + " must be > 0");
  }
  const ModelConfig& c = model.config();
  const int64_t ctx = int64_t{o.pp_tokens} + o.tg_tokens;  // may pass the training context
  const int bs = o.block_size;
  const int max_seqs = *std::max_element(o.n_seqs.begin(), o.n_seqs.end());
  const int64_t blocks_per_seq = (ctx + bs - 1) / bs;

  BatchedBenchResult r;
  r.backend = model.backend().name();
  r.dtype = model.dtype();
  r.weight_bytes_per_step = WeightBytesPerStep(model);
  // The same matrices as the backend holds them (it may convert or repack the stored format).
  r.backend_weight_bytes = WeightMatrixBytes(model.weights(), /*with_token_embd=*/false);
  r.kv_bytes_per_token = KvBytesPerToken(model);
  r.params_outside_embedding = ParamsOutsideEmbedding(model);
  r.kv_blocks = blocks_per_seq * max_seqs;

  // The workspace for the largest step first, then the pool (sequence s owns a run of blocks).
  RETURN_IF_ERROR(
      model.ReserveWorkspace(std::max<int64_t>(o.prefill_chunk_tokens, max_seqs), max_seqs));
  ASSIGN_OR_RETURN(auto cache, model.CreateKvCache(r.kv_blocks, bs));
  std::vector<std::vector<int32_t>> tables(max_seqs);
  for (int s = 0; s < max_seqs; ++s) {
    tables[s].resize(blocks_per_seq);
    std::iota(tables[s].begin(), tables[s].end(), static_cast<int32_t>(s * blocks_per_seq));
  }
  std::mt19937_64 rng(o.seed);
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint64_t>(c.n_vocab));
    return t;
  };

  {  // Warm-up (untimed): one prompt through the prefill path.
    int calls = 0;
    double seconds = 0;
    RETURN_IF_ERROR(Prefill(model, *cache, {random_tokens(o.pp_tokens)}, {tables[0]},
                            o.prefill_chunk_tokens, bs, &calls, &seconds));
  }
  for (int n : o.n_seqs) {
    BatchedBenchRow row;
    row.n_seqs = n;
    row.prompt_tokens = int64_t{n} * o.pp_tokens;
    row.generated_tokens = int64_t{n} * o.tg_tokens;
    std::vector<std::vector<int32_t>> prompts;
    for (int s = 0; s < n; ++s) prompts.push_back(random_tokens(o.pp_tokens));
    std::vector<std::vector<int32_t>> inputs;  // [tg][n] decode input tokens
    for (int i = 0; i < o.tg_tokens; ++i) inputs.push_back(random_tokens(n));
    const std::vector<std::vector<int32_t>> seq_tables(tables.begin(), tables.begin() + n);

    RETURN_IF_ERROR(Prefill(model, *cache, prompts, seq_tables, o.prefill_chunk_tokens, bs,
                            &row.prefill_calls, &row.prefill_seconds));
    // Untimed step at position pp (records this batch size's graph); the first timed step
    // writes the same position again.
    RETURN_IF_ERROR(DecodeStep(model, *cache, inputs[0], o.pp_tokens, seq_tables, bs));
    const RunnerStats before = model.stats();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.tg_tokens; ++i) {
      RETURN_IF_ERROR(DecodeStep(model, *cache, inputs[i], o.pp_tokens + i, seq_tables, bs));
    }
    row.decode_seconds = Seconds(t0);
    const RunnerStats& after = model.stats();
    row.decode_graph_captures = after.graph_captures - before.graph_captures;
    row.decode_graph_replays = after.graph_replays - before.graph_replays;
    row.decode_eager_forwards = after.eager_forwards - before.eager_forwards;

    const double pp = o.pp_tokens, tg = o.tg_tokens;
    row.s_pp = row.prompt_tokens / std::max(row.prefill_seconds, 1e-12);
    row.s_tg = row.generated_tokens / std::max(row.decode_seconds, 1e-12);
    row.s = (row.prompt_tokens + row.generated_tokens) /
            std::max(row.prefill_seconds + row.decode_seconds, 1e-12);
    // DESIGN.md "Floors". Prefill: 2 * params per token, plus causal attention per sequence and
    // layer, QK^T and PV: 4 * n_head * pp^2 * head_dim / 2.
    row.prefill_flops = 2.0 * r.params_outside_embedding * row.prompt_tokens +
                        n * (2.0 * c.n_layer * RankQDim(model) * pp * pp);
    // Decode step i (0-based) reads the weights once and K/V of pp + i + 1 positions per sequence.
    row.decode_bytes = tg * r.weight_bytes_per_step +
                       double(n) * r.kv_bytes_per_token * (tg * pp + tg * (tg + 1) / 2);
    const double pp_floor_s = o.flops_per_s > 0 ? row.prefill_flops / o.flops_per_s : 0;
    const double tg_floor_s = o.copy_bytes_per_s > 0 ? row.decode_bytes / o.copy_bytes_per_s : 0;
    if (pp_floor_s > 0) row.s_pp_floor = row.prompt_tokens / pp_floor_s;
    if (tg_floor_s > 0) row.s_tg_floor = row.generated_tokens / tg_floor_s;
    if (pp_floor_s > 0 && tg_floor_s > 0) {
      row.s_floor = (row.prompt_tokens + row.generated_tokens) / (pp_floor_s + tg_floor_s);
    }
    r.rows.push_back(row);
  }
  return r;
}

}  // namespace forge
