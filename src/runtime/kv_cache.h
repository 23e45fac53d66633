// KvCache: per layer, separate K and V pools in backend memory, laid out
// [num_blocks, block_size, n_kv_heads, head_dim] (DESIGN.md), in the activation dtype (F32 on the
// CPU; F16 or BF16 on a GPU).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
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
  DType dtype = DType::kF32;

  // One layer's K (or V) block.
  int64_t bytes_per_layer_block() const {
    return block_size * n_kv_heads * head_dim * static_cast<int64_t>(DTypeSize(dtype));
  }
  // K and V of every layer.
  int64_t bytes_per_block() const { return 2 * n_layer * bytes_per_layer_block(); }
  int64_t bytes() const { return num_blocks * bytes_per_block(); }
};

// Blocks for a context of ctx_size tokens per sequence times max_seqs, capped by a byte budget
// (0 = no cap). Error when not even one full context fits.
StatusOr<int64_t> PlanKvBlocks(const KvCacheShape& shape, int64_t ctx_size, int64_t max_seqs,
                               int64_t budget_bytes);

// Under tensor parallelism every rank (backend) holds its own pools of the same shape (its share
// of the KV heads); block ids are shared.
class KvCache {
 public:
  static StatusOr<std::unique_ptr<KvCache>> Create(Backend& backend, const KvCacheShape& shape);
  static StatusOr<std::unique_ptr<KvCache>> Create(std::span<Backend* const> ranks,
                                                   const KvCacheShape& shape);
  const KvCacheShape& shape() const { return shape_; }
  int ranks() const { return static_cast<int>(k_.size()); }
  void* k(int64_t layer, int rank = 0) { return k_[rank][layer]->data(); }
  void* v(int64_t layer, int rank = 0) { return v_[rank][layer]->data(); }

 private:
  KvCacheShape shape_;
  std::vector<std::vector<std::unique_ptr<BackendBuffer>>> k_, v_;  // [rank][layer]
};

}  // namespace forge
