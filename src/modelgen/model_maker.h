// Synthetic llama-family GGUF models with seeded random weights, for tests, benchmarks and the
// quick start. Weights are generated and written tensor by tensor (streamed).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "quant/type_table.h"

namespace forge {

struct ModelSpec {
  std::string arch = "llama";
  std::string name = "forge-synthetic";
  int64_t n_vocab = 512;
  int64_t n_embd = 64;
  int64_t n_layer = 2;
  int64_t n_head = 8;
  int64_t n_head_kv = 4;
  int64_t n_ff = 192;
  int64_t n_ctx = 2048;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  GgmlType weight_type = GgmlType::kF32;  // 2-D weight matrices; norms stay F32
  uint64_t seed = 1;
};

// A named preset ("tiny", ...); error for an unknown name.
StatusOr<ModelSpec> ModelPreset(const std::string& name);

// Writes the model to path.
Status MakeModel(const ModelSpec& spec, const std::string& path);

}  // namespace forge
