// The matmul through cuBLAS: row-major out = x W^T (+ bias) for weights in F32 / F16 / BF16, or
// for slabs of block-format rows dequantized into them (matmul_dispatch.cu).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <library_types.h>

#include "backend/cpu/matmul/matmul.h"
#include "base/status.h"

namespace forge::cuda {

// cuBLAS's name for a dtype.
cudaDataType CublasType(DType t);

// Row-major out[m, n] = x[m, k] W[n, k]^T for n weight rows at w (leading dimension ldw, type wt),
// written at `out` with p's stride; k, x, its stride and the types are p's; no bias. F32 stays
// F32 (CUBLAS_COMPUTE_32F_PEDANTIC, no TF32: the validation path); halves run on the tensor cores
// with F32 sums.
Status cublas_gemm(cublasHandle_t handle, const MatmulParams& p, const void* w, DType wt,
                   int64_t ldw, int64_t n, void* out);

// out[m, n] += bias[n] where p has a bias.
Status add_matmul_bias(const MatmulParams& p, cudaStream_t stream);

}  // namespace forge::cuda
