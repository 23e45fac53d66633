// Matmul against a stored weight: out[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]), for W in any
// supported format, dequantized on the fly. The CPU path sums each output in the same order
// whatever m is, so a row's result does not depend on the rest of the batch.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "quant/weight_view.h"

namespace forge {

struct MatmulParams {
  const float* x = nullptr;     // [m, w.cols], row stride x_stride
  int64_t x_stride = 0;         // 0: w.cols
  WeightView w;                 // [n = w.rows, k = w.cols]
  const float* bias = nullptr;  // [n] or null
  float* out = nullptr;         // [m, n], row stride out_stride
  int64_t out_stride = 0;       // 0: w.rows
  int64_t m = 0;
};

// Reference: double accumulation over dequantized rows.
Status matmul_ref(const MatmulParams& p);
// CPU backend: weight rows in parallel, each dequantized once and dotted with every x row.
Status matmul_cpu(const MatmulParams& p);

}  // namespace forge
