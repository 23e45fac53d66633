// rope_cuda: one block per token; each thread owns one rotated pair, computes its angle's sine
// and cosine once in double (like rope_ref: positions up to 10^5+ need it) and rotates that pair
// in every head it covers, in F32 whatever the element type.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

template <typename T>
__global__ void rope_kernel(RopeParams p, int64_t stride) {
  const int64_t half = p.rope_dims / 2;
  const int64_t t = blockIdx.x;
  const int64_t heads_per_pass = blockDim.x / half;  // >= 1: blockDim is a multiple of half
  const int64_t i = threadIdx.x % half;
  const int64_t h0 = threadIdx.x / half;
  if (h0 >= heads_per_pass) return;
  double inv = pow(static_cast<double>(p.theta), -2.0 * i / p.rope_dims) * p.freq_scale;
  if (p.freq_factors != nullptr) inv /= p.freq_factors[i];
  double s, c;
  sincos(p.positions[t] * inv, &s, &c);
  const float cs = static_cast<float>(c), sn = static_cast<float>(s);
  const int64_t a = p.style == RopeStyle::kAdjacent ? 2 * i : i;
  const int64_t b = p.style == RopeStyle::kAdjacent ? 2 * i + 1 : i + half;
  for (int64_t h = h0; h < p.n_heads; h += heads_per_pass) {
    T* x = static_cast<T*>(p.x) + t * stride + h * p.head_dim;
    const float x0 = ToF32(x[a]), x1 = ToF32(x[b]);
    x[a] = FromF32<T>(x0 * cs - x1 * sn);
    x[b] = FromF32<T>(x0 * sn + x1 * cs);
  }
}

}  // namespace

Status rope_cuda(const RopeParams& p, cudaStream_t stream) {
  if (p.rope_dims <= 0 || p.rope_dims % 2 != 0 || p.rope_dims > p.head_dim) {
    return InvalidArgumentError("rope_cuda: rope_dims=" + std::to_string(p.rope_dims));
  }
  if (p.n_tokens == 0 || p.n_heads == 0) return Status::Ok();
  const int64_t half = p.rope_dims / 2;
  if (half > 1024)
    return InvalidArgumentError("rope_cuda: rope_dims=" + std::to_string(p.rope_dims));
  // Up to 256 threads (whole multiples of the pair count), never more heads than there are.
  const int64_t passes = std::max<int64_t>(1, std::min<int64_t>(256 / half, p.n_heads));
  const int threads = static_cast<int>(half * passes);
  const int64_t stride = p.token_stride ? p.token_stride : p.n_heads * p.head_dim;
  return DispatchDType(p.dtype, [&](auto zero) {
    rope_kernel<decltype(zero)>
        <<<static_cast<unsigned>(p.n_tokens), threads, 0, stream>>>(p, stride);
    CUDA_RETURN_IF_LAUNCH_ERROR("rope_kernel");
    return Status::Ok();
  });
}

}  // namespace forge::cuda
