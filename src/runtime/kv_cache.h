// KvCache: per layer, separate K and V pools in backend memory, laid out
// [num_blocks, block_size, n_kv_heads, head_dim] (DESIGN.md), F32 on the CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"

namespace forge {

struct KvCacheShape {
  int64_t n_layer = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;
  int64_t num_blocks = 0;
  int64_t dtype_bytes = 4;

  int64_t bytes_per_block() const { return 2 * n_layer * block_size * n_kv_heads * head_dim * dtype_bytes; }
  int64_t bytes() const { return num_blocks * bytes_per_block(); }
};

// Blocks for a context of ctx_size tokens per sequence times max_seqs, capped by a byte budget
// (0 = no cap). Error when not even one full context fits.
StatusOr<int64_t> PlanKvBlocks(const KvCacheShape& shape, int64_t ctx_size, int64_t max_seqs,
                               int64_t budget_bytes);

class KvCache {
 public:
  static StatusOr<std::unique_ptr<KvCache>> Create(Backend& backend, const KvCacheShape& shape);
  const KvCacheShape& shape() const { return shape_; }
  float* k(int64_t layer) { return k_[layer]->f32(); }
  float* v(int64_t layer) { return v_[layer]->f32(); }

 private:
  KvCacheShape shape_;
  std::vector<std::unique_ptr<BackendBuffer>> k_, v_;
};

}  // namespace forge
