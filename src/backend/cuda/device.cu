// Device queries and plain memory helpers.
#include <atomic>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"

namespace forge::cuda {

int DeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a missing driver
    return 0;
  }
  return n;
}

std::string NoDeviceReason() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(err);
  }
  return n == 0 ? "no CUDA device present" : "";
}

StatusOr<DeviceInfo> GetDeviceInfo(int device) {
  cudaDeviceProp prop{};
  CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.index = device;
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
  info.l2_bytes = prop.l2CacheSize;
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, device) == cudaSuccess) {
    info.memory_clock_khz = v;
  }
  if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess) {
    info.memory_bus_bits = v;
  }
  cudaGetLastError();
  return info;
}

StatusOr<void*> DeviceAlloc(size_t bytes) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    cudaGetLastError();
    auto mib = [](size_t b) { return std::to_string(b >> 20) + " MiB"; };
    return ResourceExhaustedError("out of device memory: allocating " + mib(bytes) + " (" +
                                  std::to_string(bytes) + " bytes) with " + mib(free_b) +
                                  " free of " + mib(total_b) + ": " + cudaGetErrorString(err));
  }
  return p;
}

void DeviceFree(void* p) {
  if (p != nullptr) cudaFree(p);
}

Status CopyToDevice(void* dst, const void* src, size_t bytes) {
  CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  return Status::Ok();
}

Status CopyToHost(void* dst, const void* src, size_t bytes) {
  CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  return Status::Ok();
}

Status DeviceMemset(void* dst, int value, size_t bytes) {
  CUDA_RETURN_IF_ERROR(cudaMemset(dst, value, bytes));
  return Status::Ok();
}

Status DeviceSynchronize() {
  CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return Status::Ok();
}

StatusOr<int> CurrentSmCount() {
  static std::atomic<int> cache[64] = {};
  int dev = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  std::atomic<int>& slot = cache[dev & 63];
  int sms = slot.load(std::memory_order_relaxed);
  if (sms == 0) {
    CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    slot.store(sms, std::memory_order_relaxed);
  }
  return sms;
}

}  // namespace forge::cuda
