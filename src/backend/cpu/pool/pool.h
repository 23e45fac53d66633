// Pooling of an encoder's (or an embedding decoder's) last hidden states into one vector per
// sequence: the mean of its tokens' rows, its first token's row (CLS) or its last token's row,
// then optionally scaled to unit L2 norm. The sequences are the step's, in order: sequence s holds
// rows cu_seqlens[s] .. cu_seqlens[s + 1] - 1 of x.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace forge {

// The values of GGUF's `<arch>.pooling_type` Forge pools by (kNone: a model that does not embed).
enum class PoolingType : int { kNone = 0, kMean = 1, kCls = 2, kLast = 3 };

// "none", "mean", "cls", "last".
const char* PoolingName(PoolingType type);

struct PoolParams {
  const float* x = nullptr;             // [n_tokens, dim] F32
  const int32_t* cu_seqlens = nullptr;  // [n_seqs + 1] in backend memory; non-decreasing from 0
  float* out = nullptr;                 // [n_seqs, dim] F32; must not alias x
  int64_t n_seqs = 0;
  int64_t dim = 0;
  PoolingType type = PoolingType::kMean;
  bool normalize = false;  // each output row divided by its L2 norm (a zero row stays zero)
};

// Checks the shapes and the type (not cu_seqlens, which may be in device memory); shared.
Status ValidatePool(const PoolParams& p);
// Reference: sums and norms in double. An empty sequence pools to a zero row.
Status pool_ref(const PoolParams& p);

}  // namespace forge
