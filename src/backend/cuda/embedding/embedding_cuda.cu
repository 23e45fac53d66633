// embedding_cuda: gathers F32 rows of the (prepared, F32) table; one block per token.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

__global__ void embedding_kernel(const float* table, const int32_t* ids, int64_t dim,
                                 int64_t row_floats, float* out) {
  const int64_t t = blockIdx.x;
  const float* src = table + static_cast<int64_t>(ids[t]) * row_floats;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) out[t * dim + i] = src[i];
}

}  // namespace

Status embedding_cuda(const EmbeddingParams& p) {
  if (p.table.type != GgmlType::kF32) {
    return UnimplementedError("embedding_cuda: table type " + std::string(TypeName(p.table.type)));
  }
  if (p.n_tokens == 0) return Status::Ok();
  embedding_kernel<<<static_cast<unsigned>(p.n_tokens), 256>>>(
      reinterpret_cast<const float*>(p.table.data), p.ids, p.table.cols, p.table.row_bytes / 4,
      p.out);
  CUDA_RETURN_IF_LAUNCH_ERROR("embedding_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
