// The quantized GEMV kernels of the k-quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K.
#include "backend/cuda/matmul/gemv_quant_kernel.cuh"

namespace forge::cuda::gq {

Status LaunchKQuant(GgmlType type, const Args& a, int nsplit, int64_t row_blocks,
                    cudaStream_t stream) {
  switch (type) {
    case GgmlType::kQ2_K:
      return LaunchFormat<GgmlType::kQ2_K>(a, nsplit, row_blocks, stream);
    case GgmlType::kQ3_K:
      return LaunchFormat<GgmlType::kQ3_K>(a, nsplit, row_blocks, stream);
    case GgmlType::kQ4_K:
      return LaunchFormat<GgmlType::kQ4_K>(a, nsplit, row_blocks, stream);
    case GgmlType::kQ5_K:
      return LaunchFormat<GgmlType::kQ5_K>(a, nsplit, row_blocks, stream);
    case GgmlType::kQ6_K:
      return LaunchFormat<GgmlType::kQ6_K>(a, nsplit, row_blocks, stream);
    default:
      return InvalidArgumentError("gemv_quant_cuda: " + std::string(TypeName(type)) +
                                  " is not a k-quant format");
  }
}

}  // namespace forge::cuda::gq
