// rope_ref.
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/rope/rope.h"

namespace forge {

Status rope_ref(const RopeParams& p) {
  if (p.rope_dims <= 0 || p.rope_dims % 2 != 0 || p.rope_dims > p.head_dim) {
    return InvalidArgumentError("rope: rope_dims=" + std::to_string(p.rope_dims) +
                                " must be even and <= head_dim=" + std::to_string(p.head_dim));
  }
  if (p.dtype != DType::kF32) return UnsupportedDType("rope", p.dtype);
  const int64_t half = p.rope_dims / 2;
  const int64_t stride = p.token_stride ? p.token_stride : p.n_heads * p.head_dim;
  std::vector<double> inv_freq(half);
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[i] = std::pow(static_cast<double>(p.theta), -2.0 * i / p.rope_dims) * p.freq_scale;
    if (p.freq_factors != nullptr) inv_freq[i] /= p.freq_factors[i];
  }
  std::vector<float> cs(half), sn(half);
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      double a = p.positions[t] * inv_freq[i];
      cs[i] = static_cast<float>(std::cos(a));
      sn[i] = static_cast<float>(std::sin(a));
    }
    for (int64_t h = 0; h < p.n_heads; ++h) {
      float* x = static_cast<float*>(p.x) + t * stride + h * p.head_dim;
      for (int64_t i = 0; i < half; ++i) {
        int64_t a = p.style == RopeStyle::kAdjacent ? 2 * i : i;
        int64_t b = p.style == RopeStyle::kAdjacent ? 2 * i + 1 : i + half;
        float x0 = x[a], x1 = x[b];
        x[a] = x0 * cs[i] - x1 * sn[i];
        x[b] = x0 * sn[i] + x1 * cs[i];
      }
    }
  }
  return Status::Ok();
}

}  // namespace forge
