// ExpertSum: a mixture-of-experts layer's output, the routed experts' outputs weighted:
//   out[t, :] = sum over s < k of weights[t, s] * y[t, s, :]
//             (+ sigmoid(shared_gate[t]) * shared[t, :] where a shared expert is given, Qwen2-MoE)
// summed in slot order.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace forge {

struct ExpertSumParams {
  const float* y = nullptr;        // [n_tokens, k, n]: expert slot s of token t at row t * k + s
  const float* weights = nullptr;  // [n_tokens, k]
  float* out = nullptr;            // [n_tokens, n]
  int64_t n_tokens = 0, k = 0, n = 0;
  const float* shared = nullptr;       // [n_tokens, n] the shared expert's output, or null
  const float* shared_gate = nullptr;  // [n_tokens] its gate's logit (null: weight 1)
};

// Reference: sums in double.
Status expert_sum_ref(const ExpertSumParams& p);

}  // namespace forge
