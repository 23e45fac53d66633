// swiglu_ref.
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
    for (int64_t i = 0; i < p.dim; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
  return Status::Ok();
}

}  // namespace forge
