// Route: a mixture-of-experts router's choice for each token: the k experts of highest score and
// their weights, from the router's logits.
//   probs  = softmax(logits) (kSoftmax), sigmoid(logits) (kSigmoid) or the logits (kSoftmaxTopK)
//   chosen = the k highest of probs + bias (bias: a selection bias, null: none), best first; of
//            equal values the lower expert index first
//   w      = probs at the chosen experts; kSoftmaxTopK: softmax over those k
//   w      = w / max(sum w, 2^-14) where normalize; then w * scale
// (the gating functions of llama.cpp's `expert_gating_func`: Mixtral and Qwen use softmax,
// gpt-oss the softmax of the chosen logits).
#pragma once

#include <cstdint>

#include "base/status.h"

namespace forge {

enum class ExpertGating : int { kSoftmax = 0, kSigmoid = 1, kSoftmaxTopK = 2 };

struct RouteParams {
  const float* logits = nullptr;  // [n_tokens, n_expert]
  const float* bias = nullptr;    // [n_expert] or null
  int32_t* ids = nullptr;         // [n_tokens, k]
  float* weights = nullptr;       // [n_tokens, k]
  int64_t n_tokens = 0, n_expert = 0, k = 0;
  ExpertGating gating = ExpertGating::kSoftmax;
  bool normalize = false;
  float scale = 1.0f;
};

// The most experts a router may have (the CUDA kernel keeps a token's scores in one warp's
// registers); k is at most 32 and at most n_expert.
inline constexpr int64_t kMaxExperts = 512;

// Checks the counts; shared by every backend.
Status ValidateRoute(const RouteParams& p);
// Reference: probabilities and weights in double.
Status route_ref(const RouteParams& p);

}  // namespace forge
