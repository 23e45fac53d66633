// layernorm_cuda: one block per row (sized like rmsnorm_cuda's: up to kNormCached values per
// thread kept in registers between the passes). The F32 row takes the delta, then add_row, and
// is written back; the mean is summed in F32, then the corrected two-pass variance: sum((x -
// mean)^2) less the square of sum(x - mean) over the row (the rounding of the first mean), both
// reduced in one block sum. The normed row goes to out (F32) and, where asked, to out_cast in F32,
// F16 or BF16.
#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rmsnorm/block_sum.cuh"

namespace forge::cuda {
namespace {

// The sums of a and b over the block (up to 1024 threads, a multiple of 32), to every thread.
__device__ __forceinline__ float2 BlockSum2(float a, float b) {
  __shared__ float2 partial[32];
  a = WarpSum(a);
  b = WarpSum(b);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = make_float2(a, b);
  __syncthreads();
  if (threadIdx.x < 32) {
    float2 s = threadIdx.x < ((blockDim.x + 31) >> 5) ? partial[threadIdx.x] : make_float2(0, 0);
    s.x = WarpSum(s.x);
    s.y = WarpSum(s.y);
    if (threadIdx.x == 0) partial[0] = s;
  }
  __syncthreads();
  return partial[0];
}

// Block r normalizes row r. Each thread reads back only the x elements it wrote itself, and
// writes out[i] (which may be x[i]) after its last read of x[i]. cast: null, or the row in Tc.
template <typename Tc>
__global__ void __launch_bounds__(1024)
    layernorm_kernel(float* x, const float* delta, const float* add_row, const float* w,
                     const float* bias, float* out, Tc* cast, int64_t dim, float eps) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  const int64_t r = blockIdx.x;
  float* xr = x + r * dim;
  const float* dr = delta != nullptr ? delta + r * dim : nullptr;
  const bool adds = dr != nullptr || add_row != nullptr;  // x changes: written back
  float v[kNormCached];
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kNormCached; ++j) {
    const int64_t i = threadIdx.x + int64_t{j} * blockDim.x;
    v[j] = 0.0f;
    if (i < dim) {
      v[j] = xr[i];
      if (dr != nullptr) v[j] += dr[i];
      if (add_row != nullptr) v[j] += add_row[i];
      if (adds) xr[i] = v[j];
    }
    sum += v[j];
  }
  for (int64_t i = threadIdx.x + int64_t{kNormCached} * blockDim.x; i < dim; i += blockDim.x) {
    float val = xr[i];
    if (dr != nullptr) val += dr[i];
    if (add_row != nullptr) val += add_row[i];
    if (adds) xr[i] = val;
    sum += val;
  }
  const float n = static_cast<float>(dim);
  const float mean0 = BlockSum(sum) / n;
  float c = 0.0f, sq = 0.0f;  // sums of (x - mean0) and its square
#pragma unroll
  for (int j = 0; j < kNormCached; ++j) {
    const int64_t i = threadIdx.x + int64_t{j} * blockDim.x;
    if (i < dim) {
      const float d = v[j] - mean0;
      c += d;
      sq += d * d;
    }
  }
  for (int64_t i = threadIdx.x + int64_t{kNormCached} * blockDim.x; i < dim; i += blockDim.x) {
    const float d = xr[i] - mean0;
    c += d;
    sq += d * d;
  }
  const float2 s = BlockSum2(c, sq);
  const float shift = s.x / n;  // the first mean's rounding
  const float mean = mean0 + shift;
  const float var = fmaxf(s.y / n - shift * shift, 0.0f);
  const float inv = rsqrtf(var + eps);
  float* o = out + r * dim;
  Tc* oc = cast != nullptr ? cast + r * dim : nullptr;
#pragma unroll
  for (int j = 0; j < kNormCached; ++j) {
    const int64_t i = threadIdx.x + int64_t{j} * blockDim.x;
    if (i < dim) {
      float y = (v[j] - mean) * inv * w[i];
      if (bias != nullptr) y += bias[i];
      o[i] = y;
      if (oc != nullptr) oc[i] = FromF32<Tc>(y);
    }
  }
  for (int64_t i = threadIdx.x + int64_t{kNormCached} * blockDim.x; i < dim; i += blockDim.x) {
    float y = (xr[i] - mean) * inv * w[i];
    if (bias != nullptr) y += bias[i];
    o[i] = y;
    if (oc != nullptr) oc[i] = FromF32<Tc>(y);
  }
}

}  // namespace

Status layernorm_cuda(const LayerNormParams& p, cudaStream_t stream) {
  RETURN_IF_ERROR(ValidateLayerNorm(p));
  if (p.n_rows == 0) return Status::Ok();
  if (p.n_rows > INT32_MAX) {
    return InvalidArgumentError("layernorm_cuda: " + std::to_string(p.n_rows) + " rows");
  }
  const int threads = NormThreads(p.dim);
  const DType ct = p.out_cast != nullptr ? p.cast_type : DType::kF32;
  return DispatchDType(ct, [&](auto zero) {
    using Tc = decltype(zero);
    CUDA_RETURN_IF_ERROR(LaunchDependent(
        layernorm_kernel<Tc>, dim3(static_cast<unsigned>(p.n_rows)), dim3(threads), 0, stream, p.x,
        p.delta, p.add_row, p.weight, p.bias, p.out, static_cast<Tc*>(p.out_cast), p.dim, p.eps));
    CUDA_RETURN_IF_LAUNCH_ERROR("layernorm_kernel");
    return Status::Ok();
  });
}

}  // namespace forge::cuda
