// The tensors of a synthetic model, in file order: names, GGUF shapes, roles and the stored
// type each gets under the spec's weight format (see quant_recipe.h). Planning writes nothing,
// so the shapes of large presets can be checked without making them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "modelgen/model_spec.h"
#include "quant/type_table.h"

namespace forge {

enum class TensorRole {
  kTokenEmbd,
  kOutput,
  kNorm,
  kBias,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOut,
  kFfnGate,
  kFfnUp,
  kFfnDown,
  kRouter,  // a mixture-of-experts router (or shared-expert gate): kept F32, as llama-quantize does
  kPositions  // an encoder's learned positions or token types: kept F32, as converters write them
};

struct TensorPlan {
  std::string name;           // "blk.3.attn_q.weight"
  std::vector<int64_t> dims;  // GGUF order: dims[0] is the row length
  TensorRole role;
  int layer = -1;  // -1 outside the blocks
  GgmlType type = GgmlType::kF32;
  bool fallback = false;  // the recipe's type did not fit the row length (quant_recipe.h)
  int64_t n_elements = 0;
  int64_t n_bytes = 0;
  int64_t rows() const { return n_elements / dims[0]; }
};

struct ModelPlan {
  std::vector<TensorPlan> tensors;
  int64_t n_params = 0;  // elements of every tensor
  int64_t n_bytes = 0;   // tensor data bytes (without alignment padding)
  int n_fallback = 0;
};

// Requires nothing: validates the spec first. n_vocab must already be final (vocab_from read).
StatusOr<ModelPlan> PlanModel(const ModelSpec& spec);

}  // namespace forge
