// matmul_ref.
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "quant/dequantize.h"

namespace forge {

Status matmul_ref(const MatmulParams& p) {
  if (p.x_type != DType::kF32) return UnsupportedDType("matmul", p.x_type);
  if (p.out_type != DType::kF32) return UnsupportedDType("matmul", p.out_type);
  const float* xp = static_cast<const float*>(p.x);
  float* out = static_cast<float*>(p.out);
  const int64_t k = p.w.cols, n = p.w.rows;
  const int64_t xs = p.x_stride ? p.x_stride : k;
  const int64_t os = p.out_stride ? p.out_stride : n;
  std::vector<float> row(k);
  for (int64_t j = 0; j < n; ++j) {
    RETURN_IF_ERROR(DequantizeRow(p.w.type, p.w.row(j), row.data(), k));
    for (int64_t i = 0; i < p.m; ++i) {
      const float* x = xp + i * xs;
      double acc = 0;
      for (int64_t c = 0; c < k; ++c) acc += static_cast<double>(x[c]) * row[c];
      if (p.bias != nullptr) acc += p.bias[j];
      out[i * os + j] = static_cast<float>(acc);
    }
  }
  return Status::Ok();
}

}  // namespace forge
