// swiglu_cuda, add_bias_cuda and convert_f32_cuda: elementwise, grid-stride, F32 arithmetic.
// swiglu_cuda over rows of a multiple of 8 (16-byte aligned): a thread per 8 outputs, 16-byte
// loads and stores, rows on grid y (each output computed as by the element-wise kernel).
// swiglu_cuda with out_q (one F16 row): a thread per 8 outputs, which then also form the row in
// the one-row DP4A GEMV's form (act_quant.cuh) from the F16 values it wrote.
// Without up (SwigluParams::up null) every kernel computes act(gate) alone (BERT's FFN).
#include <algorithm>
#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/act_quant/act_quant.cuh"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

// act(g) * u (swiglu.h): every swiglu kernel's output (so the row kernels match the element-wise
// one); ungated, u is 1 (an exact product). The activation is a uniform branch, not a template
// parameter.
__device__ __forceinline__ float Swiglu(float g, float u, GluAct act) {
  if (act == GluAct::kGeluTanh) {
    return 0.5f * g * (1.0f + tanhf(0.7978845608f * (g + 0.044715f * g * g * g))) * u;
  }
  // x / 2 * (1 + erf(x / sqrt 2)) as x / 2 * erfc(-x / sqrt 2): no cancellation for x < 0.
  if (act == GluAct::kGeluErf) return 0.5f * g * erfcf(-0.70710678118f * g) * u;
  return g / (1.0f + expf(-g)) * u;
}

template <typename Tin, typename Tout>
__global__ void swiglu_kernel(const Tin* gate, const Tin* up, Tout* out, int64_t dim, int64_t gs,
                              int64_t us, int64_t total, GluAct act) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  for (int64_t w = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; w < total;
       w += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = w / dim, i = w % dim;
    const float u = up != nullptr ? ToF32(up[t * us + i]) : 1.0f;
    out[w] = FromF32<Tout>(Swiglu(ToF32(gate[t * gs + i]), u, act));
  }
}

// Rows of dim (a multiple of 8) outputs, row strides multiples of 8, 16-byte aligned: thread x of
// grid row y takes the 8 outputs [8x, 8x + 8) of rows y, y + gridDim.y, ...
template <typename Tin, typename Tout>
__global__ void swiglu_rows_kernel(const Tin* gate, const Tin* up, Tout* out, int dim, int64_t gs,
                                   int64_t us, int64_t n_tokens, GluAct act) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (i >= dim) return;
  for (int64_t t = blockIdx.y; t < n_tokens; t += gridDim.y) {
    float g[8], u[8] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, o[8];
    Load8(gate + t * gs + i, g);
    if (up != nullptr) Load8(up + t * us + i, u);
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = Swiglu(g[e], u[e], act);
    Store8(out + t * dim + i, o);
  }
}

// One row of dim (a multiple of 256) outputs; thread g computes outputs [8g, 8g + 8) and forms
// that unit from the F16 values in its registers (threads past the end: whole warps).
template <typename Tin>
__global__ void swiglu_quant_kernel(const Tin* gate, const Tin* up, __half* out, int8_t* out_q,
                                    int dim, GluAct act) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g * 8 >= dim) return;
  float f[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float u = up != nullptr ? ToF32(up[g * 8 + i]) : 1.0f;
    f[i] = Swiglu(ToF32(gate[g * 8 + i]), u, act);
  }
  StoreHalf8Rounded(out + g * 8, f);
  QuantizeUnit(f, g * 8, dim, out_q);
}

template <typename T>
__global__ void add_bias_kernel(T* out, const float* bias, int64_t n, int64_t stride,
                                int64_t total) {
  for (int64_t w = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; w < total;
       w += int64_t{gridDim.x} * blockDim.x) {
    T& o = out[(w / n) * stride + w % n];
    o = FromF32<T>(ToF32(o) + bias[w % n]);
  }
}

template <typename T>
__global__ void convert_kernel(const float* in, T* out, int64_t n) {
  for (int64_t w = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; w < n;
       w += int64_t{gridDim.x} * blockDim.x) {
    out[w] = FromF32<T>(in[w]);
  }
}

}  // namespace

Status swiglu_cuda(const SwigluParams& p, cudaStream_t stream) {
  if (p.act != GluAct::kSilu && p.act != GluAct::kGeluTanh && p.act != GluAct::kGeluErf) {
    return InvalidArgumentError("swiglu_cuda: unknown activation " +
                                std::to_string(static_cast<int>(p.act)));
  }
  const int64_t total = p.n_tokens * p.dim;
  if (total == 0) return Status::Ok();
  if (p.out_q != nullptr) {
    if (p.n_tokens != 1 || p.out_type != DType::kF16 || p.dim % 256 != 0 ||
        p.dim > (int64_t{1} << 24) || !IsAligned(p.out_q, 16) || !IsAligned(p.out, 16)) {
      return InvalidArgumentError(
          "swiglu_cuda: out_q takes one F16 row of a multiple of 256 "
          "(16-byte aligned); got " +
          std::to_string(p.n_tokens) + " rows of " + std::to_string(p.dim) + " " +
          DTypeName(p.out_type));
    }
    // Every thread of the grid takes part (a multiple of 32 of them, one 8-output unit each).
    const unsigned blocks = static_cast<unsigned>((p.dim / 8 + 255) / 256);
    return DispatchDType(p.in_type, [&](auto in_zero) {
      using Tin = decltype(in_zero);
      CUDA_RETURN_IF_ERROR(LaunchDependent(
          swiglu_quant_kernel<Tin>, dim3(blocks), dim3(256), 0, stream,
          static_cast<const Tin*>(p.gate), static_cast<const Tin*>(p.up),
          static_cast<__half*>(p.out), static_cast<int8_t*>(p.out_q), static_cast<int>(p.dim),
          p.act));
      CUDA_RETURN_IF_LAUNCH_ERROR("swiglu_quant_kernel");
      return Status::Ok();
    });
  }
  const int64_t gs = p.gate_stride ? p.gate_stride : p.dim;
  const int64_t us = p.up_stride ? p.up_stride : p.dim;
  const bool rows = p.dim % 8 == 0 && p.dim <= (int64_t{1} << 30) && gs % 8 == 0 && us % 8 == 0 &&
                    IsAligned(p.gate, 16) && IsAligned(p.up, 16) && IsAligned(p.out, 16);
  return DispatchDType(p.in_type, [&](auto in_zero) {
    return DispatchDType(p.out_type, [&](auto out_zero) {
      using Tin = decltype(in_zero);
      using Tout = decltype(out_zero);
      if (rows) {
        const unsigned bx = static_cast<unsigned>((p.dim / 8 + 255) / 256);
        const unsigned by = static_cast<unsigned>(std::min<int64_t>(p.n_tokens, 65535));
        CUDA_RETURN_IF_ERROR(LaunchDependent(
            swiglu_rows_kernel<Tin, Tout>, dim3(bx, by), dim3(256), 0, stream,
            static_cast<const Tin*>(p.gate), static_cast<const Tin*>(p.up),
            static_cast<Tout*>(p.out), static_cast<int>(p.dim), gs, us, p.n_tokens, p.act));
        CUDA_RETURN_IF_LAUNCH_ERROR("swiglu_rows_kernel");
        return Status::Ok();
      }
      CUDA_RETURN_IF_ERROR(LaunchDependent(swiglu_kernel<Tin, Tout>, dim3(GridFor(total, 256)),
                                           dim3(256), 0, stream, static_cast<const Tin*>(p.gate),
                                           static_cast<const Tin*>(p.up), static_cast<Tout*>(p.out),
                                           p.dim, gs, us, total, p.act));
      CUDA_RETURN_IF_LAUNCH_ERROR("swiglu_kernel");
      return Status::Ok();
    });
  });
}

Status add_bias_cuda(void* out, DType out_type, const float* bias, int64_t m, int64_t n,
                     int64_t stride, cudaStream_t stream) {
  if (m * n == 0) return Status::Ok();
  return DispatchDType(out_type, [&](auto zero) {
    using T = decltype(zero);
    add_bias_kernel<T>
        <<<GridFor(m * n, 256), 256, 0, stream>>>(static_cast<T*>(out), bias, n, stride, m * n);
    CUDA_RETURN_IF_LAUNCH_ERROR("add_bias_kernel");
    return Status::Ok();
  });
}

Status convert_f32_cuda(const float* in, void* out, DType to, int64_t n, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  return DispatchDType(to, [&](auto zero) {
    using T = decltype(zero);
    convert_kernel<T><<<GridFor(n, 256), 256, 0, stream>>>(in, static_cast<T*>(out), n);
    CUDA_RETURN_IF_LAUNCH_ERROR("convert_kernel");
    return Status::Ok();
  });
}

}  // namespace forge::cuda
