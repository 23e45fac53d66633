// gemv_quant_dp4a_cuda: the one-stream decode GEMV (one F16 activation row) for Q4_K, Q5_K, Q6_K,
// Q2_K, Q3_K, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 weights, with the activations as two int8 terms and
// the weights' 2- to 8-bit values multiplied with them by DP4A (four products and their sum in one
// instruction).
//
// Design (measured on the H200 against the register-decoding MMA kernel, which is issue- and
// latency-bound at ~4.4 issued lane instructions a weight and ~35% of its issue slots):
// - Weights reach shared memory by bulk copies (the TMA unit, bulk_copy.cuh): each warp owns a
//   run of rows and keeps 2 stages in flight, each 4 (Q4_K), 3 (Q5_K) or 2-3 (Q6_K) rows x 8
//   super-blocks (4,608 / 4,224 / 3,360 bytes; Q6_K's 210-byte blocks are read with aligned words
//   and funnel shifts), issued by one lane with no per-lane requests; the first before the kernel
//   waits for the one that writes x (pdl.cuh). Streaming alone (no arithmetic) moves 14336 x 4096
//   at ~3.4 TB/s. The copies carry an evict-first L2 policy: a decode step streams every weight
//   byte once, and with the default policy those bytes pushed out of L2 what the step reads again
//   (our reading, not measured directly: the kernels' own code above all, which the small
//   latency-bound kernels then wait on). H200, tg128 of the 8B: Q4_K_M 467-469 -> 496-498
//   tokens/s, Q8_0 325-327 -> 370 (bench/results/l2-evict-first-ab-*). The small-CTA form's
//   register loads stream (ld.global.cs).
// - Activations: every CTA quantizes x into shared memory once: per 32-element block scale =
//   amax / 127, q1 = round(x / scale), q2 = round((x / scale - q1) * 254), so x = scale (q1 +
//   q2 / 254) to within scale / 508, and the block's exact F32 sum for the minimum term. One
//   int8 term alone measured ~1% normalized error on Gaussian activations, over DESIGN's F16
//   bound; two terms put it near 1e-5.
// - Q4_K / Q5_K: a lane takes all 64 elements of one sub-block pair (32 quant bytes, Q5_K's fifth
//   bits from the 32 qh bytes) of a super-block; its activations (both terms) sit in registers
//   for the stage's rows, whose loads and DP4A chains interleave (4 rows measured 1.4x faster
//   than 2, 2x faster than 1, on Q4_K); per row: masks and shifts into 4- or 5-bit bytes, 16 DP4As,
//   the two 6-bit scales and mins from the header by byte permutes, then F32 d * (sc_lo s_lo
//   isum_lo + sc_hi s_hi isum_hi) - dmin (m_lo sum_lo + m_hi sum_hi). Q6_K: a lane takes 4 runs of
//   16 elements (one sub-block each) sharing their low-bit and high-bit bytes; 6-bit values as
//   bytes (3 logic ops a word), 32 DP4As, the -32 offset from the runs' activation sums, the int8
//   sub-block scales by byte permutes. Q8_0 / Q4_0: a lane takes 2 blocks of 32 (2 or 4 rows a
//   stage), 16 DP4As a block, Q4_0's -8 offset from the blocks' activation sums. Q2_K / Q3_K
//   (4 rows a stage: 2,688 / 3,520 bytes): a lane takes 64 elements, 4 groups of 16 with a scale
//   each, from 32 qs bytes (and all 32 hmask bytes); 2- or 3-bit values as bytes (the second
//   32-element block's left in place, 4 times their value, against 4 times its sums and a quarter
//   of its scale: no shift), 8 DP4As a group; Q2_K's mins and Q3_K's -4 offset from the groups'
//   activation sums (integer, 16 elements: the form's F32 sums are per 32).
// - A row's partial sums are added across the warp in a fixed butterfly order after its last
//   chunk (deterministic).
// - x's layouts: a warp step's 32 lanes read 8 super-blocks' activations at once. The form in
//   global memory is lane-major (act_quant.cuh: FormOffset), so each of those loads is one
//   contiguous 512-byte run (4 wavefronts, not 16); the staged kernel's shared copy puts 16 bytes
//   between super-blocks, so the lanes hit distinct banks (4-way conflicts flat). On the H200:
//   Q4_K 14336 x 4096 2.68 -> 2.89 TB/s, 4096 x 14336 2.79 -> 3.03, Q8_0 14336 x 4096 3.10 ->
//   3.33, Q4_0 2.39 -> 2.66, 4096 x 4096 Q4_K 1.91 -> 2.10 (bench/results/gemv-xlayout-ab-*).
// - Where the op that wrote x also wrote its int8 form (MatmulParams::xq; act_quant.cuh), no CTA
//   quantizes x: the staged kernel copies the form, and Q4_K matrices (16-byte aligned
//   super-blocks) of 16 MB or more take a small-CTA form instead (Q5_K and smaller Q4_K
//   matrices take the warp-staged form below): 4 warps a CTA, many
//   CTAs in waves, each lane loading its weight bytes from global memory straight into registers
//   and x through L1 (on the H100, tg128 of the 8B Q4_K_M 335 -> 350 tokens/s against the staged
//   kernel with the form). Smaller matrices stay staged (one CTA an SM under 12 MB). The bound
//   was 12 MB (H100, s13: 367 -> 376 against every matrix small); on the H200 with the
//   lane-major form, 2 MB (every matrix of the 8B) measured +0.9% over 12 MB.
// - Legacy, Q2_K, Q3_K and Q6_K blocks (18 to 34, 84, 110, 210 bytes) are not 16-byte aligned, so
//   they do not load straight into registers; with the form, matrices of 2 MB or more (Q6_K: below
//   256 MB) take a warp-staged form instead: small CTAs of 4 warps, each warp streaming its rows'
//   chunks through 3 bulk-copy stages of its own in shared memory and reading x through L1 (no
//   per-CTA copy of x). H200, tg128 of the 8B: Q8_0 350 -> 370 tokens/s, Q4_0 476 -> 497, Q6_K
//   347 -> 387, Q4_K_M 463 -> 476; Q8_0 4096 x 4096 2.27 -> 2.78 TB/s, Q6_K 4096 x 14336 2.30 ->
//   2.70 (bench/results/gemv-wstage-ab-*). Q2_K / Q3_K 14336 x 4096: 1.97 / 2.01 TB/s against the
//   generic GEMV's 0.85 / 0.78 (H200, a scratch harness). Q5_K matrices and Q4_K ones under 16 MB
//   take it too, where it measured faster than the small-CTA form (Q5_K 28672 x 4096 2.53 -> 2.96
//   TB/s; tg128 of the 8B Q4_K_M 480-485 -> 491-493; bench/results/gemv-q4k-wstage-ab-*).
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cpu/matmul/matmul.h"

namespace forge::cuda {

// Whether gemv_quant_dp4a_cuda takes this matmul: Q4_K, Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1 with k a
// multiple of 256, Q5_K with k a multiple of 256 below 8192 (where it measured faster than
// gemv_quant_reg), Q2_K with k a multiple of 1024 (whole 336-byte groups of 4 super-blocks), or
// Q6_K or Q3_K with k a multiple of 2048 (whole 1,680- or 880-byte chunks): every bulk copy a
// multiple of 16 bytes from a 16-byte boundary; weights with rows as stored and the data 16-byte
// aligned, m = 1, x F16 16-byte aligned, out F32 or F16, and the quantized activations
// (2.25 k bytes) and the stages fitting in one CTA's shared memory.
bool GemvQuantDp4aApplies(const MatmulParams& p);
// Why it does not (the first condition that fails); null where it does.
const char* GemvQuantDp4aWhyNot(const MatmulParams& p);

// Bytes of the activations' form this kernel reads from p.xq (act_quant.cuh) when it takes a
// matmul of w at m rows of x_type into out_type; 0 where it takes none.
int64_t GemvQuantDp4aActivationBytes(const WeightView& w, int64_t m, DType x_type, DType out_type);

// Requires: GemvQuantDp4aApplies(p) (else InvalidArgument). p.xq, if set, holds x in
// act_quant.cuh's form (written by the op that wrote x): the CTAs copy it instead of computing it.
Status gemv_quant_dp4a_cuda(const MatmulParams& p, cudaStream_t stream);

}  // namespace forge::cuda
