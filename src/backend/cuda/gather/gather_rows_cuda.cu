// gather_rows_cuda: one block per output row, any element type (copied as is).
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

template <typename T>
__global__ void gather_rows_kernel(const T* src, const int32_t* indices, int64_t row_len, T* dst) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  const int64_t i = blockIdx.x;
  const T* s = src + static_cast<int64_t>(indices[i]) * row_len;
  for (int64_t j = threadIdx.x; j < row_len; j += blockDim.x) dst[i * row_len + j] = s[j];
}

}  // namespace

Status gather_rows_cuda(const GatherRowsParams& p, cudaStream_t stream) {
  if (p.n == 0) return Status::Ok();
  return DispatchDType(p.dtype, [&](auto zero) {
    using T = decltype(zero);
    CUDA_RETURN_IF_ERROR(LaunchDependent(gather_rows_kernel<T>, dim3(static_cast<unsigned>(p.n)),
                                         dim3(256), 0, stream, static_cast<const T*>(p.src),
                                         p.indices, p.row_len, static_cast<T*>(p.dst)));
    CUDA_RETURN_IF_LAUNCH_ERROR("gather_rows_kernel");
    return Status::Ok();
  });
}

}  // namespace forge::cuda
