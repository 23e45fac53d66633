// attention_decode_cuda: paged attention for decode batches (one query token per sequence),
// split over the KV length: blocks take (sequence, KV head, split) items and serve all the query
// heads that share the KV head, so each K/V row is read once per step; the splits of a long
// sequence are merged by the block that finishes the last of them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace forge::cuda {

// Whether attention_decode_cuda takes p: every sequence has one query (n_tokens == n_seqs), an
// F16 or BF16 cache, head_dim 64/80/96/128, 1 to 16 query heads per KV head, q in F32 (as the
// model passes it), plain scores over every earlier key (no soft-cap, no window). Sequences of
// length 0 (graph padding) get zeros.
bool AttentionDecodeApplies(const AttentionParams& p);
// Whether it also writes p.out_q itself (an F16 cache and output, head_dim a multiple of 32).
bool AttentionDecodeFormsRow(const AttentionParams& p);

// workspace: device memory for the splits' partial results and their merge counters, reused by
// every call on the stream (nullptr or too small: one split per sequence). It must be zero
// before the first call (every call leaves the counters zero again). Its size caps the splits of
// a batch: the backend's kAttentionWorkspaceBytes (64 MiB) holds ~4000 (split, 32 heads of dim
// 128) partials; past that the split length doubles until the batch fits.
Status attention_decode_cuda(const AttentionParams& p, void* workspace, size_t workspace_bytes,
                             cudaStream_t stream);

// The splits sequence `seq` of a batch with these key counts gets on the current device when the
// workspace holds the batch (p gives the heads, block size and table width): its length over the
// batch's chunk (its keys times the KV heads over the free resident blocks, at least min(128 n,
// 1024) for n sequences; none where the (sequence, KV head) pairs fill the GPU), 1 to 128 pieces
// of whole KV blocks. It depends on the batch: a sequence's result does too, within the bounds.
int64_t AttentionDecodeSplits(const AttentionParams& p, const std::vector<int64_t>& lens,
                              int64_t seq);

}  // namespace forge::cuda
