// rmsnorm_cuda: one block per row (256 threads, 1024 for rows of 2048+ so that a lone decode row
// is spread over many threads); the first pass keeps up to kCached values per thread in
// registers for the second; the sum of squares is reduced in float. Input and output may each
// be F32, F16 or BF16.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rmsnorm/block_sum.cuh"

namespace forge::cuda {
namespace {

template <typename Tin, typename Tout>
__global__ void rmsnorm_kernel(const Tin* x, const float* w, Tout* out, int64_t dim, float eps) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  const int64_t r = blockIdx.x;
  const Tin* xr = x + r * dim;
  float v[kNormCached];
  float ss = 0;
#pragma unroll
  for (int j = 0; j < kNormCached; ++j) {
    const int64_t i = threadIdx.x + int64_t{j} * blockDim.x;
    v[j] = i < dim ? ToF32(xr[i]) : 0.0f;
    ss += v[j] * v[j];
  }
  for (int64_t i = threadIdx.x + int64_t{kNormCached} * blockDim.x; i < dim; i += blockDim.x) {
    const float val = ToF32(xr[i]);
    ss += val * val;
  }
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(dim) + eps);
#pragma unroll
  for (int j = 0; j < kNormCached; ++j) {
    const int64_t i = threadIdx.x + int64_t{j} * blockDim.x;
    if (i < dim) out[r * dim + i] = FromF32<Tout>(v[j] * scale * w[i]);
  }
  for (int64_t i = threadIdx.x + int64_t{kNormCached} * blockDim.x; i < dim; i += blockDim.x) {
    out[r * dim + i] = FromF32<Tout>(ToF32(xr[i]) * scale * w[i]);
  }
}

}  // namespace

Status rmsnorm_cuda(const RmsNormParams& p, cudaStream_t stream) {
  if (p.n_rows == 0) return Status::Ok();
  const int threads = NormThreads(p.dim);
  return DispatchDType(p.x_type, [&](auto x_zero) {
    return DispatchDType(p.out_type, [&](auto out_zero) {
      using Tin = decltype(x_zero);
      using Tout = decltype(out_zero);
      CUDA_RETURN_IF_ERROR(LaunchDependent(
          rmsnorm_kernel<Tin, Tout>, dim3(static_cast<unsigned>(p.n_rows)), dim3(threads), 0,
          stream, static_cast<const Tin*>(p.x), p.weight, static_cast<Tout*>(p.out), p.dim, p.eps));
      CUDA_RETURN_IF_LAUNCH_ERROR("rmsnorm_kernel");
      return Status::Ok();
    });
  });
}

}  // namespace forge::cuda
