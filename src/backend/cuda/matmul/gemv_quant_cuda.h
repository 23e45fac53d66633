// gemv_quant_cuda: out[m, n] = x[m, k] W[n, k]^T (+ bias) for 1..16 activation rows (decode steps)
// with W kept in its GGUF block format in device memory (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K), each weight byte read from memory once per call (a 16-byte chunk shared by
// two tiles whose bytes are not 16-byte aligned is fetched by both, the second time from L2).
//
// Design (bandwidth first): at ~3.6 TB/s a 2- to 4-bit weight leaves an SM only ~3-5 issued
// instructions per element, so per-element F32 FMAs (one per activation row, plus the unpacking)
// would make the SMs, not memory, the limit; the work per weight is kept to ~1-2 instructions and
// the multiply-adds go to the tensor cores, which also keeps m = 16 close to m = 1 in cost.
// - A CTA of 8 warps owns 128 weight rows (16 per warp) and a range of 256-element tiles of k.
//   The 16-byte-aligned chunks covering each row's tile bytes are copied to shared memory with
//   cp.async (16-byte copies, 2 to 4 tiles in flight per CTA, two CTAs per SM), so block sizes
//   that are not multiples of 16 (18, 22, 34, 110, 210 bytes) cost nothing: a row's tile sits in
//   shared memory at its own offset mod 16 and is decoded with 2-byte loads.
// - Activations: per tile and activation row, scaled by a power of two and laid out as F16
//   m16n8k16 B fragments in the element order the weight decoding produces (F32 x: an F16 high
//   and an F16 residual term, 22 bits in all; F16/BF16 x: one exact term).
// - Weights: each thread turns its bytes into exact small F16 integers (a LOP3 into the mantissa
//   of 1024.0 and one half2 add/FMA per pair; the k-quants' sub-block scales are folded in where
//   q * scale stays exact), m16n8k16 MMAs accumulate in F32, and block/super-block scales, mins
//   (via per-group x sums) and the activation scale are applied in F32 afterwards.
// - Split-K: when n / 128 row blocks fill the resident CTA slots poorly (narrow matrices), up to
//   8 CTAs of a thread-block cluster split k and their partial sums are added in rank order
//   through distributed shared memory (deterministic; no workspace). The split depends on n, k
//   and the SM count only, so a row's result does not depend on m.
// Accuracy: weight times activation products are exact and summed in F32 (tensor-core
// accumulation), so F32 x is meant to meet DESIGN's F32 bound against the reference on the same
// dequantized weights. Not measured here: the bench (gemv_quant_bench.h) gives the bandwidth.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cpu/matmul/matmul.h"

namespace forge::cuda {

inline constexpr int64_t kGemvQuantMaxRows = 16;

// Whether gemv_quant_cuda takes this matmul: p.w.type one of the ten block formats, 1 <= m <= 16,
// row_bytes as the format says, W 2-byte aligned (the chunks read around a row may include up to
// 15 bytes before the view inside the same 16-byte-aligned chunk of its allocation), x and out
// aligned to their element size, strides at least k and n.
bool GemvQuantApplies(const MatmulParams& p);
// Why it does not (the first condition that fails); null where it does.
const char* GemvQuantWhyNot(const MatmulParams& p);

// Requires: GemvQuantApplies(p) (else InvalidArgument). x F32, F16 or BF16; out F32, F16 or BF16.
Status gemv_quant_cuda(const MatmulParams& p, cudaStream_t stream);

}  // namespace forge::cuda
