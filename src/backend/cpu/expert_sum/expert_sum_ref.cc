// expert_sum_ref.
#include <cmath>

#include "backend/cpu/expert_sum/expert_sum.h"

namespace forge {

Status expert_sum_ref(const ExpertSumParams& p) {
  if (p.n_tokens < 0 || p.k < 1 || p.n < 0) return InvalidArgumentError("expert_sum: bad counts");
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    double g = 1.0;
    if (p.shared != nullptr && p.shared_gate != nullptr) {
      g = 1.0 / (1.0 + std::exp(-static_cast<double>(p.shared_gate[t])));
    }
    for (int64_t i = 0; i < p.n; ++i) {
      double acc = 0;
      for (int64_t s = 0; s < p.k; ++s) {
        acc += static_cast<double>(p.weights[t * p.k + s]) * p.y[(t * p.k + s) * p.n + i];
      }
      if (p.shared != nullptr) acc += g * p.shared[t * p.n + i];
      p.out[t * p.n + i] = static_cast<float>(acc);
    }
  }
  return Status::Ok();
}

}  // namespace forge
