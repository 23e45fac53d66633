// RMSNorm over rows: out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight.
// Also the per-head q/k norm (rows = tokens x heads, dim = head_dim). out may alias x.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"

namespace forge {

struct RmsNormParams {
  const void* x = nullptr;        // [n_rows, dim], x_type
  const float* weight = nullptr;  // [dim]
  void* out = nullptr;            // [n_rows, dim], out_type
  int64_t n_rows = 0;
  int64_t dim = 0;
  float eps = 1e-5f;
  DType x_type = DType::kF32;  // the CPU backend supports F32 only
  DType out_type = DType::kF32;
};

// Reference: sum of squares in double.
Status rmsnorm_ref(const RmsNormParams& p);
// CPU backend: float accumulation in a fixed order, rows in parallel.
Status rmsnorm_cpu(const RmsNormParams& p);

}  // namespace forge
