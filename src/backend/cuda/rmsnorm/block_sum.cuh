// BlockSum: the sum of one float per thread over a block of up to 1024 threads, returned to
// every thread (two warp reductions through shared memory).
#pragma once

#include "backend/cuda/launch.cuh"

namespace forge::cuda {

__device__ __forceinline__ float BlockSum(float v) {
  __shared__ float partial[32];
  v = WarpSum(v);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = threadIdx.x < ((blockDim.x + 31) >> 5) ? partial[threadIdx.x] : 0.0f;
    s = WarpSum(s);
    if (threadIdx.x == 0) partial[0] = s;
  }
  __syncthreads();
  return partial[0];
}

}  // namespace forge::cuda
