// attention_decode_cuda: paged attention for decode batches (one query token per sequence),
// split over the KV length: blocks take (sequence, KV head, split) items and serve all the query
// heads that share the KV head, so each K/V row is read once per step; a merge kernel combines
// the splits of long sequences.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace forge::cuda {

// Whether attention_decode_cuda takes p: every sequence has one query (n_tokens == n_seqs), an
// F16 or BF16 cache, head_dim 64/80/96/128 and 1 to 16 query heads per KV head. q may be F32,
// F16 or BF16. Sequences of length 0 (graph padding) get zeros.
bool AttentionDecodeApplies(const AttentionParams& p);
// Whether it also writes p.out_q itself (an F16 cache and output, head_dim a multiple of 32).
bool AttentionDecodeFormsRow(const AttentionParams& p);

// workspace: device memory for the splits' partial results, reused by every call on the stream
// (nullptr or too small: one split per sequence). Its size caps the splits of a batch: the
// backend's kAttentionWorkspaceBytes (64 MiB) holds ~4000 (split, 32 heads of dim 128) partials,
// e.g. 500 sequences of 4096 keys; past that the split length doubles until the batch fits.
Status attention_decode_cuda(const AttentionParams& p, void* workspace, size_t workspace_bytes,
                             cudaStream_t stream);

// The splits a sequence of seq_len keys gets when the workspace holds the batch: ceil(seq_len /
// 1024) (at least 1, at most 128) chunks of whole KV blocks. It depends on the sequence alone,
// so a sequence's result is the same whatever else is in the batch.
int64_t AttentionDecodeSplits(int64_t seq_len, int64_t block_size);

}  // namespace forge::cuda
