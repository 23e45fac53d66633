// The quantized GEMM kernels of the legacy formats Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0.
#include <string>

#include "backend/cuda/matmul/gemm_quant_kernel.cuh"

namespace forge::cuda::gm {

Status LaunchLegacy(GgmlType type, DType x_type, int bn, Args a, int64_t m_tiles, int64_t n_tiles,
                    int nsplit, cudaStream_t stream) {
  switch (type) {
    case GgmlType::kQ4_0:
      return LaunchFormat<GgmlType::kQ4_0>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    case GgmlType::kQ4_1:
      return LaunchFormat<GgmlType::kQ4_1>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    case GgmlType::kQ5_0:
      return LaunchFormat<GgmlType::kQ5_0>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    case GgmlType::kQ5_1:
      return LaunchFormat<GgmlType::kQ5_1>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    case GgmlType::kQ8_0:
      return LaunchFormat<GgmlType::kQ8_0>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    default:
      return InvalidArgumentError("gemm_quant_cuda: " + std::string(TypeName(type)) +
                                  " is not a legacy block format");
  }
}

}  // namespace forge::cuda::gm
