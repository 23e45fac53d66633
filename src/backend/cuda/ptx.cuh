// PTX primitives the tensor-core and quantized kernels are built from: f16x2 arithmetic, the
// m16n8k16 MMA, cp.async copies, one-instruction bit selects, half-float bit helpers, and the
// Q4_K / Q5_K packed scales.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace forge::cuda::ptx {

// (a & b) | c in one LOP3 (b a mask, c the f16x2 magic bits: gemv_quant_fragments.cuh's kMagic2).
__device__ __forceinline__ uint32_t AndOr(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// Q4_K / Q5_K: the 6-bit scales (*sc) and mins (*mn) of sub-blocks 4c .. 4c + 3 as bytes, from the
// super-block header's words y, z, w (its packed scales[0..3], [4..7], [8..11]).
__device__ __forceinline__ void KQuantScalesMins(const uint4& hdr, int c, uint32_t* sc,
                                                 uint32_t* mn) {
  if (c == 0) {  // sub-blocks 0..3: low 6 bits of scales[0..3], scales[4..7]
    *sc = hdr.y & 0x3F3F3F3Fu;
    *mn = hdr.z & 0x3F3F3F3Fu;
  } else {  // 4..7: low nibbles of scales[8..11] and top two bits of scales[0..3] / [4..7]
    *sc = (hdr.w & 0x0F0F0F0Fu) | ((hdr.y >> 2) & 0x30303030u);
    *mn = ((hdr.w >> 4) & 0x0F0F0F0Fu) | ((hdr.z >> 2) & 0x30303030u);
  }
}

__device__ __forceinline__ uint32_t Hadd2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("add.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t Hmul2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t Hfma2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// d += A * B for A 16x16 (a0: rows 0-7, k 0-7; a1: rows 8-15, k 0-7; a2, a3: k 8-15) and B 16x8.
__device__ __forceinline__ void Mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                    uint32_t a3, uint2 b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b.x), "r"(b.y));
}

// 16 bytes global -> shared (addresses 16-byte aligned), the last 16 - src_bytes zero-filled.
__device__ __forceinline__ void CpAsync16(uint32_t smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint32_t HalfBitsOf(float v) {
  return __half_as_ushort(__float2half_rn(v));
}
// hi = the F16 nearest v; *rest = v - hi (exact in F32).
__device__ __forceinline__ uint32_t SplitHalf(float v, float* rest) {
  const __half h = __float2half_rn(v);
  *rest = v - __half2float(h);
  return __half_as_ushort(h);
}

}  // namespace forge::cuda::ptx
