// The GPU's floors (DESIGN.md): device-to-device copy bandwidth and the dense bf16 GEMM rate
// (8192^3 through cuBLAS), measured now, beside the card's known figures.
#pragma once

#include <string>

#include "base/status.h"

namespace forge::cuda {

struct GpuFloor {
  std::string device_name;
  double copy_bytes_per_second = 0;  // read + written, median of the timed copies
  double bf16_flops_per_second = 0;  // 2*M*N*K / time, median of the timed products
  double known_copy = 0;             // the card's known figures (0 when the card is unknown)
  double known_bf16 = 0;
  bool copy_suspect = false;         // measured more than 10% under the known figure
  bool gemm_suspect = false;
};

struct GpuFloorOptions {
  size_t copy_bytes = size_t{2} << 30;  // per buffer
  int gemm_size = 8192;
  int repeats = 10;
};

StatusOr<GpuFloor> MeasureGpuFloor(const GpuFloorOptions& options = {});

// Known figures by device name ("NVIDIA H200" ...); false for an unknown card.
bool KnownGpuFigures(const std::string& name, double* copy, double* bf16);

}  // namespace forge::cuda
