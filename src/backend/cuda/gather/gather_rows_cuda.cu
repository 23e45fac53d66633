// gather_rows_cuda: one block per output row.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

__global__ void gather_rows_kernel(GatherRowsParams p) {
  const int64_t i = blockIdx.x;
  const float* src = p.src + static_cast<int64_t>(p.indices[i]) * p.row_len;
  for (int64_t j = threadIdx.x; j < p.row_len; j += blockDim.x) p.dst[i * p.row_len + j] = src[j];
}

}  // namespace

Status gather_rows_cuda(const GatherRowsParams& p) {
  if (p.n == 0) return Status::Ok();
  gather_rows_kernel<<<static_cast<unsigned>(p.n), 256>>>(p);
  CUDA_RETURN_IF_LAUNCH_ERROR("gather_rows_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
