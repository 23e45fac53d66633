// Matmul against a stored weight: out[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]), for W in any
// supported format, dequantized on the fly. The CPU path sums each output in the same order
// whatever m is, so a row's result does not depend on the rest of the batch.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"
#include "quant/weight_view.h"

namespace forge {

struct MatmulParams {
  const void* x = nullptr;      // [m, w.cols], row stride x_stride, x_type
  int64_t x_stride = 0;         // 0: w.cols
  WeightView w;                 // [n = w.rows, k = w.cols]
  const float* bias = nullptr;  // [n] or null
  void* out = nullptr;          // [m, n], row stride out_stride, out_type
  int64_t out_stride = 0;       // 0: w.rows
  int64_t m = 0;
  DType x_type = DType::kF32;    // the CPU backend supports F32 only; a GPU: F32, or the
  DType out_type = DType::kF32;  // weight's own half type for x and that type or F32 for out
  // x's one row already in the form the backend's one-row kernel reads (the op that wrote x also
  // wrote this: AddRmsNormParams / SwigluParams::out_q), or null; sized and offered by
  // Backend::QuantizedActivationBytes. Backends without such a kernel never see it.
  const void* xq = nullptr;
};

// Reference: double accumulation over dequantized rows.
Status matmul_ref(const MatmulParams& p);
// CPU backend: weight rows in parallel, each dequantized once and dotted with every x row.
Status matmul_cpu(const MatmulParams& p);

}  // namespace forge
