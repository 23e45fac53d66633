// What embedding_cuda.cu offers besides embedding_cuda (ops_cuda.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "base/status.h"

namespace forge::cuda {

// x[i] *= s for n F32 values (the scale of embedding rows gathered from a block-format table).
Status scale_f32_cuda(float* x, int64_t n, float s, cudaStream_t stream);

}  // namespace forge::cuda
