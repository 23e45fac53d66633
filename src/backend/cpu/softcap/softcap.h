// Soft-capping of F32 values in place: x = cap * tanh(x / cap) (Gemma 2's final logits).
#pragma once

#include <cstdint>

#include "base/status.h"

namespace forge {

struct SoftCapParams {
  float* x = nullptr;  // [n]
  int64_t n = 0;
  float cap = 0.0f;  // finite and positive
};

// Checks the cap; shared by every backend.
Status ValidateSoftCap(const SoftCapParams& p);
// Reference: tanh in double.
Status softcap_ref(const SoftCapParams& p);

}  // namespace forge
