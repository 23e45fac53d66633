// softcap_ref.
#include <cmath>

#include "backend/cpu/softcap/softcap.h"

namespace forge {

Status ValidateSoftCap(const SoftCapParams& p) {
  if (!(p.cap > 0) || !std::isfinite(p.cap)) {
    return InvalidArgumentError("softcap: the cap must be finite and positive");
  }
  if (p.n < 0) return InvalidArgumentError("softcap: negative length");
  return Status::Ok();
}

Status softcap_ref(const SoftCapParams& p) {
  RETURN_IF_ERROR(ValidateSoftCap(p));
  const double cap = p.cap;
  for (int64_t i = 0; i < p.n; ++i) p.x[i] = static_cast<float>(cap * std::tanh(p.x[i] / cap));
  return Status::Ok();
}

}  // namespace forge
