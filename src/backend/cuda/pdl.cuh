// Programmatic dependent launch (Hopper): a kernel launched with LaunchDependent may start while
// the kernel before it in the stream is still running, do work that needs nothing of it (stream
// its weights in), then PdlWait() until that kernel has finished and its writes are visible.
// Kernels that precede one call PdlLaunchDependents() early to let it be scheduled at once.
// Without the launch attribute (or before sm_90) both instructions do nothing. Recorded into CUDA
// graphs as programmatic edges.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace forge::cuda {

// Waits for the preceding kernel to complete and flush. Every read of what it wrote, and every
// global write, must come after this.
__device__ __forceinline__ void PdlWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel (if launched with LaunchDependent) be scheduled now.
__device__ __forceinline__ void PdlLaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...) allowed to overlap the kernel before it.
template <typename... KernelArgs, typename... Args>
cudaError_t LaunchDependent(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem,
                            cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace forge::cuda
