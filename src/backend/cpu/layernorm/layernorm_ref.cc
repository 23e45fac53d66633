// layernorm_ref (double) and layernorm_cpu (float, rows in parallel).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/layernorm/layernorm.h"
#include "base/thread_pool.h"

namespace forge {
namespace {

// The host backends' checks: the shared ones, and out_cast in F32 only.
Status ValidateHost(const LayerNormParams& p) {
  RETURN_IF_ERROR(ValidateLayerNorm(p));
  if (p.out_cast != nullptr && p.cast_type != DType::kF32) {
    return UnsupportedDType("layernorm", p.cast_type);
  }
  return Status::Ok();
}

// Row r of x with delta and add_row added in place (both backends add in float, in this order).
float* AddInputs(const LayerNormParams& p, int64_t r) {
  float* x = p.x + r * p.dim;
  if (p.delta != nullptr) {
    const float* d = p.delta + r * p.dim;
    for (int64_t i = 0; i < p.dim; ++i) x[i] += d[i];
  }
  if (p.add_row != nullptr) {
    for (int64_t i = 0; i < p.dim; ++i) x[i] += p.add_row[i];
  }
  return x;
}

}  // namespace

Status ValidateLayerNorm(const LayerNormParams& p) {
  if (p.n_rows < 0 || p.dim <= 0) return InvalidArgumentError("layernorm: bad shape");
  if (p.n_rows > 0 && (p.x == nullptr || p.weight == nullptr || p.out == nullptr)) {
    return InvalidArgumentError("layernorm: x, weight and out are required");
  }
  if (p.out_cast != nullptr && p.out_cast == static_cast<void*>(p.x)) {
    return InvalidArgumentError("layernorm: out_cast must not alias x");
  }
  if (!(p.eps > 0) || !std::isfinite(p.eps)) {
    return InvalidArgumentError("layernorm: eps must be finite and positive");
  }
  return Status::Ok();
}

Status layernorm_ref(const LayerNormParams& p) {
  RETURN_IF_ERROR(ValidateHost(p));
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const float* x = AddInputs(p, r);
    double mean = 0;
    for (int64_t i = 0; i < p.dim; ++i) mean += x[i];
    mean /= static_cast<double>(p.dim);
    double var = 0;
    for (int64_t i = 0; i < p.dim; ++i) var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<double>(p.dim);
    const double inv = 1.0 / std::sqrt(var + static_cast<double>(p.eps));
    float* out = p.out + r * p.dim;
    float* cast = p.out_cast ? static_cast<float*>(p.out_cast) + r * p.dim : nullptr;
    for (int64_t i = 0; i < p.dim; ++i) {
      double y = (x[i] - mean) * inv * p.weight[i];
      if (p.bias != nullptr) y += p.bias[i];
      out[i] = static_cast<float>(y);
      if (cast != nullptr) cast[i] = out[i];
    }
  }
  return Status::Ok();
}

Status layernorm_cpu(const LayerNormParams& p) {
  RETURN_IF_ERROR(ValidateHost(p));
  ThreadPool::Global().ParallelFor(p.n_rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* x = AddInputs(p, r);
      const float n = static_cast<float>(p.dim);
      float sum = 0;
      for (int64_t i = 0; i < p.dim; ++i) sum += x[i];
      const float mean0 = sum / n;
      // The corrected two-pass variance: the sum of (x - mean0) is the first mean's rounding
      // (large where the mean is large against the spread), taken out of the mean and variance.
      float c = 0, sq = 0;
      for (int64_t i = 0; i < p.dim; ++i) {
        const float d = x[i] - mean0;
        c += d;
        sq += d * d;
      }
      const float shift = c / n;
      const float mean = mean0 + shift;
      const float inv = 1.0f / std::sqrt(std::max(sq / n - shift * shift, 0.0f) + p.eps);
      float* out = p.out + r * p.dim;
      float* cast = p.out_cast ? static_cast<float*>(p.out_cast) + r * p.dim : nullptr;
      for (int64_t i = 0; i < p.dim; ++i) {
        float y = (x[i] - mean) * inv * p.weight[i];
        if (p.bias != nullptr) y += p.bias[i];
        out[i] = y;
        if (cast != nullptr) cast[i] = y;
      }
    }
  });
  return Status::Ok();
}

}  // namespace forge
