// Embedding lookup: out[t, :] = table row ids[t], dequantized to F32, for any stored format.
// A table that holds only a slice of the vocabulary (a tensor-parallel shard: rows row_offset ..
// row_offset + table.rows of n_vocab) writes zeros for the ids outside its slice, so the sum of
// every shard's output is the whole lookup.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "quant/weight_view.h"

namespace forge {

struct EmbeddingParams {
  WeightView table;              // [n_vocab rows, dim cols]
  const int32_t* ids = nullptr;  // [n_tokens]
  int64_t n_tokens = 0;
  float* out = nullptr;    // [n_tokens, dim]
  int64_t row_offset = 0;  // the vocabulary id of the table's first row
  int64_t n_vocab = 0;     // ids must be in [0, n_vocab); 0: table.rows (no slice)
  float scale = 1.0f;      // every row times scale (Gemma: sqrt(dim))
};

Status embedding_ref(const EmbeddingParams& p);

}  // namespace forge
