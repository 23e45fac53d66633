// The quantized GEMM kernels of the K-quant formats Q2_K, Q3_K, Q4_K, Q5_K and Q6_K.
#include <string>

#include "backend/cuda/matmul/gemm_quant_kernel.cuh"

namespace forge::cuda::gm {

Status LaunchKQuant(GgmlType type, DType x_type, int bn, Args a, int64_t m_tiles, int64_t n_tiles,
                    int nsplit, cudaStream_t stream) {
  switch (type) {
    case GgmlType::kQ2_K:
      return LaunchFormat<GgmlType::kQ2_K>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    case GgmlType::kQ3_K:
      return LaunchFormat<GgmlType::kQ3_K>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    case GgmlType::kQ4_K:
      return LaunchFormat<GgmlType::kQ4_K>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    case GgmlType::kQ5_K:
      return LaunchFormat<GgmlType::kQ5_K>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    case GgmlType::kQ6_K:
      return LaunchFormat<GgmlType::kQ6_K>(x_type, bn, a, m_tiles, n_tiles, nsplit, stream);
    default:
      return InvalidArgumentError("gemm_quant_cuda: " + std::string(TypeName(type)) +
                                  " is not a K-quant format");
  }
}

}  // namespace forge::cuda::gm
