// pool_cuda: one block per sequence, its bounds read from cu_seqlens on the device; thread i
// takes columns i, i + blockDim.x, ... (coalesced over a token's row): the mean sums the
// sequence's rows in order in F32, CLS and last copy one row. With normalize the block sums the
// squares of its output row and scales it. A sequence whose bounds pool_ref refuses (a negative
// start, an end before it) pools to a zero row here: the kernel has no way to say so.
#include <algorithm>
#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rmsnorm/block_sum.cuh"

namespace forge::cuda {
namespace {

__global__ void __launch_bounds__(1024)
    pool_kernel(const float* x, const int32_t* cu_seqlens, float* out, int64_t dim,
                PoolingType type, bool normalize) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  const int64_t s = blockIdx.x;
  const int64_t begin = cu_seqlens[s], end = cu_seqlens[s + 1];
  const int64_t n = begin >= 0 && end > begin ? end - begin : 0;
  const int64_t row = type == PoolingType::kCls ? begin : end - 1;  // CLS and last
  float* o = out + s * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = 0.0f;
    if (n > 0 && type == PoolingType::kMean) {
      float acc = 0.0f;
      for (int64_t t = begin; t < end; ++t) acc += x[t * dim + i];
      v = acc / static_cast<float>(n);
    } else if (n > 0) {
      v = x[row * dim + i];
    }
    o[i] = v;
    ss += v * v;
  }
  if (!normalize) return;  // block-uniform
  const float total = BlockSum(ss);
  const float scale = total > 0.0f ? 1.0f / sqrtf(total) : 0.0f;
  // Each thread scales the elements it wrote.
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] *= scale;
}

}  // namespace

Status pool_cuda(const PoolParams& p, cudaStream_t stream) {
  RETURN_IF_ERROR(ValidatePool(p));
  if (p.n_seqs == 0) return Status::Ok();
  if (p.n_seqs > INT32_MAX) {
    return InvalidArgumentError("pool_cuda: " + std::to_string(p.n_seqs) + " sequences");
  }
  // A warp multiple (BlockSum), one column a thread up to 1024 columns.
  const int threads = static_cast<int>(std::min<int64_t>(1024, (p.dim + 31) / 32 * 32));
  CUDA_RETURN_IF_ERROR(LaunchDependent(pool_kernel, dim3(static_cast<unsigned>(p.n_seqs)),
                                       dim3(threads), 0, stream, p.x, p.cu_seqlens, p.out, p.dim,
                                       p.type, p.normalize));
  CUDA_RETURN_IF_LAUNCH_ERROR("pool_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
