// Matmul against a stored weight: out[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]), for W in any
// supported format. On the host, block formats take x as int8 planes quantized once per op
// (act_quant.h) and integer dot products (int_dot.h); every output depends only on its x row and
// W row, so a row's result does not depend on the rest of the batch or the thread count.
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

// Reference. Block formats: x quantized to act_quant.h's int8 planes and each output the
// integer dot product int_dot.h defines (plain loops); F32 / F16 / BF16: double accumulation over
// the dequantized rows.
Status matmul_ref(const MatmulParams& p);
// CPU backend: block formats bit for bit as matmul_ref (the same quantized activations and
// integer dot products, AVX2 / AVX-512 VNNI paths chosen at run time); F32 / F16 / BF16 rows in
// F32 with a fixed summation order. Weight rows in parallel on the thread pool.
Status matmul_cpu(const MatmulParams& p);

}  // namespace forge
