// rmsnorm_cuda: one block of 256 threads per row; the sum of squares reduced in float.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

__global__ void rmsnorm_kernel(const float* x, const float* w, float* out, int64_t dim,
                               float eps) {
  const int64_t r = blockIdx.x;
  const float* xr = x + r * dim;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  __shared__ float partial[32];
  ss = WarpSum(ss);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.0f;
    v = WarpSum(v);
    if (threadIdx.x == 0) partial[0] = v;
  }
  __syncthreads();
  const float scale = rsqrtf(partial[0] / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) out[r * dim + i] = xr[i] * scale * w[i];
}

}  // namespace

Status rmsnorm_cuda(const RmsNormParams& p) {
  if (p.n_rows == 0) return Status::Ok();
  rmsnorm_kernel<<<static_cast<unsigned>(p.n_rows), 256>>>(p.x, p.weight, p.out, p.dim, p.eps);
  CUDA_RETURN_IF_LAUNCH_ERROR("rmsnorm_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
