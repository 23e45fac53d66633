// The CUDA backend: device buffers, weights copied to the device at load (F16/BF16 weights as
// stored, other formats converted to the activation dtype), every op a kernel or a cuBLAS call
// on one stream, decode steps recordable as CUDA graphs.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace forge {

// Error (UNAVAILABLE) when no CUDA device is usable.
StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace forge
