// Internal to gemm_quant_cuda: the kernel arguments and the per-family launchers (the kernels are
// compiled in gemm_quant_legacy.cu and gemm_quant_kquants.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"
#include "quant/type_table.h"

namespace forge::cuda::gm {

struct Args {
  const uint8_t* w = nullptr;  // [n][row_bytes] stored blocks, 2-byte aligned
  int64_t row_bytes = 0;
  int64_t n = 0;            // weight rows
  int64_t k = 0;            // elements per row (a multiple of the block)
  const void* x = nullptr;  // [m][x_stride] F16 or BF16, 16-byte aligned, x_stride % 8 == 0
  int64_t x_stride = 0;
  const float* bias = nullptr;  // [n] or null
  void* out = nullptr;          // [m][out_stride], F32 or the activation type
  int64_t out_stride = 0;
  int64_t m = 0;
  bool out_f32 = true;
  int units = 0;            // ceil(k / 256): 256-element units of a row
  int windows = 0;          // ceil(k / 64): 64-element windows of a row
  int units_per_split = 0;  // units of k per CTA of a cluster
};

// Launches the kernel of (type, x_type, bn: activation rows per CTA, 64, 128 or 256) over
// m_tiles x n_tiles output tiles, k split over clusters of nsplit CTAs (0: as SplitByTime says;
// a.units_per_split is set here).
Status LaunchLegacy(GgmlType type, DType x_type, int bn, Args a, int64_t m_tiles, int64_t n_tiles,
                    int nsplit, cudaStream_t stream);
Status LaunchKQuant(GgmlType type, DType x_type, int bn, Args a, int64_t m_tiles, int64_t n_tiles,
                    int nsplit, cudaStream_t stream);

// CTAs of a cluster splitting k (1, 2, 4 or 8), for `tiles` output tiles, `units` units of k
// and `slots` resident CTAs on the GPU: the split that fills whole waves best, a larger one only
// if clearly better; every CTA of a cluster gets at least one unit.

}  // namespace forge::cuda::gm
