// matmul_ref: block formats by the portable integer row dots over activations quantized as the
// CPU backend quantizes them (the same bits); F32 / F16 / BF16 weights in double over the
// dequantized rows.
#include <vector>

#include "backend/cpu/matmul/act_quant.h"
#include "backend/cpu/matmul/int_dot.h"
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
  if (const int block = ActBlockOf(p.w.type); block > 0) {
    if (k % block != 0) {
      return InvalidArgumentError("matmul: k=" + std::to_string(k) + " is not a multiple of " +
                                  std::string(TypeName(p.w.type)) + "'s block");
    }
    ActRows act;
    act.Resize(p.m, k, block);
    for (int64_t i = 0; i < p.m; ++i) act.Quantize(i, xp + i * xs);
    const IntRowDots dot = IntRowDotsFor(p.w.type, CpuIsa::kScalar);
    for (int64_t j = 0; j < n; ++j) {
      const float bias = p.bias != nullptr ? p.bias[j] : 0.0f;
      for (int64_t i = 0; i < p.m; ++i) {
        const ActRow x = act.row(i);
        float v;
        dot(p.w.row(j), &x, 1, &v, 1);
        out[i * os + j] = v + bias;
      }
    }
    return Status::Ok();
  }
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
