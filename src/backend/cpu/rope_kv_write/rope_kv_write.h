// RoPE on q and k, then K and V into the paged cache: the ops of every layer between the q/k/v
// projections and attention, as one op so that a GPU runs them in one launch.
#pragma once

#include "backend/cpu/kv_write/kv_write.h"
#include "backend/cpu/rope/rope.h"

namespace forge {

struct RopeKvWriteParams {
  RopeParams q;      // q in place
  RopeParams k;      // k in place; the same positions, tokens and rotation as q
  KvWriteParams kv;  // writes the rotated k (kv.k == k.x) and v
};

// rope_ref(q), rope_ref(k), kv_write_ref(kv).
Status rope_kv_write_ref(const RopeKvWriteParams& p);

}  // namespace forge
