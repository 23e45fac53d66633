// add_ref: the plain loop.
#include "backend/cpu/add/add.h"

namespace forge {

Status add_ref(const AddParams& p) {
  if (p.n < 0) return InvalidArgumentError("add: n = " + std::to_string(p.n));
  if (p.n > 0 && (p.a == nullptr || p.b == nullptr || p.out == nullptr)) {
    return InvalidArgumentError("add: null pointer");
  }
  for (int64_t i = 0; i < p.n; ++i) p.out[i] = p.a[i] + p.b[i];
  return Status::Ok();
}

}  // namespace forge
