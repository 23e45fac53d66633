// add_cuda: out = a + b on the device (F32), the CUDA twin of add_ref.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cpu/add/add.h"

namespace forge::cuda {

// Pointers in AddParams are device pointers.
Status add_cuda(const AddParams& p, cudaStream_t stream = nullptr);

}  // namespace forge::cuda
