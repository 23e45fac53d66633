// Rotary position embedding, in place, on [n_tokens, n_heads, head_dim]:
// angle_i = pos * freq_scale * theta^(-2i / rope_dims) / freq_factors[i] for i < rope_dims / 2.
// Adjacent style rotates (x[2i], x[2i+1]); NEOX style rotates (x[i], x[i + rope_dims / 2]).
// Dimensions past rope_dims are left as they are.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"

namespace forge {

enum class RopeStyle { kAdjacent, kNeox };

struct RopeParams {
  void* x = nullptr;                   // [n_tokens, n_heads, head_dim], row stride token_stride
  const int32_t* positions = nullptr;  // [n_tokens]
  int64_t n_tokens = 0;
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  int64_t token_stride = 0;  // floats between tokens; 0: n_heads * head_dim
  int64_t rope_dims = 0;     // even, <= head_dim
  float theta = 10000.0f;
  float freq_scale = 1.0f;              // linear scaling: 1 / factor
  const float* freq_factors = nullptr;  // [rope_dims / 2] or null (Llama 3.1 rope_freqs)
  RopeStyle style = RopeStyle::kAdjacent;
  DType dtype = DType::kF32;  // of x (the CPU: F32 only)
};

// Angles and their sines and cosines in double.
Status rope_ref(const RopeParams& p);

}  // namespace forge
