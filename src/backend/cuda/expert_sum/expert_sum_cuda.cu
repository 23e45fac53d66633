// expert_sum_cuda: a thread per output element, the k slots summed in slot order in F32.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

__global__ void expert_sum_kernel(ExpertSumParams p, int64_t total) {
  for (int64_t w = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; w < total;
       w += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = w / p.n, i = w % p.n;
    float acc = 0.0f;
    for (int64_t s = 0; s < p.k; ++s) acc += p.weights[t * p.k + s] * p.y[(t * p.k + s) * p.n + i];
    if (p.shared != nullptr) {
      const float g = p.shared_gate != nullptr ? 1.0f / (1.0f + expf(-p.shared_gate[t])) : 1.0f;
      acc += g * p.shared[w];
    }
    p.out[w] = acc;
  }
}

}  // namespace

Status expert_sum_cuda(const ExpertSumParams& p, cudaStream_t stream) {
  if (p.n_tokens < 0 || p.k < 1 || p.n < 0) return InvalidArgumentError("expert_sum: bad counts");
  const int64_t total = p.n_tokens * p.n;
  if (total == 0) return Status::Ok();
  expert_sum_kernel<<<GridFor(total, 256), 256, 0, stream>>>(p, total);
  CUDA_RETURN_IF_LAUNCH_ERROR("expert_sum_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
