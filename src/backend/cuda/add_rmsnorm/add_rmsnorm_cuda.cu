// add_rmsnorm_cuda: one block per row; the F32 residual takes the delta and is written back, the
// sums kept in registers for the normalized output in the activation dtype; with out_q, also the
// row in the one-row DP4A GEMV's form (act_quant.cuh), computed from the F16 values just written.
// Rows of a multiple of 8 (16-byte aligned) move in 16-byte units (add_rmsnorm_vec_kernel); other
// rows take the element-wise kernel, sized like rmsnorm_cuda's.
#include <algorithm>
#include <string>
#include <type_traits>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/act_quant/act_quant.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"
#include "backend/cuda/rmsnorm/block_sum.cuh"

namespace forge::cuda {
namespace {

template <typename Td, typename Tout>
__global__ void __launch_bounds__(1024)
    add_rmsnorm_kernel(float* residual, const Td* delta, const float* w, Tout* out, int64_t dim,
                       float eps, int8_t* out_q) {
  const int64_t r = blockIdx.x;
  float* xr = residual + r * dim;
  const Td* dr = delta + r * dim;
  float v[kNormCached], wv[kNormCached];
  // The norm weights depend on no earlier kernel: loaded before waiting for it (pdl.cuh).
#pragma unroll
  for (int j = 0; j < kNormCached; ++j) {
    const int64_t i = threadIdx.x + int64_t{j} * blockDim.x;
    wv[j] = i < dim ? w[i] : 0.0f;
  }
  PdlWait();  // launched as a dependent: nothing another kernel writes is read or written before
  PdlLaunchDependents();
  float ss = 0;
#pragma unroll
  for (int j = 0; j < kNormCached; ++j) {
    const int64_t i = threadIdx.x + int64_t{j} * blockDim.x;
    v[j] = 0.0f;
    if (i < dim) {
      v[j] = xr[i] + ToF32(dr[i]);
      xr[i] = v[j];
    }
    ss += v[j] * v[j];
  }
  for (int64_t i = threadIdx.x + int64_t{kNormCached} * blockDim.x; i < dim; i += blockDim.x) {
    const float val = xr[i] + ToF32(dr[i]);
    xr[i] = val;
    ss += val * val;
  }
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(dim) + eps);
#pragma unroll
  for (int j = 0; j < kNormCached; ++j) {
    const int64_t i = threadIdx.x + int64_t{j} * blockDim.x;
    if (i < dim) out[r * dim + i] = FromF32<Tout>(v[j] * scale * wv[j]);
  }
  // Each thread reads back only the residual elements it wrote itself.
  for (int64_t i = threadIdx.x + int64_t{kNormCached} * blockDim.x; i < dim; i += blockDim.x) {
    out[r * dim + i] = FromF32<Tout>(xr[i] * scale * w[i]);
  }
  if constexpr (std::is_same_v<Tout, __half>) {
    if (out_q != nullptr) {  // one row (the launcher checks): the block's writes, then the form
      __syncthreads();
      QuantizeUnits(out, static_cast<int>(dim / 8), 0, static_cast<int>(dim), out_q);
    }
  }
}

// Rows of dim (a multiple of 8, at most kVecUnits * 1024 units of 8) elements, 16-byte aligned:
// block r takes row r; thread t the 8-element units t, t + blockDim.x, ... (blockDim.x a
// multiple of 32), kept in registers through the norm and written with 16-byte stores. With
// out_q (one F16 row, the launcher checks), each unit is also formed (act_quant.cuh) from the
// F16 values written. The block size depends on dim alone, so a row's sums are added in the same
// order whether it is normalized alone or with others.
constexpr int kVecUnits = 2;

template <typename Td, typename Tout>
__global__ void __launch_bounds__(1024)
    add_rmsnorm_vec_kernel(float* residual, const Td* delta, const float* w, Tout* out, int dim,
                           float eps, int8_t* out_q) {
  const int units = dim / 8;
  const int64_t r = blockIdx.x;
  residual += r * dim;
  delta += r * dim;
  out += r * dim;
  float v[kVecUnits][8], wv[kVecUnits][8];
  // The norm weights depend on no earlier kernel: loaded before waiting for it (pdl.cuh).
#pragma unroll
  for (int q = 0; q < kVecUnits; ++q) {
    const int u = threadIdx.x + q * blockDim.x;
    if (u < units) Load8(w + u * 8, wv[q]);
  }
  PdlWait();  // launched as a dependent: nothing another kernel writes is read or written before
  PdlLaunchDependents();
  float ss = 0.0f;
#pragma unroll
  for (int q = 0; q < kVecUnits; ++q) {
    const int u = threadIdx.x + q * blockDim.x;
    if (u < units) {
      float d[8];
      Load8(residual + u * 8, v[q]);
      Load8(delta + u * 8, d);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        v[q][i] += d[i];
        ss += v[q][i] * v[q][i];
      }
      Store8(residual + u * 8, v[q]);
    }
  }
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(dim) + eps);
#pragma unroll
  for (int q = 0; q < kVecUnits; ++q) {
    const int u = threadIdx.x + q * blockDim.x;
    if (u >= units) break;  // whole warps where out_q: units and blockDim.x are multiples of 32
    float f[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = v[q][i] * scale * wv[q][i];
    if constexpr (std::is_same_v<Tout, __half>) {
      StoreHalf8Rounded(out + u * 8, f);
      if (out_q != nullptr) QuantizeUnit(f, u * 8, dim, out_q);
    } else {
      Store8(out + u * 8, f);
    }
  }
}

}  // namespace

Status add_rmsnorm_cuda(const AddRmsNormParams& p, cudaStream_t stream) {
  if (p.n_rows == 0) return Status::Ok();
  if (p.out_q != nullptr &&
      (p.n_rows != 1 || p.out_type != DType::kF16 || p.dim % 256 != 0 ||
       p.dim > (int64_t{1} << 24) || !IsAligned(p.out_q, 16) || !IsAligned(p.out, 16))) {
    return InvalidArgumentError(
        "add_rmsnorm_cuda: out_q takes one F16 row of a multiple of 256 "
        "(16-byte aligned); got " +
        std::to_string(p.n_rows) + " rows of " + std::to_string(p.dim) + " " +
        DTypeName(p.out_type));
  }
  if (p.dim % 8 == 0 && p.dim / 8 <= int64_t{kVecUnits} * 1024 && IsAligned(p.residual, 16) &&
      IsAligned(p.delta, 16) && IsAligned(p.weight, 16) && IsAligned(p.out, 16)) {
    const int units = static_cast<int>(p.dim / 8);
    const int threads = std::min(1024, (units + 31) / 32 * 32);
    return DispatchDType(p.delta_type, [&](auto d_zero) {
      return DispatchDType(p.out_type, [&](auto out_zero) {
        using Td = decltype(d_zero);
        using Tout = decltype(out_zero);
        CUDA_RETURN_IF_ERROR(
            LaunchDependent(add_rmsnorm_vec_kernel<Td, Tout>, dim3(static_cast<unsigned>(p.n_rows)),
                            dim3(threads), 0, stream, p.residual, static_cast<const Td*>(p.delta),
                            p.weight, static_cast<Tout*>(p.out), static_cast<int>(p.dim), p.eps,
                            static_cast<int8_t*>(p.out_q)));
        CUDA_RETURN_IF_LAUNCH_ERROR("add_rmsnorm_vec_kernel");
        return Status::Ok();
      });
    });
  }
  const int threads = NormThreads(p.dim);
  return DispatchDType(p.delta_type, [&](auto d_zero) {
    return DispatchDType(p.out_type, [&](auto out_zero) {
      using Td = decltype(d_zero);
      using Tout = decltype(out_zero);
      CUDA_RETURN_IF_ERROR(LaunchDependent(
          add_rmsnorm_kernel<Td, Tout>, dim3(static_cast<unsigned>(p.n_rows)), dim3(threads), 0,
          stream, p.residual, static_cast<const Td*>(p.delta), p.weight, static_cast<Tout*>(p.out),
          p.dim, p.eps, static_cast<int8_t*>(p.out_q)));
      CUDA_RETURN_IF_LAUNCH_ERROR("add_rmsnorm_kernel");
      return Status::Ok();
    });
  });
}

}  // namespace forge::cuda
