// What other parts of the CUDA module need of a CUDA backend: its stream and device ordinal
// (the NCCL collective queues its ops there), and making a device current on the calling thread.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "backend/cuda/matmul/matmul_dispatch.h"

namespace forge::cuda {

// The backend's stream; nullptr when `backend` is not a CUDA backend.
cudaStream_t CudaStreamOf(Backend& backend);
// The backend's device ordinal; -1 when `backend` is not a CUDA backend.
int CudaDeviceOf(Backend& backend);
// What the backend's matmul variants run with (stream, cuBLAS handle, workspaces), for running
// one variant directly (the op harness); all null when `backend` is not a CUDA backend.
MatmulResources MatmulResourcesOf(Backend& backend);
// The backend's attention workspace (split-KV partials), for running one attention variant
// directly; {nullptr, 0} when `backend` is not a CUDA backend.
std::pair<void*, size_t> AttentionWorkspaceOf(Backend& backend);

// Makes `device` current on the calling thread when it is not already (the CUDA runtime's current
// device is per thread: each tensor-parallel rank's thread drives its own device). The previous
// device is not restored.
inline cudaError_t UseDevice(int device) {
  int current = -1;
  cudaError_t e = cudaGetDevice(&current);
  if (e != cudaSuccess) return e;
  return current == device ? cudaSuccess : cudaSetDevice(device);
}

}  // namespace forge::cuda
