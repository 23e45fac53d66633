// MeasureGpuFloor: timed with CUDA events after warm-up, on random (never zero) data.
#include <cuda_bf16.h>

#include <algorithm>
#include <vector>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/floor/gpu_floor.h"

namespace forge::cuda {
namespace {

__global__ void fill_random_bf16(__nv_bfloat16* p, size_t n, uint32_t seed) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    float v = (static_cast<float>(x & 0xffff) / 65536.0f - 0.5f);  // [-0.5, 0.5)
    p[i] = __float2bfloat16(v);
  }
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Frees device buffers and events on every path.
struct Scoped {
  std::vector<void*> bufs;
  std::vector<cudaEvent_t> events;
  cublasHandle_t handle = nullptr;
  ~Scoped() {
    for (void* b : bufs) cudaFree(b);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    if (handle) cublasDestroy(handle);
  }
};

}  // namespace

bool KnownGpuFigures(const std::string& name, double* copy, double* bf16) {
  if (name.find("H200") != std::string::npos) {
    *copy = 4.2e12;
    *bf16 = 790e12;
    return true;
  }
  if (name.find("H100") != std::string::npos) {
    *copy = 3.0e12;
    *bf16 = 790e12;
    return true;
  }
  return false;
}

StatusOr<GpuFloor> MeasureGpuFloor(const GpuFloorOptions& o) {
  ASSIGN_OR_RETURN(DeviceInfo info, GetDeviceInfo(0));
  GpuFloor f;
  f.device_name = info.name;
  Scoped s;
  cudaEvent_t start, stop;
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  s.events.push_back(start);
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  s.events.push_back(stop);

  // Copy bandwidth.
  void *src = nullptr, *dst = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMalloc(&src, o.copy_bytes));
  s.bufs.push_back(src);
  CUDA_RETURN_IF_ERROR(cudaMalloc(&dst, o.copy_bytes));
  s.bufs.push_back(dst);
  fill_random_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(src), o.copy_bytes / 2, 1);
  CUDA_RETURN_IF_LAUNCH_ERROR("fill_random_bf16");
  std::vector<float> times;
  for (int r = 0; r < o.repeats + 2; ++r) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(start));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, o.copy_bytes, cudaMemcpyDeviceToDevice));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(stop));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start, stop));
    if (r >= 2) times.push_back(ms);
  }
  f.copy_bytes_per_second = 2.0 * o.copy_bytes / (Median(times) * 1e-3);
  for (void* b : s.bufs) cudaFree(b);
  s.bufs.clear();

  // bf16 GEMM rate: C[M,N] = A[M,K] * B[K,N], F32 accumulation.
  const size_t n = static_cast<size_t>(o.gemm_size);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMalloc(&a, n * n * 2));
  s.bufs.push_back(a);
  CUDA_RETURN_IF_ERROR(cudaMalloc(&b, n * n * 2));
  s.bufs.push_back(b);
  CUDA_RETURN_IF_ERROR(cudaMalloc(&c, n * n * 2));
  s.bufs.push_back(c);
  fill_random_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(a), n * n, 2);
  fill_random_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(b), n * n, 3);
  CUDA_RETURN_IF_LAUNCH_ERROR("fill_random_bf16");
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&s.handle));
  const float alpha = 1.0f, beta = 0.0f;
  const int m = o.gemm_size;
  times.clear();
  for (int r = 0; r < o.repeats + 3; ++r) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(start));
    CUBLAS_RETURN_IF_ERROR(cublasGemmEx(s.handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, a,
                                        CUDA_R_16BF, m, b, CUDA_R_16BF, m, &beta, c, CUDA_R_16BF,
                                        m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(stop));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start, stop));
    if (r >= 3) times.push_back(ms);
  }
  f.bf16_flops_per_second = 2.0 * n * n * n / (Median(times) * 1e-3);

  if (KnownGpuFigures(f.device_name, &f.known_copy, &f.known_bf16)) {
    f.copy_suspect = f.copy_bytes_per_second < 0.9 * f.known_copy;
    f.gemm_suspect = f.bf16_flops_per_second < 0.9 * f.known_bf16;
  }
  return f;
}

}  // namespace forge::cuda
