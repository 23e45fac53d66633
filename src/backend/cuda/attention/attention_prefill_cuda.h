// attention_prefill_cuda: tensor-core paged attention for batches with prefill chunks. Head dims
// 64 and 128 run attention_prefill_wgmma (Hopper warpgroup MMA: 128 queries x 128-key tiles,
// the softmax of a tile overlapping the P V GEMM of the previous one); 80 and 96 the
// FlashAttention-2 style kernel on mma.sync (128 queries x 64-key tiles). Both gather K/V tiles
// through the block table with cp.async and keep the score matrix in registers.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"

namespace forge::cuda {

// Whether attention_prefill_cuda takes p: an F16 or BF16 cache, head_dim 64/80/96/128, and some
// sequence with more than one query (n_tokens > n_seqs); q in F32 (as the model passes it), plain
// scores over every earlier key (no soft-cap, no window).
bool AttentionPrefillApplies(const AttentionParams& p);
Status attention_prefill_cuda(const AttentionParams& p, cudaStream_t stream);

// Whether attention_prefill_cuda runs p on the wgmma kernel (head_dim 64 or 128), and that kernel
// itself (an error for batches it does not take).
bool AttentionPrefillWgmmaApplies(const AttentionParams& p);
Status attention_prefill_wgmma_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace forge::cuda
