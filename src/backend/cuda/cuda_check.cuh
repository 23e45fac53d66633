// Turning CUDA and cuBLAS return codes into Status, for .cu files.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "base/status.h"

namespace forge {

inline Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return InternalError(std::string(what) + ": " + cudaGetErrorName(err) + " (" +
                       cudaGetErrorString(err) + ")");
}

inline Status CublasStatus(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError(std::string(what) + ": cuBLAS status " + std::to_string(int(st)));
}

}  // namespace forge

#define CUDA_RETURN_IF_ERROR(expr) RETURN_IF_ERROR(::forge::CudaStatus((expr), #expr))
#define CUBLAS_RETURN_IF_ERROR(expr) RETURN_IF_ERROR(::forge::CublasStatus((expr), #expr))
// After a kernel launch: the launch error, if any.
#define CUDA_RETURN_IF_LAUNCH_ERROR(name) \
  RETURN_IF_ERROR(::forge::CudaStatus(cudaGetLastError(), name " launch"))
