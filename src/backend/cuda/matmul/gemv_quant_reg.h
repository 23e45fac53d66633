// gemv_quant_reg_cuda: the decode GEMV (1 to 32 F16 activation rows) for weights whose stored
// blocks are 16-byte aligned (Q4_K, Q5_K), decoded in registers straight from 16-byte loads.
//
// Design (bandwidth first; gemv_quant_cuda.h gives the budget: ~3-5 issued instructions per
// weight at full HBM speed): a warp owns 16 weight rows and a strided share of their 256-element
// super-blocks (the CTA's 8 warps split k 1, 2, 4 or 8 ways, whichever fills the SMs best). Each
// lane copies its own 16-byte pieces of a super-block (its two rows' headers: d, dmin, packed
// scales; (Q5_K) high bits; two 16-byte chunks of quants per row) with cp.async into its own
// slots of a per-warp ring of 3-4 stages in shared memory, so several super-blocks per warp are
// in flight without holding registers, and reads them back with conflict-free 16-byte loads (no
// other lane touches them: no barriers). The quants become exact F16 integers times their 6-bit
// sub-block scale (one LOP3 and one f16x2 FMA per pair: (1024 + q) * sc - 1024 sc), multiplied
// by the activations on the tensor cores (m16n8k16, F32 sums, the activations the 8-column B
// operand); a second MMA per step with the sub-block minimums as A gives the min term; d and
// dmin are applied per super-block in F32. The k order inside a super-block is permuted to the
// order the quants are decoded in; each lane loads its activation row's matching 16-element runs
// (16-byte loads, L1-resident) and permutes them into B fragments. Beyond 8 rows the activations
// are 2 or 4 tiles of 8 rows: a chunk's A fragments are decoded once and multiplied with every
// tile's B fragments (the decoding, which bounds the kernel, is shared by up to 32 rows; at 64 rows
// the fused GEMM measured faster). Warps splitting k add their partial sums in shared memory in
// warp order (deterministic); a row's result does not depend on m.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cpu/matmul/matmul.h"

namespace forge::cuda {

inline constexpr int64_t kGemvQuantRegMaxRows = 32;

// Whether gemv_quant_reg_cuda takes this matmul: Q4_K or Q5_K weights, 1 <= m <= 32, x F16 with
// rows 16-byte aligned, W 16-byte aligned with rows as stored, out F32 or F16.
bool GemvQuantRegApplies(const MatmulParams& p);
// Why it does not (the first condition that fails); null where it does.
const char* GemvQuantRegWhyNot(const MatmulParams& p);

// Requires: GemvQuantRegApplies(p) (else InvalidArgument).
Status gemv_quant_reg_cuda(const MatmulParams& p, cudaStream_t stream);

}  // namespace forge::cuda
