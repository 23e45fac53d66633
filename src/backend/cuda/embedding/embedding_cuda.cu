// embedding_cuda: gathers rows of the prepared table (F32, F16 or BF16) into the F32 residual
// stream; one block per token. A table holding the vocabulary slice row_offset .. row_offset +
// rows writes zeros for the ids outside it; an id outside the vocabulary gives a row of NaN (the
// table is never read out of bounds).
#include "backend/cuda/embedding/embedding_cuda.h"

#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

template <typename T>
__global__ void embedding_kernel(const T* table, const int32_t* ids, int64_t dim, int64_t row_elems,
                                 int64_t row_offset, int64_t table_rows, int64_t n_vocab,
                                 float scale, float* out) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  const int64_t t = blockIdx.x;
  const int64_t id = ids[t];
  const int64_t row = id - row_offset;
  if (row < 0 || row >= table_rows) {
    const float fill = id >= 0 && id < n_vocab ? 0.0f : __int_as_float(0x7fc00000);
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) out[t * dim + i] = fill;
    return;
  }
  const T* src = table + row * row_elems;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    out[t * dim + i] = scale == 1.0f ? ToF32(src[i]) : ToF32(src[i]) * scale;
  }
}

__global__ void scale_kernel(float* x, int64_t n, float s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i] *= s;
  }
}

}  // namespace

Status scale_f32_cuda(float* x, int64_t n, float s, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  scale_kernel<<<GridFor(n, 256), 256, 0, stream>>>(x, n, s);
  CUDA_RETURN_IF_LAUNCH_ERROR("scale_kernel");
  return Status::Ok();
}

Status embedding_cuda(const EmbeddingParams& p, cudaStream_t stream) {
  DType t;
  switch (p.table.type) {
    case GgmlType::kF32:
      t = DType::kF32;
      break;
    case GgmlType::kF16:
      t = DType::kF16;
      break;
    case GgmlType::kBF16:
      t = DType::kBF16;
      break;
    default:
      return UnimplementedError("embedding_cuda: table type " +
                                std::string(TypeName(p.table.type)));
  }
  const int64_t n_vocab = p.n_vocab > 0 ? p.n_vocab : p.table.rows;
  if (p.row_offset < 0 || p.row_offset + p.table.rows > n_vocab) {
    return InvalidArgumentError("embedding_cuda: rows " + std::to_string(p.row_offset) + " .. " +
                                std::to_string(p.row_offset + p.table.rows) +
                                " outside the vocabulary of " + std::to_string(n_vocab));
  }
  if (p.n_tokens == 0) return Status::Ok();
  return DispatchDType(t, [&](auto zero) {
    using T = decltype(zero);
    CUDA_RETURN_IF_ERROR(
        LaunchDependent(embedding_kernel<T>, dim3(static_cast<unsigned>(p.n_tokens)), dim3(256), 0,
                        stream, reinterpret_cast<const T*>(p.table.data), p.ids, p.table.cols,
                        p.table.row_bytes / static_cast<int64_t>(sizeof(T)), p.row_offset,
                        p.table.rows, n_vocab, p.scale, p.out));
    CUDA_RETURN_IF_LAUNCH_ERROR("embedding_kernel");
    return Status::Ok();
  });
}

}  // namespace forge::cuda
