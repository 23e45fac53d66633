// kv_write_ref: the slot index is the row of [num_slots, n_kv_heads * head_dim].
#include <cstring>
#include <string>

#include "backend/cpu/kv_write/kv_write.h"

namespace forge {

Status kv_write_ref(const KvWriteParams& p) {
  if (p.dtype != DType::kF32) return UnsupportedDType("kv_write", p.dtype);
  if (p.src_type != DType::kF32) return UnsupportedDType("kv_write", p.src_type);
  const float* k = static_cast<const float*>(p.k);
  const float* v = static_cast<const float*>(p.v);
  float* k_cache = static_cast<float*>(p.k_cache);
  float* v_cache = static_cast<float*>(p.v_cache);
  const int64_t row = p.n_kv_heads * p.head_dim;
  const int64_t ks = p.k_stride ? p.k_stride : row;
  const int64_t vs = p.v_stride ? p.v_stride : row;
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    int64_t slot = p.slot_mapping[t];
    if (slot < 0) continue;
    if (slot >= p.num_slots) {
      return OutOfRangeError("kv_write: slot " + std::to_string(slot) +
                             " >= " + std::to_string(p.num_slots));
    }
    std::memcpy(k_cache + slot * row, k + t * ks, row * sizeof(float));
    std::memcpy(v_cache + slot * row, v + t * vs, row * sizeof(float));
  }
  return Status::Ok();
}

}  // namespace forge
