// gemv_cuda: the matmul of a few activation rows against F16/BF16 weights, streaming the weights
// once at memory speed (decode steps); larger batches go to cuBLAS.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"

namespace forge::cuda {

inline constexpr int64_t kGemvMaxRows = 8;

// Whether gemv_cuda takes this matmul: 1 <= m <= kGemvMaxRows, half weights, rows and x in
// whole 16-byte chunks and 16-byte aligned.
bool GemvApplies(const MatmulParams& p, DType weight_type);
// Why it does not (the first condition that fails); null where it does.
const char* GemvWhyNot(const MatmulParams& p, DType weight_type);
// Requires: GemvApplies(p, weight_type); p.x_type == weight_type; p.out_type F32 or weight_type.
Status gemv_cuda(const MatmulParams& p, DType weight_type, cudaStream_t stream);

}  // namespace forge::cuda
