// rope_cuda: one thread per (token, head, rotated pair); angles in double like rope_ref; the
// rotation in F32 whatever the element type.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {
namespace {

template <typename T>
__global__ void rope_kernel(RopeParams p, int64_t stride, int64_t total) {
  const int64_t half = p.rope_dims / 2;
  for (int64_t w = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; w < total;
       w += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = w % half;
    const int64_t h = (w / half) % p.n_heads;
    const int64_t t = w / (half * p.n_heads);
    double inv = pow(static_cast<double>(p.theta), -2.0 * i / p.rope_dims) * p.freq_scale;
    if (p.freq_factors != nullptr) inv /= p.freq_factors[i];
    double s, c;
    sincos(p.positions[t] * inv, &s, &c);
    const float cs = static_cast<float>(c), sn = static_cast<float>(s);
    T* x = static_cast<T*>(p.x) + t * stride + h * p.head_dim;
    const int64_t a = p.style == RopeStyle::kAdjacent ? 2 * i : i;
    const int64_t b = p.style == RopeStyle::kAdjacent ? 2 * i + 1 : i + half;
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
  const int64_t total = p.n_tokens * p.n_heads * (p.rope_dims / 2);
  if (total == 0) return Status::Ok();
  const int64_t stride = p.token_stride ? p.token_stride : p.n_heads * p.head_dim;
  return DispatchDType(p.dtype, [&](auto zero) {
    rope_kernel<decltype(zero)><<<GridFor(total, 256), 256, 0, stream>>>(p, stride, total);
    CUDA_RETURN_IF_LAUNCH_ERROR("rope_kernel");
    return Status::Ok();
  });
}

}  // namespace forge::cuda
