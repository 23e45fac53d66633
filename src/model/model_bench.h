// Model throughput, each figure beside its floor on the same machine (DESIGN.md "Floors"):
// like llama-bench, pp (prefill N tokens in one batch) and tg (decode N tokens one at a time);
// like llama-batched-bench, a sweep over batch sizes (n_seqs prompts prefilled, then decoded
// together one token per sequence per step).
#pragma once

#include <string>
#include <vector>

#include "runtime/model_runner.h"

namespace forge {

struct ModelBenchOptions {
  int pp_tokens = 512;
  int tg_tokens = 128;
  int repetitions = 3;          // median of these
  double copy_bytes_per_s = 0;  // measured bandwidth floor (read + write) of the device
  double flops_per_s = 0;       // measured GEMM rate of the device (0: not measured)
};

struct ModelBenchResult {
  std::string backend;
  double pp_tokens_per_s = 0;
  double tg_tokens_per_s = 0;
  int64_t weight_bytes_per_token = 0;  // every weight tensor but token_embd
  double kv_bytes_per_token = 0;       // mean K/V bytes read per decode step (activation dtype)
  double tg_floor_tokens_per_s = 0;    // copy bandwidth / bytes per step
  double pp_flops_per_token = 0;       // 2 * params outside the embedding + attention
  double pp_floor_tokens_per_s = 0;    // flops rate / flops per token
};

StatusOr<ModelBenchResult> RunModelBench(ModelRunner& model, const ModelBenchOptions& options);

struct BatchedBenchOptions {
  std::vector<int> n_seqs = {1, 16, 64, 128};  // one configuration per entry
  int pp_tokens = 512;                         // prompt tokens per sequence (> 0)
  int tg_tokens = 128;                         // generated tokens per sequence (> 0)
  // Most prompt tokens per prefill forward call: prompts are packed in order, whole or split at
  // the budget (a prompt longer than it runs in pieces, as chunked prefill).
  int prefill_chunk_tokens = 2048;
  int block_size = 16;
  uint64_t seed = 1;            // prompt and decode input tokens
  double copy_bytes_per_s = 0;  // measured copy bandwidth (read + write); 0: no decode floor
  double flops_per_s = 0;       // measured GEMM rate; 0: no prefill floor
};

// One configuration: n_seqs sequences of pp_tokens prompt tokens then tg_tokens decode steps.
struct BatchedBenchRow {
  int n_seqs = 0;
  int64_t prompt_tokens = 0;     // n_seqs * pp
  int64_t generated_tokens = 0;  // n_seqs * tg
  int prefill_calls = 0;         // forward calls of the prefill
  double prefill_seconds = 0;
  double decode_seconds = 0;
  double s_pp = 0;  // prompt tokens / prefill seconds
  double s_tg = 0;  // generated tokens / decode seconds
  double s = 0;     // all tokens / (prefill + decode seconds)
  // Floors: the same figures if every step ran at the measured bandwidth / GEMM rate.
  double prefill_flops = 0;  // 2 * params outside the embedding * tokens + attention
  double decode_bytes = 0;   // over all steps: weights once per step + K/V read
  double s_pp_floor = 0;     // prompt tokens / (prefill flops / flops rate)
  double s_tg_floor = 0;     // generated tokens / (decode bytes / copy bandwidth)
  double s_floor = 0;        // all tokens / (both floor times)
  // Model counters over the timed decode steps.
  int64_t decode_graph_captures = 0;
  int64_t decode_graph_replays = 0;
  int64_t decode_eager_forwards = 0;
};

struct BatchedBenchResult {
  std::string backend;
  DType dtype = DType::kF32;  // activations and KV cache
  // Every weight tensor but token_embd, as stored in the file: the decode floor's weight bytes.
  int64_t weight_bytes_per_step = 0;
  // The same matrices as the backend holds them (a GPU may hold them converted to the
  // activation dtype), for comparison.
  int64_t backend_weight_bytes = 0;
  int64_t kv_bytes_per_token = 0;       // K and V of every layer for one position
  double params_outside_embedding = 0;  // matrices (the output head too, tied or not)
  int64_t kv_blocks = 0;                // pool size: max n_seqs * blocks per sequence
  std::vector<BatchedBenchRow> rows;
};

// Runs every configuration in order on one KV pool sized for the largest. Before timing: the
// workspace is reserved for the largest step, one untimed prompt warms the prefill path, and
// each configuration runs one untimed decode step (recording its graph where the backend has
// graphs) whose K/V the first timed step overwrites. Decode inputs are random tokens drawn before
// timing (sampling is not measured); every prompt is different.
StatusOr<BatchedBenchResult> RunBatchedBench(ModelRunner& model,
                                             const BatchedBenchOptions& options);

}  // namespace forge
