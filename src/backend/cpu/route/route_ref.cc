// route_ref.
#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/route/route.h"

namespace forge {

Status ValidateRoute(const RouteParams& p) {
  if (p.n_expert < 1 || p.n_expert > kMaxExperts || p.k < 1 || p.k > 32 || p.k > p.n_expert ||
      p.n_tokens < 0) {
    return InvalidArgumentError("route: " + std::to_string(p.k) + " of " +
                                std::to_string(p.n_expert) + " experts (1 to " +
                                std::to_string(kMaxExperts) +
                                " experts, k 1 to 32 and at most "
                                "the experts) for " +
                                std::to_string(p.n_tokens) + " tokens");
  }
  if (!(p.scale > 0) || !std::isfinite(p.scale)) {
    return InvalidArgumentError("route: the weights' scale must be finite and positive");
  }
  return Status::Ok();
}

Status route_ref(const RouteParams& p) {
  RETURN_IF_ERROR(ValidateRoute(p));
  const int64_t E = p.n_expert, K = p.k;
  std::vector<double> probs(E), chosen(K);
  std::vector<bool> taken(E);
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    const float* logits = p.logits + t * E;
    double mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < E; ++e) mx = std::max(mx, static_cast<double>(logits[e]));
    for (int64_t e = 0; e < E; ++e) {
      const double z = logits[e];
      switch (p.gating) {
        case ExpertGating::kSoftmax:
          probs[e] = std::exp(z - mx);
          sum += probs[e];
          break;
        case ExpertGating::kSigmoid:
          probs[e] = 1.0 / (1.0 + std::exp(-z));
          break;
        case ExpertGating::kSoftmaxTopK:
          probs[e] = z;
          break;
      }
    }
    if (p.gating == ExpertGating::kSoftmax) {
      for (double& v : probs) v /= sum;
    }
    std::fill(taken.begin(), taken.end(), false);
    for (int64_t s = 0; s < K; ++s) {
      int64_t best = -1;
      double best_v = 0;
      for (int64_t e = 0; e < E; ++e) {
        const double v = probs[e] + (p.bias != nullptr ? p.bias[e] : 0.0);
        if (!taken[e] && (best < 0 || v > best_v)) {
          best = e;
          best_v = v;
        }
      }
      taken[best] = true;
      p.ids[t * K + s] = static_cast<int32_t>(best);
      chosen[s] = probs[best];
    }
    if (p.gating == ExpertGating::kSoftmaxTopK) {
      double m = -INFINITY, z = 0;
      for (double v : chosen) m = std::max(m, v);
      for (double& v : chosen) z += (v = std::exp(v - m));
      for (double& v : chosen) v /= z;
    }
    double total = 0;
    for (double v : chosen) total += v;
    const double div = p.normalize ? std::max(total, 6.103515625e-5) : 1.0;
    for (int64_t s = 0; s < K; ++s) {
      p.weights[t * K + s] = static_cast<float>(chosen[s] / div * p.scale);
    }
  }
  return Status::Ok();
}

}  // namespace forge
