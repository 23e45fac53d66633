// attention_decode_cuda: paged attention for decode batches (one query token per sequence),
// GQA-aware: one block per (sequence, KV head) serves all the query heads that share that KV
// head, so each K/V row is read once per step.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"

namespace forge::cuda {

// Whether attention_decode_cuda takes p: every sequence has one query (n_tokens == n_seqs),
// a half cache, head_dim 64/80/96/128 and at most 8 query heads per KV head.
bool AttentionDecodeApplies(const AttentionParams& p);
Status attention_decode_cuda(const AttentionParams& p, cudaStream_t stream);

}  // namespace forge::cuda
