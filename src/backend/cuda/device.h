// The CUDA device as Forge sees it: count, properties, and device memory helpers usable from
// plain C++ (no CUDA headers here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace forge::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int64_t total_memory = 0;  // bytes
  int64_t l2_bytes = 0;
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
};

// Number of usable CUDA devices; 0 (not an error) when the driver or a device is absent.
int DeviceCount();
// Why no device is usable (the CUDA error text), for test skip messages.
std::string NoDeviceReason();
StatusOr<DeviceInfo> GetDeviceInfo(int device = 0);
// SMs of the current device (cached per device ordinal): kernels size their grids by it.
StatusOr<int> CurrentSmCount();
// Whether p is a multiple of `bytes` (the kernels' alignment checks).
inline bool IsAligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Device buffers for tests and tools.
StatusOr<void*> DeviceAlloc(size_t bytes);
void DeviceFree(void* p);
Status CopyToDevice(void* dst, const void* src, size_t bytes);
Status CopyToHost(void* dst, const void* src, size_t bytes);
Status DeviceMemset(void* dst, int value, size_t bytes);
Status DeviceSynchronize();

}  // namespace forge::cuda
