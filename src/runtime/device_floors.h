// The floors of the device a backend runs on, measured now (DESIGN.md "Floors"): copy bandwidth
// and the dense matmul rate. Small buffers, so a serving process can measure beside its KV cache.
#pragma once

#include "backend/backend.h"
#include "base/status.h"

namespace forge {

struct DeviceFloors {
  double copy_bytes_per_second = 0;  // read + written
  double flops_per_second = 0;       // dense matmul (GPU: bf16 GEMM; CPU: the F32 matmul path)
};

// Measures the floors of `backend`'s device (a GPU: 256 MiB copies and 4096^3 bf16 GEMMs; the
// CPU: 64 MiB copies and its matmul). Takes about a second; run it off latency-critical threads.
StatusOr<DeviceFloors> MeasureDeviceFloors(Backend& backend);

}  // namespace forge
