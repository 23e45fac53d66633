// act_quant_cuda: one F16 row into the one-row DP4A GEMV's activation form (act_quant.cuh), for
// the ops that write such a row but do not form it themselves. Blocks of 256 threads, a thread
// per 8-element unit.
#include <string>

#include "backend/cuda/cuda_check.cuh"
#include "backend/cuda/device.h"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/act_quant/act_quant.cuh"
#include "backend/cuda/act_quant/act_quant_cuda.h"
#include "backend/cuda/pdl.cuh"

namespace forge::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) act_quant_kernel(const __half* x, int k, int8_t* xq) {
  PdlWait();  // launched as a dependent (pdl.cuh): nothing is read or written before this
  PdlLaunchDependents();
  const int u0 = blockIdx.x * kThreads;
  QuantizeUnits(x + 8 * u0, min(kThreads, k / 8 - u0), 8 * u0, k, xq);
}

}  // namespace

Status act_quant_cuda(const void* x, int64_t k, void* xq, cudaStream_t stream) {
  if (k <= 0 || k % 256 != 0 || k > (int64_t{1} << 24) || !IsAligned(x, 16) || !IsAligned(xq, 16)) {
    return InvalidArgumentError(
        "act_quant_cuda: one F16 row of a positive multiple of 256 "
        "elements (16-byte aligned) is formed; got k=" +
        std::to_string(k));
  }
  const unsigned blocks = static_cast<unsigned>((k / 8 + kThreads - 1) / kThreads);
  CUDA_RETURN_IF_ERROR(LaunchDependent(act_quant_kernel, dim3(blocks), dim3(kThreads), 0, stream,
                                       static_cast<const __half*>(x), static_cast<int>(k),
                                       static_cast<int8_t*>(xq)));
  CUDA_RETURN_IF_LAUNCH_ERROR("act_quant_kernel");
  return Status::Ok();
}

}  // namespace forge::cuda
