// The gated linear unit of the FFN: out[t, i] = act(gate[t, i]) * up[t, i], with act SiLU
// (SwiGLU: silu(x) = x / (1 + exp(-x))), GELU in its tanh form (GeGLU, Gemma:
// gelu(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))) or GELU exactly
// (x / 2 * (1 + erf(x / sqrt(2)))). Without up, the plain activation out = act(gate) (BERT's FFN).
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"

namespace forge {

enum class GluAct : int { kSilu = 0, kGeluTanh = 1, kGeluErf = 2 };

struct SwigluParams {
  const void* gate = nullptr;  // [n_tokens, dim], row stride gate_stride
  const void* up = nullptr;    // [n_tokens, dim], row stride up_stride; null: out = act(gate)
  void* out = nullptr;         // [n_tokens, dim], contiguous; may alias gate if the types match
  int64_t n_tokens = 0;
  int64_t dim = 0;
  int64_t gate_stride = 0;       // 0: dim
  int64_t up_stride = 0;         // 0: dim
  DType in_type = DType::kF32;   // of gate and up (the CPU: F32 only)
  DType out_type = DType::kF32;  // of out (the CPU: F32 only)
  // Also out's one row in the form a matmul takes as MatmulParams::xq (n_tokens 1; only where
  // Backend::QuantizedActivationBytes offered it), or null.
  void* out_q = nullptr;
  GluAct act = GluAct::kSilu;
};

Status swiglu_ref(const SwigluParams& p);

}  // namespace forge
