// swiglu_ref: SiLU in float, GELU (tanh form) in double.
#include <cmath>

#include "backend/cpu/swiglu/swiglu.h"

namespace forge {

Status swiglu_ref(const SwigluParams& p) {
  if (p.in_type != DType::kF32) return UnsupportedDType("swiglu", p.in_type);
  if (p.out_type != DType::kF32) return UnsupportedDType("swiglu", p.out_type);
  const int64_t gs = p.gate_stride ? p.gate_stride : p.dim;
  const int64_t us = p.up_stride ? p.up_stride : p.dim;
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    const float* g = static_cast<const float*>(p.gate) + t * gs;
    const float* u = static_cast<const float*>(p.up) + t * us;
    float* o = static_cast<float*>(p.out) + t * p.dim;
    if (p.act == GluAct::kGeluTanh) {
      for (int64_t i = 0; i < p.dim; ++i) {
        const double x = g[i];
        const double gelu =
            0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        o[i] = static_cast<float>(gelu * u[i]);
      }
      continue;
    }
    for (int64_t i = 0; i < p.dim; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
  return Status::Ok();
}

}  // namespace forge
