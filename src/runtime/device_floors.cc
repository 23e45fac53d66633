// MeasureDeviceFloors: the CUDA floor functions on a GPU backend, the CPU's otherwise.
#include "runtime/device_floors.h"

#include "backend/cpu/memory_floor.h"
#ifdef FORGE_HAVE_CUDA
#include "backend/cuda/floor/gpu_floor.h"
#endif

namespace forge {

StatusOr<DeviceFloors> MeasureDeviceFloors(Backend& backend) {
  DeviceFloors f;
#ifdef FORGE_HAVE_CUDA
  if (backend.name() == "cuda") {
    cuda::GpuFloorOptions o;
    o.copy_bytes = size_t{256} << 20;
    o.gemm_size = 4096;
    o.repeats = 5;
    ASSIGN_OR_RETURN(cuda::GpuFloor g, cuda::MeasureGpuFloor(o));
    f.copy_bytes_per_second = g.copy_bytes_per_second;
    f.flops_per_second = g.bf16_flops_per_second;
    return f;
  }
#endif
  (void)backend;
  f.copy_bytes_per_second = MeasureCpuCopyBandwidth(int64_t{64} << 20).bytes_per_second;
  f.flops_per_second = MeasureCpuMatmulRate();
  return f;
}

}  // namespace forge
