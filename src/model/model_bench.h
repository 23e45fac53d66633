// Model throughput like llama-bench: pp (prefill N tokens in one batch) and tg (decode N tokens
// one at a time), each beside its floor on the same machine (DESIGN.md "Floors").
#pragma once

#include <string>

#include "model/model.h"

namespace forge {

struct ModelBenchOptions {
  int pp_tokens = 512;
  int tg_tokens = 128;
  int repetitions = 3;            // median of these
  double copy_bytes_per_s = 0;    // measured bandwidth floor (read + write) of the device
  double flops_per_s = 0;         // measured GEMM rate of the device (0: not measured)
};

struct ModelBenchResult {
  std::string backend;
  double pp_tokens_per_s = 0;
  double tg_tokens_per_s = 0;
  int64_t weight_bytes_per_token = 0;  // every weight tensor but token_embd
  double kv_bytes_per_token = 0;       // mean K/V bytes read per decode step
  double tg_floor_tokens_per_s = 0;    // copy bandwidth / bytes per step
  double pp_flops_per_token = 0;       // 2 * params outside the embedding + attention
  double pp_floor_tokens_per_s = 0;    // flops rate / flops per token
};

StatusOr<ModelBenchResult> RunModelBench(Model& model, const ModelBenchOptions& options);

}  // namespace forge
