// kv_write_ref: the slot index is the row of [num_slots, n_kv_heads * head_dim].
#include <cstring>
#include <string>

#include "backend/cpu/kv_write/kv_write.h"

namespace forge {

Status kv_write_ref(const KvWriteParams& p) {
  const int64_t row = p.n_kv_heads * p.head_dim;
  const int64_t ks = p.k_stride ? p.k_stride : row;
  const int64_t vs = p.v_stride ? p.v_stride : row;
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    int64_t slot = p.slot_mapping[t];
    if (slot < 0) continue;
    if (slot >= p.num_slots) {
      return OutOfRangeError("kv_write: slot " + std::to_string(slot) + " >= " +
                             std::to_string(p.num_slots));
    }
    std::memcpy(p.k_cache + slot * row, p.k + t * ks, row * sizeof(float));
    std::memcpy(p.v_cache + slot * row, p.v + t * vs, row * sizeof(float));
  }
  return Status::Ok();
}

}  // namespace forge
