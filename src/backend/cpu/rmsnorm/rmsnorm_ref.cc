// rmsnorm_ref and rmsnorm_cpu.
#include <cmath>

#include "backend/cpu/rmsnorm/rmsnorm.h"
#include "base/thread_pool.h"

namespace forge {

Status rmsnorm_ref(const RmsNormParams& p) {
  if (p.x_type != DType::kF32) return UnsupportedDType("rmsnorm", p.x_type);
  if (p.out_type != DType::kF32) return UnsupportedDType("rmsnorm", p.out_type);
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const float* x = static_cast<const float*>(p.x) + r * p.dim;
    double ss = 0;
    for (int64_t i = 0; i < p.dim; ++i) ss += static_cast<double>(x[i]) * x[i];
    double scale = 1.0 / std::sqrt(ss / p.dim + p.eps);
    float* o = static_cast<float*>(p.out) + r * p.dim;
    for (int64_t i = 0; i < p.dim; ++i) o[i] = static_cast<float>(x[i] * scale * p.weight[i]);
  }
  return Status::Ok();
}

Status rmsnorm_cpu(const RmsNormParams& p) {
  // Each row is computed the same way whatever the batch; double accumulation keeps it accurate.
  if (p.x_type != DType::kF32) return UnsupportedDType("rmsnorm", p.x_type);
  if (p.out_type != DType::kF32) return UnsupportedDType("rmsnorm", p.out_type);
  ThreadPool::Global().ParallelFor(
      p.n_rows,
      [&](int64_t begin, int64_t end) {
        RmsNormParams sub = p;
        sub.x = static_cast<const float*>(p.x) + begin * p.dim;
        sub.out = static_cast<float*>(p.out) + begin * p.dim;
        sub.n_rows = end - begin;
        (void)rmsnorm_ref(sub);
      },
      16);
  return Status::Ok();
}

}  // namespace forge
