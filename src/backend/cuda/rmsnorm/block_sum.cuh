// Helpers of the row-norm kernels: BlockSum (the sum of one float per thread over a block of up
// to 1024 threads, returned to every thread) and the block size for a row length.
#pragma once

#include <cstdint>

#include "backend/cuda/launch.cuh"

namespace forge::cuda {

// Values per thread a norm kernel keeps in registers between its two passes.
inline constexpr int kNormCached = 4;

// Threads per row: enough that a row of `dim` fits kNormCached values per thread, 128..1024.
inline int NormThreads(int64_t dim) {
  int t = 128;
  while (t < 1024 && t * int64_t{kNormCached} < dim) t *= 2;
  return t;
}

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
