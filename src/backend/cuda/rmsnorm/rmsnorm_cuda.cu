// rmsnorm_cuda: one block of 256 threads per row; the sum of squares reduced in float. Input
// and output may each be F32, F16 or BF16.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/rmsnorm/block_sum.cuh"

namespace forge::cuda {
namespace {

template <typename Tin, typename Tout>
__global__ void rmsnorm_kernel(const Tin* x, const float* w, Tout* out, int64_t dim, float eps) {
  const int64_t r = blockIdx.x;
  const Tin* xr = x + r * dim;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = ToF32(xr[i]);
    ss += v * v;
  }
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    out[r * dim + i] = FromF32<Tout>(ToF32(xr[i]) * scale * w[i]);
  }
}

}  // namespace

Status rmsnorm_cuda(const RmsNormParams& p, cudaStream_t stream) {
  if (p.n_rows == 0) return Status::Ok();
  return DispatchDType(p.x_type, [&](auto x_zero) {
    return DispatchDType(p.out_type, [&](auto out_zero) {
      using Tin = decltype(x_zero);
      using Tout = decltype(out_zero);
      rmsnorm_kernel<Tin, Tout><<<static_cast<unsigned>(p.n_rows), 256, 0, stream>>>(
          static_cast<const Tin*>(p.x), p.weight, static_cast<Tout*>(p.out), p.dim, p.eps);
      CUDA_RETURN_IF_LAUNCH_ERROR("rmsnorm_kernel");
      return Status::Ok();
    });
  });
}

}  // namespace forge::cuda
