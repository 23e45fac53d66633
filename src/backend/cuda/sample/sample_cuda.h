// sample_cuda: the Sample op (backend/cpu/sample/sample.h) on the device: each row of logits is
// edited in place and its token, logprob and top alternatives are chosen exactly as sample_ref and
// the CPU Sampler choose them, with one thread block per row and no host synchronization.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cpu/sample/sample.h"

namespace forge::cuda {

// Every pointer in SampleParams is a device pointer. Needs no scratch memory; asynchronous on
// `stream` (capturable in a CUDA graph).
Status sample_cuda(const SampleParams& p, cudaStream_t stream = nullptr);

}  // namespace forge::cuda
