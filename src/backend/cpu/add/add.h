// Elementwise add of two F32 vectors: out[i] = a[i] + b[i] (the residual add).
#pragma once

#include <cstdint>

#include "base/status.h"

namespace forge {

struct AddParams {
  const float* a = nullptr;  // [n]
  const float* b = nullptr;  // [n]
  float* out = nullptr;      // [n]; may alias a or b
  int64_t n = 0;
};

// CPU reference.
Status add_ref(const AddParams& p);

}  // namespace forge
