// The residual add fused with the next RMSNorm: residual[r, :] += delta[r, :], then
// out[r, :] = rmsnorm(residual[r, :]) * weight. The residual stream stays F32 on every backend;
// delta and out are in the activation dtype.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"

namespace forge {

struct AddRmsNormParams {
  float* residual = nullptr;      // [n_rows, dim] F32, updated in place
  const void* delta = nullptr;    // [n_rows, dim], delta_type
  const float* weight = nullptr;  // [dim]
  void* out = nullptr;            // [n_rows, dim], out_type; must not alias residual
  int64_t n_rows = 0;
  int64_t dim = 0;
  float eps = 1e-5f;
  DType delta_type = DType::kF32;  // the CPU backend supports F32 only
  DType out_type = DType::kF32;
  // Also out's one row in the form a matmul takes as MatmulParams::xq (n_rows 1; only where
  // Backend::QuantizedActivationBytes offered it), or null.
  void* out_q = nullptr;
};

// Reference: add_ref then rmsnorm_ref.
Status add_rmsnorm_ref(const AddRmsNormParams& p);
// CPU backend: add_ref then rmsnorm_cpu (the same numbers as the two ops run apart).
Status add_rmsnorm_cpu(const AddRmsNormParams& p);

}  // namespace forge
