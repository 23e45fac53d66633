// add_kernel: a grid-stride elementwise add, 4 floats per thread where aligned.
#include "backend/cuda/add/add_cuda.h"
#include "backend/cuda/cuda_check.cuh"

namespace forge::cuda {
namespace {

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    out[i] = a[i] + b[i];
  }
}

}  // namespace

Status add_cuda(const AddParams& p, cudaStream_t stream) {
  if (p.n < 0) return InvalidArgumentError("add_cuda: n = " + std::to_string(p.n));
  if (p.n == 0) return Status::Ok();
  int threads = 256;
  int64_t blocks = std::min<int64_t>((p.n + threads - 1) / threads, 65536);
  add_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(p.a, p.b, p.out, p.n);
  CUDA_RETURN_IF_LAUNCH_ERROR("add_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
