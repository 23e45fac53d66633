// Element types on the device: F32, F16 and BF16 loads and stores through F32 arithmetic, and
// DispatchDType, which runs a generic lambda with a value of the C++ type behind a DType.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "base/dtype.h"
#include "base/status.h"

namespace forge::cuda {

__device__ __forceinline__ float ToF32(float x) { return x; }
__device__ __forceinline__ float ToF32(__half x) { return __half2float(x); }
__device__ __forceinline__ float ToF32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T FromF32(float x);
template <>
__device__ __forceinline__ float FromF32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half FromF32<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromF32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

__device__ __forceinline__ uint32_t Bits16(__half h) { return __half_as_ushort(h); }
__device__ __forceinline__ uint32_t Bits16(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__device__ __forceinline__ float F32OfBits(uint32_t b, __half) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
}
__device__ __forceinline__ float F32OfBits(uint32_t b, __nv_bfloat16) {
  return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(b)));
}

// 8 consecutive elements at a 16-byte aligned address as F32 (one 16-byte load; two for F32).
template <typename T>
__device__ __forceinline__ void Load8(const T* p, float (&o)[8]) {
  if constexpr (std::is_same_v<T, float>) {
    const float4 a = reinterpret_cast<const float4*>(p)[0],
                 b = reinterpret_cast<const float4*>(p)[1];
    o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w, o[4] = b.x, o[5] = b.y, o[6] = b.z, o[7] = b.w;
  } else {
    const uint4 q = *reinterpret_cast<const uint4*>(p);
    const uint32_t u[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      o[2 * i] = F32OfBits(u[i] & 0xFFFFu, T{});
      o[2 * i + 1] = F32OfBits(u[i] >> 16, T{});
    }
  }
}

// 8 values stored as T at a 16-byte aligned address (one 16-byte store; two for F32).
template <typename T>
__device__ __forceinline__ void Store8(T* p, const float (&v)[8]) {
  if constexpr (std::is_same_v<T, float>) {
    reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    uint32_t u[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      u[i] = Bits16(FromF32<T>(v[2 * i])) | (Bits16(FromF32<T>(v[2 * i + 1])) << 16);
    }
    *reinterpret_cast<uint4*>(p) = make_uint4(u[0], u[1], u[2], u[3]);
  }
}

// 8 values stored as F16 at a 16-byte aligned address (one 16-byte store); f becomes what was
// stored, as F32 (the values a row's GEMV form is computed from, act_quant.cuh).
__device__ __forceinline__ void StoreHalf8Rounded(__half* p, float (&f)[8]) {
  __align__(16) __half h[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    h[i] = FromF32<__half>(f[i]);
    f[i] = __half2float(h[i]);
  }
  *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(h);
}

// f(T{}) for T = float, __half or __nv_bfloat16; f returns Status.
template <typename F>
Status DispatchDType(DType t, F&& f) {
  switch (t) {
    case DType::kF32:
      return f(float{});
    case DType::kF16:
      return f(__half{});
    case DType::kBF16:
      return f(__nv_bfloat16{});
  }
  return InvalidArgumentError("unknown dtype");
}

}  // namespace forge::cuda
