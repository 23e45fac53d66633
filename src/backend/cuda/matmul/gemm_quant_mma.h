// gemm_quant_mma_cuda: the quantized matmul for decode batches (a few to a few hundred F16
// activation rows) with Q4_K or Q6_K weights, on the tensor cores, reading the stored blocks once.
//
// Design. A CTA of 8 warps owns 128 weight rows (16 per warp) and a tile of 16, 32, 64 or 128
// activation rows; the k range may be split over a cluster of 2 to 8 CTAs (as many as still run
// in one wave) whose F32 partial sums are added in rank order through distributed shared
// memory (deterministic), or, with a workspace, over CTAs that are not a cluster, whose partial
// sums the last of them adds from global memory in the same order (where clusters of that many
// do not all fit at once).
// Per 256-element super-block, cp.async stages the CTA's 128 stored rows (144 bytes each) and the
// tile's activations into a ring of 2-3 stages (tiles of 64 and 128 rows: the activations by the
// TMA unit, four 64-element boxes per stage through a tensor map, completed on the stage's
// mbarrier); the weights of the first stages are in flight before the kernel waits for the one
// that writes the activations (pdl.cuh).
//   - A fragments are decoded in registers: each lane reads the 16 quant bytes of a 16-element run
//     of its two rows, picks its 4 bytes, and turns each nibble pair into f16x2 weights: a LOP3
//     gives (1024 + q) or (1024 + 16 q), one f16x2 add or FMA the exact integer q, and one f16x2
//     FMA the weight q * f16(d * sc) + f16(-dmin * m) (Q4_K's min folded into every weight).
//   - Tiles of 16 and 32 activation rows run on mma.sync m16n8k16, B fragments from ldmatrix.x4
//     over activation rows 528 bytes apart (no bank conflicts). Tiles of 64 and 128 run on
//     warpgroup MMAs (wgmma m64n64k16 / m64n128k16, wgmma.cuh): the two warpgroups' A from the
//     decoding registers, B K-major from the stage's activations in the 128-byte swizzled layout;
//     one wgmma per 16 elements reads each activation element once per 64 weight rows instead of
//     once per 16.
//   - Q6_K (no min term): slots of 240 bytes hold the 16-byte chunks covering a 2-byte aligned
//     210-byte super-block; each value is (1024 + q) - 1056 = q - 32 exactly, times f16(d sc).
//   - Every product accumulates into one F32 chain per output.
// Error: each weight is rounded to F16 once more than its scale and min (Q4_K: q f16(d sc) +
// f16(-dmin m) rounded once; Q6_K: q times f16(d sc)), within the F16 activations' bound
// (DESIGN.md) against the F32 dequantized values.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cpu/matmul/matmul.h"

namespace forge::cuda {

inline constexpr int64_t kGemmQuantMmaMaxRows = 256;

// Whether gemm_quant_mma_cuda takes this matmul: Q4_K or Q6_K weights with rows as stored and
// 16-byte aligned (Q6_K: k a multiple of 2048), 1 <= m <= kGemmQuantMmaMaxRows F16 activation rows
// (16-byte aligned, stride a multiple of 8 elements), out F32 or F16.
bool GemmQuantMmaApplies(const MatmulParams& p);

// Why it does not (the first condition that fails); null where it does. Where the backend takes
// it is the dispatch's rule (matmul_dispatch.h).
const char* GemmQuantMmaWhyNot(const MatmulParams& p);

// Scratch for k splits whose CTAs are not a cluster (a "global" split: each CTA writes its F32
// partial sums to the workspace, the last of a tile adds them in split order, bit-identical to a
// cluster of as many CTAs): [kGemmQuantMmaCounters int32 counters, zero before the first call;
// every call leaves them zero][partials: tiles x nsplit x 128 x (16 to 128) floats]. One stream at
// a time (calls on one stream are ordered). kGemmQuantMmaWorkspaceBytes holds one wave of 128-row
// tiles at one CTA an SM on GPUs of up to 256 SMs.
inline constexpr int64_t kGemmQuantMmaCounters = 4096;
inline constexpr size_t kGemmQuantMmaWorkspaceBytes =
    kGemmQuantMmaCounters * 4 + size_t{256} * 128 * 128 * 4;
struct GemmQuantMmaWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// Requires: GemmQuantMmaApplies(p) (else InvalidArgument). nsplit: the CTAs splitting k (1 to 8;
// 0: chosen to fill the GPU, from clusters and, with a workspace, global splits); global_split
// (nsplit 2 to 8 and a workspace that holds it): that split without a cluster.
Status gemm_quant_mma_cuda(const MatmulParams& p, cudaStream_t stream, int nsplit = 0,
                           GemmQuantMmaWorkspace ws = {}, bool global_split = false);

}  // namespace forge::cuda
