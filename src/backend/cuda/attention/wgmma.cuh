// Warpgroup tensor-core primitives of Hopper (sm_90a, inline PTX): wgmma.mma_async m64nNk16 with
// F32 accumulators for F16/BF16 inputs (A from shared memory or registers, B from shared
// memory), its fence / commit / wait, the shared-memory matrix descriptor of the 128-byte swizzled
// layout, and the proxy fence that makes generic writes of shared memory visible to wgmma.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace forge::cuda::wgmma {

// The 128-byte swizzled tile layout both operands use: a tile of R rows by C columns (C a
// multiple of 64 halves) is C / 64 column chunks of R rows of 128 bytes; in row r the 16-byte
// unit u of a chunk sits at unit u ^ (r % 8). Chunks and tiles start 1024-byte aligned.
// Byte offset of element (r, c) within such a tile.
template <int R>
__device__ __forceinline__ uint32_t SwizzledOffset(int r, int c) {
  return static_cast<uint32_t>((c >> 6) * (R * 128) + r * 128 + ((((c >> 3) & 7) ^ (r & 7)) << 4) +
                               (c & 7) * 2);
}

// Matrix descriptor of a 128-byte swizzled operand at shared address addr (bytes): leading and
// stride byte offsets as wgmma reads them (in 16-byte units), layout type 1 (128-byte swizzle).
// K-major (rows along M or N, 16 halves of K within a row): stride = 1024 (8 rows of 128 bytes),
// leading unused. MN-major (rows along K, M or N within a row): stride = 1024 (8 K rows), leading
// = the byte distance between 64-column chunks.
__device__ __forceinline__ uint64_t SmemDesc(uint32_t addr, uint32_t leading, uint32_t stride) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((leading >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>((stride >> 4) & 0x3FFF) << 32;
  d |= uint64_t{1} << 62;
  return d;
}

__device__ __forceinline__ void Fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void Commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N committed groups of this warpgroup are still in flight.
template <int N>
__device__ __forceinline__ void Wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Generic-proxy writes of shared memory (st.shared, cp.async) made visible to wgmma's reads.
__device__ __forceinline__ void FenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving accesses of accumulator registers across wgmma instructions.
template <int N>
__device__ __forceinline__ void FenceOperands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// clang-format off
#define FORGE_WGMMA_ACC32_STR \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, " \
  "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FORGE_WGMMA_ACC32_OUT \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
  "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), \
  "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
  "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
  "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define FORGE_WGMMA_ACC64_STR \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, " \
  "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, " \
  "%34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, " \
  "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define FORGE_WGMMA_ACC64_OUT \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
  "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), \
  "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
  "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
  "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
  "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
  "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
  "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
  "+f"(d[63])
// clang-format on

#define FORGE_WGMMA_SS(N, TY, ACC_STR, ACC_OUT, A, B, SC)                                      \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SC                                         \
               ", 0;\n"                                                                        \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " ACC_STR ", %" A \
               ", %" B ", p, 1, 1, 0, 0;\n}\n"                                                 \
               : ACC_OUT                                                                       \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))
// TB: the operand index of the immediate trans-b flag (1: B MN-major, 0: K-major).
#define FORGE_WGMMA_RS(N, TY, ACC_STR, ACC_OUT, A0, A1, A2, A3, B, SC, TB)                       \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SC                                           \
               ", 0;\n"                                                                          \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " ACC_STR ", {%" A0 \
               ", %" A1 ", %" A2 ", %" A3 "}, %" B ", p, 1, 1, %" TB ";\n}\n"                    \
               : ACC_OUT                                                                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d),          \
                 "n"(kTransB))

// d[64][N] = (scale_d ? d : 0) + A[64][16] B[16][N]: A and B K-major in shared memory (their
// descriptors). The warpgroup's warp w holds rows 16 w .. 16 w + 15 of d in the mma.sync
// accumulator layout, N / 8 blocks of 4 registers.
template <int N, typename T>
__device__ __forceinline__ void MmaSS(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                      int scale_d) {
  static_assert(N == 64 || N == 128);
  constexpr bool kHalf = std::is_same_v<T, __half>;
  if constexpr (N == 64) {
    if constexpr (kHalf) {
      FORGE_WGMMA_SS(64, "f16", FORGE_WGMMA_ACC32_STR, FORGE_WGMMA_ACC32_OUT, "32", "33", "34");
    } else {
      FORGE_WGMMA_SS(64, "bf16", FORGE_WGMMA_ACC32_STR, FORGE_WGMMA_ACC32_OUT, "32", "33", "34");
    }
  } else {
    if constexpr (kHalf) {
      FORGE_WGMMA_SS(128, "f16", FORGE_WGMMA_ACC64_STR, FORGE_WGMMA_ACC64_OUT, "64", "65", "66");
    } else {
      FORGE_WGMMA_SS(128, "bf16", FORGE_WGMMA_ACC64_STR, FORGE_WGMMA_ACC64_OUT, "64", "65", "66");
    }
  }
}

// d[64][N] = (scale_d ? d : 0) + A[64][16] B[16][N]: A in registers (each warp's 16 rows in the
// mma.sync m16n8k16 A fragment layout), B in shared memory: MN-major (transposed) by default,
// K-major (as MmaSS's B) with kKMajorB.
template <int N, typename T, bool kKMajorB = false>
__device__ __forceinline__ void MmaRS(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                      int scale_d) {
  static_assert(N == 64 || N == 128);
  constexpr bool kHalf = std::is_same_v<T, __half>;
  constexpr int kTransB = kKMajorB ? 0 : 1;
  if constexpr (N == 64) {
    if constexpr (kHalf) {
      FORGE_WGMMA_RS(64, "f16", FORGE_WGMMA_ACC32_STR, FORGE_WGMMA_ACC32_OUT, "32", "33", "34",
                     "35", "36", "37", "38");
    } else {
      FORGE_WGMMA_RS(64, "bf16", FORGE_WGMMA_ACC32_STR, FORGE_WGMMA_ACC32_OUT, "32", "33", "34",
                     "35", "36", "37", "38");
    }
  } else {
    if constexpr (kHalf) {
      FORGE_WGMMA_RS(128, "f16", FORGE_WGMMA_ACC64_STR, FORGE_WGMMA_ACC64_OUT, "64", "65", "66",
                     "67", "68", "69", "70");
    } else {
      FORGE_WGMMA_RS(128, "bf16", FORGE_WGMMA_ACC64_STR, FORGE_WGMMA_ACC64_OUT, "64", "65", "66",
                     "67", "68", "69", "70");
    }
  }
}

#undef FORGE_WGMMA_SS
#undef FORGE_WGMMA_RS
#undef FORGE_WGMMA_ACC32_STR
#undef FORGE_WGMMA_ACC32_OUT
#undef FORGE_WGMMA_ACC64_STR
#undef FORGE_WGMMA_ACC64_OUT

}  // namespace forge::cuda::wgmma
