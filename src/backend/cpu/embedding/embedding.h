// Embedding lookup: out[t, :] = table row ids[t], dequantized to F32, for any stored format.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "quant/weight_view.h"

namespace forge {

struct EmbeddingParams {
  WeightView table;               // [n_vocab rows, dim cols]
  const int32_t* ids = nullptr;   // [n_tokens]
  int64_t n_tokens = 0;
  float* out = nullptr;           // [n_tokens, dim]
};

Status embedding_ref(const EmbeddingParams& p);

}  // namespace forge
