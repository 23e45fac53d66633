// kv_write_cuda: one block per token copies its K and V rows to their slot (slot < 0: skipped).
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

__global__ void kv_write_kernel(KvWriteParams p, int64_t row, int64_t ks, int64_t vs) {
  const int64_t t = blockIdx.x;
  const int64_t slot = p.slot_mapping[t];
  if (slot < 0 || slot >= p.num_slots) return;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    p.k_cache[slot * row + i] = p.k[t * ks + i];
    p.v_cache[slot * row + i] = p.v[t * vs + i];
  }
}

}  // namespace

Status kv_write_cuda(const KvWriteParams& p) {
  if (p.n_tokens == 0) return Status::Ok();
  const int64_t row = p.n_kv_heads * p.head_dim;
  kv_write_kernel<<<static_cast<unsigned>(p.n_tokens), 128>>>(p, row, p.k_stride ? p.k_stride : row,
                                                              p.v_stride ? p.v_stride : row);
  CUDA_RETURN_IF_LAUNCH_ERROR("kv_write_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
