// pool_ref: sums and norms in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/pool/pool.h"

namespace forge {

const char* PoolingName(PoolingType type) {
  switch (type) {
    case PoolingType::kNone:
      return "none";
    case PoolingType::kMean:
      return "mean";
    case PoolingType::kCls:
      return "cls";
    case PoolingType::kLast:
      return "last";
  }
  return "unknown";
}

Status ValidatePool(const PoolParams& p) {
  if (p.n_seqs < 0 || p.dim <= 0) return InvalidArgumentError("pool: bad shape");
  if (p.type != PoolingType::kMean && p.type != PoolingType::kCls && p.type != PoolingType::kLast) {
    return InvalidArgumentError("pool: the pooling type must be mean, cls or last");
  }
  if (p.n_seqs > 0 && (p.x == nullptr || p.cu_seqlens == nullptr || p.out == nullptr)) {
    return InvalidArgumentError("pool: x, cu_seqlens and out are required");
  }
  return Status::Ok();
}

Status pool_ref(const PoolParams& p) {
  RETURN_IF_ERROR(ValidatePool(p));
  std::vector<double> acc(p.dim);
  for (int64_t s = 0; s < p.n_seqs; ++s) {
    const int64_t begin = p.cu_seqlens[s], end = p.cu_seqlens[s + 1];
    if (begin < 0 || end < begin) return InvalidArgumentError("pool: cu_seqlens must not decrease");
    std::fill(acc.begin(), acc.end(), 0.0);
    if (end > begin) {
      if (p.type == PoolingType::kMean) {
        for (int64_t t = begin; t < end; ++t) {
          for (int64_t i = 0; i < p.dim; ++i) acc[i] += p.x[t * p.dim + i];
        }
        for (double& v : acc) v /= static_cast<double>(end - begin);
      } else {
        const int64_t t = p.type == PoolingType::kCls ? begin : end - 1;
        for (int64_t i = 0; i < p.dim; ++i) acc[i] = p.x[t * p.dim + i];
      }
    }
    double scale = 1.0;
    if (p.normalize) {
      double sq = 0;
      for (double v : acc) sq += v * v;
      scale = sq > 0 ? 1.0 / std::sqrt(sq) : 0.0;
    }
    for (int64_t i = 0; i < p.dim; ++i) p.out[s * p.dim + i] = static_cast<float>(acc[i] * scale);
  }
  return Status::Ok();
}

}  // namespace forge
