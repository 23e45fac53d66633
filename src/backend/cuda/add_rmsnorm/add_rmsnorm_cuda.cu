// add_rmsnorm_cuda: one block of 256 threads per row; the F32 residual takes the delta and is
// written back, then normalized into the activation dtype.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/rmsnorm/block_sum.cuh"

namespace forge::cuda {
namespace {

template <typename Td, typename Tout>
__global__ void add_rmsnorm_kernel(float* residual, const Td* delta, const float* w, Tout* out,
                                   int64_t dim, float eps) {
  const int64_t r = blockIdx.x;
  float* xr = residual + r * dim;
  const Td* dr = delta + r * dim;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = xr[i] + ToF32(dr[i]);
    xr[i] = v;
    ss += v * v;
  }
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(dim) + eps);
  // Each thread reads back only the elements it wrote: no barrier needed for xr.
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    out[r * dim + i] = FromF32<Tout>(xr[i] * scale * w[i]);
  }
}

}  // namespace

Status add_rmsnorm_cuda(const AddRmsNormParams& p, cudaStream_t stream) {
  if (p.n_rows == 0) return Status::Ok();
  return DispatchDType(p.delta_type, [&](auto d_zero) {
    return DispatchDType(p.out_type, [&](auto out_zero) {
      using Td = decltype(d_zero);
      using Tout = decltype(out_zero);
      add_rmsnorm_kernel<Td, Tout><<<static_cast<unsigned>(p.n_rows), 256, 0, stream>>>(
          p.residual, static_cast<const Td*>(p.delta), p.weight, static_cast<Tout*>(p.out),
          p.dim, p.eps);
      CUDA_RETURN_IF_LAUNCH_ERROR("add_rmsnorm_kernel");
      return Status::Ok();
    });
  });
}

}  // namespace forge::cuda
