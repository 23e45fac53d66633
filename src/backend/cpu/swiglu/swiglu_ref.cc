// swiglu_ref: SiLU in float, GELU (tanh form and exact) in double; gated or not.
#include <cmath>
#include <string>

#include "backend/cpu/swiglu/swiglu.h"

namespace forge {
namespace {

// The activation of one gate value (swiglu.h), in double for the GELUs.
double Gelu(double x, GluAct act) {
  if (act == GluAct::kGeluTanh) {
    return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * std::erfc(-0.7071067811865476 * x);  // 1 + erf(x / sqrt 2)
}

}  // namespace

Status swiglu_ref(const SwigluParams& p) {
  if (p.in_type != DType::kF32) return UnsupportedDType("swiglu", p.in_type);
  if (p.out_type != DType::kF32) return UnsupportedDType("swiglu", p.out_type);
  if (p.act != GluAct::kSilu && p.act != GluAct::kGeluTanh && p.act != GluAct::kGeluErf) {
    return InvalidArgumentError("swiglu: unknown activation " +
                                std::to_string(static_cast<int>(p.act)));
  }
  const int64_t gs = p.gate_stride ? p.gate_stride : p.dim;
  const int64_t us = p.up_stride ? p.up_stride : p.dim;
  const bool gated = p.up != nullptr;
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    const float* g = static_cast<const float*>(p.gate) + t * gs;
    const float* u = gated ? static_cast<const float*>(p.up) + t * us : nullptr;
    float* o = static_cast<float*>(p.out) + t * p.dim;
    if (p.act != GluAct::kSilu) {
      for (int64_t i = 0; i < p.dim; ++i) {
        const double a = Gelu(g[i], p.act);
        o[i] = static_cast<float>(gated ? a * u[i] : a);
      }
      continue;
    }
    if (gated) {
      for (int64_t i = 0; i < p.dim; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    } else {
      for (int64_t i = 0; i < p.dim; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i]));
    }
  }
  return Status::Ok();
}

}  // namespace forge
