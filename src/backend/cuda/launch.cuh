// Small helpers shared by the CUDA op launchers: grid sizing, clustered (and dependent) launches
// and warp reductions.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <utility>

namespace forge::cuda {

inline unsigned GridFor(int64_t n, int threads, int64_t max_blocks = 65535 * 4) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > max_blocks ? max_blocks : b));
}

// Raises `kernel`'s dynamic shared-memory limit to `bytes` on the current device, once per device
// ordinal (mod 64): `done` is the caller's per-kernel record (a function-local static).
template <typename Kernel>
cudaError_t SetMaxDynamicSmemOnce(Kernel kernel, int bytes, std::atomic<uint64_t>* done) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  const uint64_t bit = uint64_t{1} << (dev & 63);
  if ((done->load(std::memory_order_relaxed) & bit) != 0) return cudaSuccess;
  e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess) done->fetch_or(bit, std::memory_order_relaxed);
  return e;
}

// kernel<<<grid, block, smem, stream>>>(args...) with thread-block clusters of `cluster_x` CTAs
// along x (1: no cluster attribute) and, if `dependent`, allowed to overlap the kernel before it in
// the stream (programmatic dependent launch, pdl.cuh).
template <typename... KernelArgs, typename... Args>
cudaError_t LaunchWithAttributes(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                                 cudaStream_t stream, unsigned cluster_x, bool dependent,
                                 Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (dependent) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster_x > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster_x;
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

// LaunchWithAttributes without the programmatic dependence.
template <typename... KernelArgs, typename... Args>
cudaError_t LaunchClustered(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                            cudaStream_t stream, unsigned cluster_x, Args&&... args) {
  return LaunchWithAttributes(kernel, grid, block, smem, stream, cluster_x, false,
                              std::forward<Args>(args)...);
}

// *p += v at GPU scope with acquire-release order (a semaphore between blocks: a barrier before it
// orders the block's writes first); returns the old value.
__device__ __forceinline__ int AtomicAddAcqRel(int* p, int v) {
  int old;
  asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace forge::cuda
