// KvCache allocation and block planning.
#include "runtime/kv_cache.h"

#include <string>

namespace forge {

StatusOr<int64_t> PlanKvBlocks(const KvCacheShape& s, int64_t ctx_size, int64_t max_seqs,
                               int64_t budget_bytes) {
  if (ctx_size <= 0 || max_seqs <= 0)
    return InvalidArgumentError("ctx_size and max_seqs must be > 0");
  const int64_t per_seq = (ctx_size + s.block_size - 1) / s.block_size;
  int64_t blocks = per_seq * max_seqs;
  if (budget_bytes > 0) {
    int64_t fit = budget_bytes / s.bytes_per_block();
    if (fit < per_seq) {
      return ResourceExhaustedError(
          "KV cache budget of " + std::to_string(budget_bytes >> 20) + " MiB holds " +
          std::to_string(fit) + " blocks; one context of " + std::to_string(ctx_size) +
          " tokens needs " + std::to_string(per_seq) + " (" +
          std::to_string((per_seq * s.bytes_per_block()) >> 20) + " MiB)");
    }
    blocks = std::min(blocks, fit);
  }
  return blocks;
}

StatusOr<std::unique_ptr<KvCache>> KvCache::Create(Backend& backend, const KvCacheShape& shape) {
  Backend* one[] = {&backend};
  return Create(one, shape);
}

StatusOr<std::unique_ptr<KvCache>> KvCache::Create(std::span<Backend* const> ranks,
                                                   const KvCacheShape& shape) {
  auto cache = std::unique_ptr<KvCache>(new KvCache());
  cache->shape_ = shape;
  const size_t bytes = static_cast<size_t>(shape.num_blocks * shape.bytes_per_layer_block());
  for (Backend* backend : ranks) {
    auto& k_pools = cache->k_.emplace_back();
    auto& v_pools = cache->v_.emplace_back();
    for (int64_t l = 0; l < shape.n_layer; ++l) {
      ASSIGN_OR_RETURN(auto k, backend->Alloc(bytes));
      ASSIGN_OR_RETURN(auto v, backend->Alloc(bytes));
      k_pools.push_back(std::move(k));
      v_pools.push_back(std::move(v));
    }
  }
  return cache;
}

}  // namespace forge
