// rope_kv_write_ref: the three ops in sequence.
#include "backend/cpu/rope_kv_write/rope_kv_write.h"

namespace forge {

Status rope_kv_write_ref(const RopeKvWriteParams& p) {
  RETURN_IF_ERROR(rope_ref(p.q));
  RETURN_IF_ERROR(rope_ref(p.k));
  return kv_write_ref(p.kv);
}

}  // namespace forge
