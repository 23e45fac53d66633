// Internal to gemv_quant_cuda: the kernel arguments and the per-family launchers (the kernels are
// compiled in gemv_quant_legacy.cu and gemv_quant_kquants.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "base/status.h"
#include "quant/type_table.h"

namespace forge::cuda::gq {

struct Args {
  const uint8_t* w = nullptr;  // [n][row_bytes] stored blocks, 2-byte aligned
  int64_t row_bytes = 0;
  int64_t n = 0;            // weight rows
  int64_t k = 0;            // elements per row
  const void* x = nullptr;  // [m][x_stride] of x_type
  int64_t x_stride = 0;
  const float* bias = nullptr;  // [n] or null
  void* out = nullptr;          // [m][out_stride] of out_type
  int64_t out_stride = 0;
  int m = 0;
  int x_type = 0;  // DType
  int out_type = 0;
  int tiles = 0;            // ceil(k / 256)
  int tiles_per_split = 0;  // tiles of k per CTA of a cluster
  int last_tile_bytes = 0;  // bytes of a row's last tile (shorter when k % 256 != 0)
};

// Launches the kernel of `type` on a grid of (nsplit, row_blocks) CTAs, clusters of nsplit.
Status LaunchLegacy(GgmlType type, const Args& a, int nsplit, int64_t row_blocks,
                    cudaStream_t stream);
Status LaunchKQuant(GgmlType type, const Args& a, int nsplit, int64_t row_blocks,
                    cudaStream_t stream);

}  // namespace forge::cuda::gq
