// The CUDA twins of the CPU ops (pointers in the Params are device pointers; F32 activations).
// Each launches on the current stream and returns the launch error, if any.
#pragma once

#include "backend/backend.h"

namespace forge::cuda {

Status embedding_cuda(const EmbeddingParams& p);  // requires: F32 table
Status rmsnorm_cuda(const RmsNormParams& p);
Status rope_cuda(const RopeParams& p);
Status kv_write_cuda(const KvWriteParams& p);
Status attention_cuda(const AttentionParams& p);
Status swiglu_cuda(const SwigluParams& p);
Status gather_rows_cuda(const GatherRowsParams& p);
// out[m, n] += bias[n] for each of m rows of stride `stride`.
Status add_bias_cuda(float* out, const float* bias, int64_t m, int64_t n, int64_t stride);

}  // namespace forge::cuda
