// gemv_cuda: out[m, n] = x[m, k] W[n, k]^T (+ bias) for a few activation rows (m <= 8) and F16 or
// BF16 weights, at memory speed: one warp per weight row, 16-byte loads of W streamed once,
// the m x rows of x read through L1, F32 sums reduced across the warp. Launched as a dependent
// (pdl.cuh): the first weight loads overlap the kernel that computes x.
#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/dtype.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/matmul/gemv_cuda.h"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

constexpr int kRowsPerBlock = 4;  // one warp each
constexpr int kVec = 8;           // halves per 16-byte load
constexpr int kUnroll = 8;        // loads in flight per lane

// Eight halves (one uint4) times eight halves, summed in F32.
template <typename T>
__device__ __forceinline__ float Dot8(const uint4& a, const uint4& b) {
  const T* x = reinterpret_cast<const T*>(&a);
  const T* y = reinterpret_cast<const T*>(&b);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kVec; ++i) s = fmaf(ToF32(x[i]), ToF32(y[i]), s);
  return s;
}

template <typename T, typename Tout, int M>
__global__ void __launch_bounds__(kRowsPerBlock * 32)
    gemv_kernel(const T* __restrict__ w, int64_t ldw, const T* __restrict__ x, int64_t ldx,
                const float* __restrict__ bias, Tout* __restrict__ out, int64_t ldo, int64_t n,
                int64_t k) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t{blockIdx.x} * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= n) return;
  const uint4* wr = reinterpret_cast<const uint4*>(w + row * ldw);
  const int64_t chunks = k / kVec;
  float acc[M];
#pragma unroll
  for (int i = 0; i < M; ++i) acc[i] = 0.0f;
  int64_t c = lane;
  // kUnroll independent 16-byte weight loads in flight per lane. The first round's are issued
  // before waiting for the kernel that writes x (pdl.cuh): weights stream in meanwhile.
  uint4 wv[kUnroll];
  if (c + 32 * (kUnroll - 1) < chunks) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) wv[u] = __ldcs(wr + c + 32 * u);  // streamed: read once
  }
  PdlWait();
  PdlLaunchDependents();
  while (c + 32 * (kUnroll - 1) < chunks) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int i = 0; i < M; ++i) {
        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + i * ldx) + c + 32 * u);
        acc[i] += Dot8<T>(wv[u], xv);
      }
    }
    c += 32 * kUnroll;
    if (c + 32 * (kUnroll - 1) < chunks) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) wv[u] = __ldcs(wr + c + 32 * u);
    }
  }
  for (; c < chunks; c += 32) {
    const uint4 wt = __ldcs(wr + c);
#pragma unroll
    for (int i = 0; i < M; ++i) {
      acc[i] += Dot8<T>(wt, __ldg(reinterpret_cast<const uint4*>(x + i * ldx) + c));
    }
  }
#pragma unroll
  for (int i = 0; i < M; ++i) {
    const float s = WarpSum(acc[i]);
    if (lane == 0) out[i * ldo + row] = FromF32<Tout>(s + (bias != nullptr ? bias[row] : 0.0f));
  }
}

template <typename T, typename Tout, int M>
void Launch(const MatmulParams& p, int64_t xs, int64_t os, cudaStream_t stream) {
  const int64_t n = p.w.rows, k = p.w.cols;
  const unsigned blocks = static_cast<unsigned>((n + kRowsPerBlock - 1) / kRowsPerBlock);
  LaunchDependent(gemv_kernel<T, Tout, M>, dim3(blocks), dim3(kRowsPerBlock * 32), 0, stream,
                  reinterpret_cast<const T*>(p.w.data),
                  p.w.row_bytes / static_cast<int64_t>(sizeof(T)), static_cast<const T*>(p.x), xs,
                  p.bias, static_cast<Tout*>(p.out), os, n, k);
}

template <typename T, typename Tout>
void LaunchM(const MatmulParams& p, int64_t xs, int64_t os, cudaStream_t stream) {
  switch (p.m) {
    case 1:
      return Launch<T, Tout, 1>(p, xs, os, stream);
    case 2:
      return Launch<T, Tout, 2>(p, xs, os, stream);
    case 3:
      return Launch<T, Tout, 3>(p, xs, os, stream);
    case 4:
      return Launch<T, Tout, 4>(p, xs, os, stream);
    case 5:
      return Launch<T, Tout, 5>(p, xs, os, stream);
    case 6:
      return Launch<T, Tout, 6>(p, xs, os, stream);
    case 7:
      return Launch<T, Tout, 7>(p, xs, os, stream);
    default:
      return Launch<T, Tout, 8>(p, xs, os, stream);
  }
}

}  // namespace

const char* GemvWhyNot(const MatmulParams& p, DType weight_type) {
  if (weight_type == DType::kF32) return "F32 weights";
  if (p.m < 1 || p.m > kGemvMaxRows) return "m outside 1..8";
  const int64_t xs = p.x_stride ? p.x_stride : p.w.cols;
  auto aligned16 = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  if (p.w.cols % kVec != 0 || p.w.row_bytes % 16 != 0 || xs % kVec != 0) {
    return "rows or stride not whole 16-byte chunks";
  }
  if (!aligned16(p.w.data) || !aligned16(p.x)) return "w or x not 16-byte aligned";
  return nullptr;
}

bool GemvApplies(const MatmulParams& p, DType weight_type) {
  return GemvWhyNot(p, weight_type) == nullptr;
}

Status gemv_cuda(const MatmulParams& p, DType weight_type, cudaStream_t stream) {
  if (!GemvApplies(p, weight_type)) {
    return InvalidArgumentError("gemv_cuda: m=" + std::to_string(p.m) +
                                " or the operands' alignment is outside the GEMV path");
  }
  const int64_t xs = p.x_stride ? p.x_stride : p.w.cols;
  const int64_t os = p.out_stride ? p.out_stride : p.w.rows;
  return DispatchDType(weight_type, [&](auto w_zero) {
    return DispatchDType(p.out_type, [&](auto out_zero) {
      LaunchM<decltype(w_zero), decltype(out_zero)>(p, xs, os, stream);
      CUDA_RETURN_IF_LAUNCH_ERROR("gemv_kernel");
      return Status::Ok();
    });
  });
}

}  // namespace forge::cuda
