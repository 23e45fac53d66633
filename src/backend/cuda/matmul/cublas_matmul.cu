// The matmul through cuBLAS (cublas_matmul.h).
#include "backend/cuda/matmul/cublas_matmul.h"

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/ops_cuda.h"

namespace forge::cuda {

cudaDataType CublasType(DType t) {
  switch (t) {
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

Status cublas_gemm(cublasHandle_t handle, const MatmulParams& p, const void* w, DType wt,
                   int64_t ldw, int64_t n, void* out) {
  const int64_t k = p.w.cols;
  const int64_t xs = p.x_stride ? p.x_stride : k;
  const int64_t os = p.out_stride ? p.out_stride : p.w.rows;
  const float alpha = 1.0f, beta = 0.0f;
  const cublasComputeType_t compute =
      wt == DType::kF32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  // Row-major out = x W^T is column-major out^T = W^T(k x n)^T x^T.
  CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(p.m),
      static_cast<int>(k), &alpha, w, CublasType(wt), static_cast<int>(ldw), p.x,
      CublasType(p.x_type), static_cast<int>(xs), &beta, out, CublasType(p.out_type),
      static_cast<int>(os), compute, CUBLAS_GEMM_DEFAULT));
  return Status::Ok();
}

Status add_matmul_bias(const MatmulParams& p, cudaStream_t stream) {
  if (p.bias == nullptr) return Status::Ok();
  const int64_t os = p.out_stride ? p.out_stride : p.w.rows;
  return add_bias_cuda(p.out, p.out_type, p.bias, p.m, p.w.rows, os, stream);
}

}  // namespace forge::cuda
