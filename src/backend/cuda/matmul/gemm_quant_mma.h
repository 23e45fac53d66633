// gemm_quant_mma_cuda: the quantized matmul for decode batches (a few to a few hundred F16
// activation rows) with Q4_K or Q6_K weights, on the tensor cores, reading the stored blocks once.
//
// Design. A CTA of 8 warps owns 128 weight rows (16 per warp) and a tile of 16, 32, 64 or 128
// activation rows; the k range may be split over a cluster of 2, 4 or 8 CTAs (as many as still
// run in one wave) whose F32 partial sums are added in rank order through distributed shared
// memory (deterministic).
// Per 256-element super-block, cp.async stages the CTA's 128 stored rows (144 bytes each) and the
// tile's activations (512 bytes per row, rows 528 bytes apart so ldmatrix meets no bank conflicts)
// into a ring of 2-3 stages; the weights of the first stages are in flight before the kernel waits
// for the one that writes the activations (pdl.cuh).
//   - A fragments are decoded in registers: each lane reads the 16 quant bytes of a 16-element run
//     of its two rows, picks its 4 bytes, and turns each nibble pair into f16x2 values
//     q * f16(d * sc): a LOP3 gives (1024 + q) or (1024 + 16 q), one f16x2 add or FMA the exact
//     integer q, one f16x2 multiply the product (no intermediate exceeds the weight, whatever d
//     is). The k order is the natural one, so B fragments come straight from ldmatrix.x4 (two
//     8-row tiles per load).
//   - The min term, -dmin * m * sum(x over the 32-element sub-block), is one more MMA per
//     super-block and tile: A holds -f16(dmin * m) of sub-blocks 2t, 2t + 1, B the sub-block sums
//     of the activations as an F16 pair (hi + lo, within 2^-22 of the F32 sum), computed once per
//     stage by the CTA.
//   - Q6_K (no min term): slots of 240 bytes hold the 16-byte chunks covering a 2-byte aligned
//     210-byte super-block; each value is (1024 + q) - 1056 = q - 32 exactly, times f16(d sc).
//   - Every product accumulates into one F32 chain per output.
// Error: each weight is rounded to F16 twice (the scale, then q times it), within the F16
// activations' bound (DESIGN.md) against the F32 dequantized values.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cpu/matmul/matmul.h"

namespace forge::cuda {

inline constexpr int64_t kGemmQuantMmaMaxRows = 256;

// Whether gemm_quant_mma_cuda takes this matmul: Q4_K or Q6_K weights with rows as stored and
// 16-byte aligned (Q6_K: k a multiple of 2048), 1 <= m <= kGemmQuantMmaMaxRows F16 activation rows
// (16-byte aligned, stride a multiple of 8 elements), out F32 or F16.
bool GemmQuantMmaApplies(const MatmulParams& p);

// Whether the CUDA backend takes it: Q4_K from 9 to 64 rows, Q6_K from 2 to 64. Measured on an
// H100 (bench/results/gemv-mma-h100-2026-11-25-s10*.txt): Q4_K against the register-decoding
// GEMV (up to 32 rows; faster up to 8), the fused GEMM and dequantize + cuBLAS; Q6_K against
// dequantize + cuBLAS (2.3-3.4x faster at 8-64 rows) and, at 2-16 rows, through the Q4_K_M decode
// step against the quantized GEMV (S_TG at 2, 8, 16 sequences +5%, +10%, +16%;
// batched-ab-q6k-h100-2026-11-25-s10.txt). At 128 rows the Q4_K_M decode step at 128 sequences
// ran 3% slower with it (the 28672-row gate/up projection takes 1.7 waves of one CTA per SM, and
// dequantize + cuBLAS is faster on 4096 x 14336), so 65 rows and more stay with dequantize +
// cuBLAS.
bool GemmQuantMmaPreferred(const MatmulParams& p);

// Requires: GemmQuantMmaApplies(p) (else InvalidArgument). nsplit: the CTAs of a cluster splitting
// k (1, 2, 4 or 8; 0: chosen to fill the GPU).
Status gemm_quant_mma_cuda(const MatmulParams& p, cudaStream_t stream, int nsplit = 0);

}  // namespace forge::cuda
