// gemm_quant_cuda: out[m, n] = x[m, k] W[n, k]^T (+ bias) for any number of activation rows
// (prefill, batched decode) with W kept in its GGUF block format (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and F16 or BF16 activations: the weights are decoded in shared
// memory next to the tensor cores that use them, never written out as a dense copy.
//
// Design (compute first: at 128 activation rows a weight element feeds 256 FLOPs):
// - A CTA of 8 warps owns 128 weight rows x BN activation rows (BN = 64, 128 or 256: the
//   smallest that holds m, 256 beyond 128; warps 4 x 2 or 2 x 4, warp tiles 32 x 32, 64 x 32 or
//   64 x 64: the larger, the fewer shared-memory reads per MMA). k advances in 64-element
//   windows.
// - Staging (cp.async, 16 bytes): per 256-element unit (a K-quant super-block or eight legacy
//   blocks) the 16-byte-aligned chunks covering each row's unit bytes, two units in the ring, so
//   rows that are only 2-byte aligned (Q8_0, Q6_K, ...) cost nothing extra; per window the
//   activations [BN][64], four windows in the ring, three in flight (three and two where four do
//   not fit in shared memory: Q8_0 with BN = 256).
// - Decoding: two threads per weight row turn a window into F16/BF16 values in a shared tile
//   (gemm_quant_decode.cuh: the CPU dequantizer's F32 values, bit for bit, rounded to nearest),
//   one window ahead of the MMAs and in four slices placed between the window's four MMA steps
//   (the ALU work overlaps the tensor cores); two tiles, so one barrier per window suffices.
// - MMA: ldmatrix from XOR-swizzled 128-byte tile rows (no bank conflicts) and mma.sync
//   m16n8k16 with F32 accumulators.
// - Grid (splits, m tiles, n tiles): the CTAs of one weight-row block run together, so for m up
//   to a few tiles each weight byte comes from DRAM about once. When the tiles fill the GPU's CTA
//   slots poorly over whole waves (few weight rows or activation rows), 2, 4 or 8 CTAs of a
//   thread-block cluster split k (split_k.h: SplitByTime) and add their F32 sums in rank order through
//   distributed shared memory (deterministic for a given shape and GPU; no workspace).
// Accuracy: the products of F16/BF16-rounded weights and the activations, summed in F32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cpu/matmul/matmul.h"

namespace forge::cuda {

// Whether gemm_quant_cuda takes this matmul: p.w.type one of the ten block formats, row_bytes as
// the format says, W 2-byte aligned (a row's staged chunks may include bytes before it inside the
// same 16-byte-aligned chunk of its allocation), x F16 or BF16, 16-byte aligned with a stride
// (0: k) that is a multiple of 8 and at least k, out F32 or x's type, aligned to its element,
// stride at least n, m >= 1, and at most 65535 tiles of rows either way.
bool GemmQuantApplies(const MatmulParams& p);

// Why it does not (the first condition that fails); null where it does. Where the backend takes
// it is the dispatch's rule (matmul_dispatch.h).
const char* GemmQuantWhyNot(const MatmulParams& p);

// Requires: GemmQuantApplies(p) (else InvalidArgument).
Status gemm_quant_cuda(const MatmulParams& p, cudaStream_t stream);

// As gemm_quant_cuda with k split over clusters of nsplit CTAs (1, 2, 4 or 8, at most the
// 256-element units of k; 0: the usual choice), for tests of every epilogue.
Status gemm_quant_cuda_split(const MatmulParams& p, int nsplit, cudaStream_t stream);

}  // namespace forge::cuda
