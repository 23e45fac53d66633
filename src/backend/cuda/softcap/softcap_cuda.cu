// softcap_cuda: x = cap * tanh(x / cap) in place, grid-stride, F32.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

__global__ void softcap_kernel(float* x, int64_t n, float cap) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i] = cap * tanhf(x[i] / cap);
  }
}

}  // namespace

Status softcap_cuda(const SoftCapParams& p, cudaStream_t stream) {
  RETURN_IF_ERROR(ValidateSoftCap(p));
  if (p.n == 0) return Status::Ok();
  softcap_kernel<<<GridFor(p.n, 256), 256, 0, stream>>>(p.x, p.n, p.cap);
  CUDA_RETURN_IF_LAUNCH_ERROR("softcap_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
