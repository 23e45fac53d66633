// The CUDA backend: device buffers, weights copied to the device at load, every op a kernel or a
// cuBLAS call on one stream. F32 activations (weights of any format dequantized to F32 at load).
#pragma once

#include <memory>

#include "backend/backend.h"

namespace forge {

// Error (UNAVAILABLE) when no CUDA device is usable.
StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace forge
