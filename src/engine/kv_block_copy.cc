// CopyKvBlocks through a host bounce buffer.
#include "engine/kv_block_copy.h"

#include <string>
#include <vector>

namespace forge {

Status CopyKvBlocks(Backend& backend, KvCache& cache, std::span<const BlockCopy> copies) {
  if (copies.empty()) return Status::Ok();
  const KvCacheShape& s = cache.shape();
  const size_t block_bytes =
      static_cast<size_t>(s.block_size * s.n_kv_heads * s.head_dim * s.dtype_bytes);
  std::vector<char> scratch(block_bytes);
  for (const BlockCopy& c : copies) {
    if (c.src < 0 || c.src >= s.num_blocks || c.dst < 0 || c.dst >= s.num_blocks) {
      return InternalError("KV block copy " + std::to_string(c.src) + " -> " +
                           std::to_string(c.dst) + " outside the pool of " +
                           std::to_string(s.num_blocks) + " blocks");
    }
    for (int64_t l = 0; l < s.n_layer; ++l) {
      for (float* pool : {cache.k(l), cache.v(l)}) {
        char* base = reinterpret_cast<char*>(pool);
        RETURN_IF_ERROR(backend.Download(scratch.data(), base + c.src * block_bytes, block_bytes));
        RETURN_IF_ERROR(backend.Upload(base + c.dst * block_bytes, scratch.data(), block_bytes));
      }
    }
  }
  return backend.Synchronize();
}

}  // namespace forge
