// attention_prefill_cuda: tensor-core paged attention for batches with prefill chunks
// (FlashAttention-2 style on mma.sync: a 128-query tile of one sequence and one head per block,
// keys in tiles of 64 gathered through the block table with cp.async, online softmax in
// registers; the score matrix never leaves registers).
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"

namespace forge::cuda {

// Whether attention_prefill_cuda takes p: an F16 or BF16 cache, head_dim 64/80/96/128, and some
// sequence with more than one query (n_tokens > n_seqs). q may be F32, F16 or BF16.
bool AttentionPrefillApplies(const AttentionParams& p);
Status attention_prefill_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace forge::cuda
