// swiglu_cuda and add_bias_cuda: elementwise, grid-stride.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

__global__ void swiglu_kernel(SwigluParams p, int64_t gs, int64_t us, int64_t total) {
  for (int64_t w = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; w < total;
       w += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = w / p.dim, i = w % p.dim;
    const float g = p.gate[t * gs + i];
    p.out[w] = g / (1.0f + expf(-g)) * p.up[t * us + i];
  }
}

__global__ void add_bias_kernel(float* out, const float* bias, int64_t n, int64_t stride,
                                int64_t total) {
  for (int64_t w = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; w < total;
       w += int64_t{gridDim.x} * blockDim.x) {
    out[(w / n) * stride + w % n] += bias[w % n];
  }
}

}  // namespace

Status swiglu_cuda(const SwigluParams& p) {
  const int64_t total = p.n_tokens * p.dim;
  if (total == 0) return Status::Ok();
  swiglu_kernel<<<GridFor(total, 256), 256>>>(p, p.gate_stride ? p.gate_stride : p.dim,
                                              p.up_stride ? p.up_stride : p.dim, total);
  CUDA_RETURN_IF_LAUNCH_ERROR("swiglu_kernel");
  return Status::Ok();
}

Status add_bias_cuda(float* out, const float* bias, int64_t m, int64_t n, int64_t stride) {
  if (m * n == 0) return Status::Ok();
  add_bias_kernel<<<GridFor(m * n, 256), 256>>>(out, bias, n, stride, m * n);
  CUDA_RETURN_IF_LAUNCH_ERROR("add_bias_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
