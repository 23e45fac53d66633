// Small helpers shared by the CUDA op launchers: grid sizing and warp reductions.
#pragma once

#include <cstdint>

namespace forge::cuda {

inline unsigned GridFor(int64_t n, int threads, int64_t max_blocks = 65535 * 4) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > max_blocks ? max_blocks : b));
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
