// LayerNorm over rows, with the residual add of a post-norm encoder fused before it: when delta is
// set, x[r, :] += delta[r, :] first, and when add_row is set, x[r, :] += add_row[:] (one vector
// for every row: BERT's token-type embedding); then out[r, :] = (x[r, :] - mean) / sqrt(var + eps)
// * weight
// + bias, the mean and (biased) variance over the row. BERT's embedding norm and its two norms per
// layer (x = LayerNorm(x + sublayer(x))). The residual stream stays F32 on every backend.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"

namespace forge {

struct LayerNormParams {
  float* x = nullptr;              // [n_rows, dim] F32; x + delta in place when delta is set
  const float* delta = nullptr;    // [n_rows, dim] F32, or null (no add)
  const float* add_row = nullptr;  // [dim] F32 added to every row after delta, or null
  const float* weight = nullptr;   // [dim]
  const float* bias = nullptr;     // [dim], or null (none)
  float* out = nullptr;            // [n_rows, dim] F32; may alias x
  // Also the normed rows in cast_type (the next matmul's input), or null. Must not alias x.
  void* out_cast = nullptr;
  DType cast_type = DType::kF32;  // the CPU backend supports F32 only
  int64_t n_rows = 0;
  int64_t dim = 0;
  float eps = 1e-12f;
};

// Checks the shapes and pointers; shared by every backend.
Status ValidateLayerNorm(const LayerNormParams& p);
// Reference: mean and variance in double.
Status layernorm_ref(const LayerNormParams& p);
// CPU backend: float accumulation in a fixed order (two passes), rows in parallel.
Status layernorm_cpu(const LayerNormParams& p);

}  // namespace forge
