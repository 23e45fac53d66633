// add_rmsnorm_ref and add_rmsnorm_cpu: the two unfused ops in sequence.
#include "backend/cpu/add_rmsnorm/add_rmsnorm.h"

#include "backend/cpu/add/add.h"
#include "backend/cpu/rmsnorm/rmsnorm.h"

namespace forge {
namespace {

Status AddThenNorm(const AddRmsNormParams& p, Status (*norm)(const RmsNormParams&)) {
  if (p.delta_type != DType::kF32) return UnsupportedDType("add_rmsnorm", p.delta_type);
  if (p.out_type != DType::kF32) return UnsupportedDType("add_rmsnorm", p.out_type);
  RETURN_IF_ERROR(
      add_ref({p.residual, static_cast<const float*>(p.delta), p.residual, p.n_rows * p.dim}));
  return norm({p.residual, p.weight, p.out, p.n_rows, p.dim, p.eps});
}

}  // namespace

Status add_rmsnorm_ref(const AddRmsNormParams& p) { return AddThenNorm(p, rmsnorm_ref); }
Status add_rmsnorm_cpu(const AddRmsNormParams& p) { return AddThenNorm(p, rmsnorm_cpu); }

}  // namespace forge
