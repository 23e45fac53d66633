// Programmatic dependent launch (Hopper). The kernels of a decode step are launched with
// LaunchDependent: each may be scheduled while the kernel before it in the stream still runs, so
// the gap between kernels (launch and ramp-up) is hidden. Every such kernel calls PdlWait() before
// it reads or writes anything another kernel touches (the GEMV first issues its weight loads,
// which depend on nothing; decode attention the K/V rows of earlier steps), then
// PdlLaunchDependents() to let the next one be scheduled: at most two kernels overlap. Kernels
// launched without the attribute (cuBLAS, the rest) keep the usual stream order; without it, or
// before sm_90, both instructions do nothing. CUDA graphs record these as programmatic edges.
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

// Lets the next kernel (if launched with LaunchDependent) be scheduled now. Call after PdlWait().
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
