// The CUDA twins of the CPU ops (pointers in the Params are device pointers). Activations may be
// F32, F16 or BF16 as each Params' dtype fields say; arithmetic is F32. Each launches on
// `stream` and returns the launch error, if any.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"

namespace forge::cuda {

Status embedding_cuda(const EmbeddingParams& p, cudaStream_t stream);  // table F32/F16/BF16
Status rmsnorm_cuda(const RmsNormParams& p, cudaStream_t stream);
Status add_rmsnorm_cuda(const AddRmsNormParams& p, cudaStream_t stream);
Status layernorm_cuda(const LayerNormParams& p, cudaStream_t stream);  // out_cast F32/F16/BF16
// cu_seqlens read on the device; F32 rows.
Status pool_cuda(const PoolParams& p, cudaStream_t stream);
Status rope_cuda(const RopeParams& p, cudaStream_t stream);
Status kv_write_cuda(const KvWriteParams& p, cudaStream_t stream);
Status rope_kv_write_cuda(const RopeKvWriteParams& p, cudaStream_t stream);
// workspace: fixed device memory for split-KV decode partials (kAttentionWorkspaceBytes; nullptr:
// no splits), allocated once by the backend so that graph-captured calls allocate nothing.
constexpr size_t kAttentionWorkspaceBytes = size_t{64} << 20;
Status attention_cuda(const AttentionParams& p, cudaStream_t stream, void* workspace = nullptr,
                      size_t workspace_bytes = 0);
Status swiglu_cuda(const SwigluParams& p, cudaStream_t stream);
Status softcap_cuda(const SoftCapParams& p, cudaStream_t stream);
Status route_cuda(const RouteParams& p, cudaStream_t stream);
Status expert_sum_cuda(const ExpertSumParams& p, cudaStream_t stream);
Status gather_rows_cuda(const GatherRowsParams& p, cudaStream_t stream);
// out[m, n] += bias[n] for each of m rows of stride `stride`; out is of type `out_type`.
Status add_bias_cuda(void* out, DType out_type, const float* bias, int64_t m, int64_t n,
                     int64_t stride, cudaStream_t stream);
// Converts n F32 values to `to` (weights prepared at load).
Status convert_f32_cuda(const float* in, void* out, DType to, int64_t n, cudaStream_t stream);

}  // namespace forge::cuda
