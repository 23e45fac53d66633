// The quantized GEMV kernels of the legacy formats Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0.
#include "backend/cuda/matmul/gemv_quant_kernel.cuh"

namespace forge::cuda::gq {

Status LaunchLegacy(GgmlType type, const Args& a, int nsplit, int64_t row_blocks,
                    cudaStream_t stream) {
  switch (type) {
    case GgmlType::kQ4_0:
      return LaunchFormat<GgmlType::kQ4_0>(a, nsplit, row_blocks, stream);
    case GgmlType::kQ4_1:
      return LaunchFormat<GgmlType::kQ4_1>(a, nsplit, row_blocks, stream);
    case GgmlType::kQ5_0:
      return LaunchFormat<GgmlType::kQ5_0>(a, nsplit, row_blocks, stream);
    case GgmlType::kQ5_1:
      return LaunchFormat<GgmlType::kQ5_1>(a, nsplit, row_blocks, stream);
    case GgmlType::kQ8_0:
      return LaunchFormat<GgmlType::kQ8_0>(a, nsplit, row_blocks, stream);
    default:
      return InvalidArgumentError("gemv_quant_cuda: " + std::string(TypeName(type)) +
                                  " is not a legacy block format");
  }
}

}  // namespace forge::cuda::gq
