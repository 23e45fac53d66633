// act_quant_cuda: one F16 row into the one-row DP4A GEMV's activation form (act_quant.cuh) by a
// kernel of its own, for an op that writes such a row but cannot form it itself.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "base/status.h"

namespace forge::cuda {

// x's one F16 row of k elements (k a positive multiple of 256, x and xq 16-byte aligned) into its
// form at xq (ActQuantBytes(k) bytes). Launched as a dependent (pdl.cuh).
Status act_quant_cuda(const void* x, int64_t k, void* xq, cudaStream_t stream);

}  // namespace forge::cuda
