// kv_write_cuda: one block per token copies its K and V rows to their slot (slot < 0: skipped),
// converting them to the cache's element type.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

template <typename Ts, typename T>
__global__ void kv_write_kernel(KvWriteParams p, int64_t row, int64_t ks, int64_t vs) {
  const int64_t t = blockIdx.x;
  const int64_t slot = p.slot_mapping[t];
  if (slot < 0 || slot >= p.num_slots) return;
  const Ts* k = static_cast<const Ts*>(p.k);
  const Ts* v = static_cast<const Ts*>(p.v);
  T* kc = static_cast<T*>(p.k_cache);
  T* vc = static_cast<T*>(p.v_cache);
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    kc[slot * row + i] = FromF32<T>(ToF32(k[t * ks + i]));
    vc[slot * row + i] = FromF32<T>(ToF32(v[t * vs + i]));
  }
}

}  // namespace

Status kv_write_cuda(const KvWriteParams& p, cudaStream_t stream) {
  if (p.n_tokens == 0) return Status::Ok();
  const int64_t row = p.n_kv_heads * p.head_dim;
  return DispatchDType(p.src_type, [&](auto src_zero) {
    return DispatchDType(p.dtype, [&](auto zero) {
      kv_write_kernel<decltype(src_zero), decltype(zero)>
          <<<static_cast<unsigned>(p.n_tokens), 128, 0, stream>>>(
              p, row, p.k_stride ? p.k_stride : row, p.v_stride ? p.v_stride : row);
      CUDA_RETURN_IF_LAUNCH_ERROR("kv_write_kernel");
      return Status::Ok();
    });
  });
}

}  // namespace forge::cuda
