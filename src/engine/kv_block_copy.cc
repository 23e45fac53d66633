// CopyKvBlocks with the backend's own copies (device to device on a GPU).
#include "engine/kv_block_copy.h"

#include <string>
#include <vector>

namespace forge {

Status CopyKvBlocks(Backend& backend, KvCache& cache, std::span<const BlockCopy> copies, int rank) {
  if (copies.empty()) return Status::Ok();
  const KvCacheShape& s = cache.shape();
  const size_t block_bytes = static_cast<size_t>(s.bytes_per_layer_block());
  for (const BlockCopy& c : copies) {
    if (c.src < 0 || c.src >= s.num_blocks || c.dst < 0 || c.dst >= s.num_blocks) {
      return InternalError("KV block copy " + std::to_string(c.src) + " -> " +
                           std::to_string(c.dst) + " outside the pool of " +
                           std::to_string(s.num_blocks) + " blocks");
    }
    for (int64_t l = 0; l < s.n_layer; ++l) {
      for (void* pool : {cache.k(l, rank), cache.v(l, rank)}) {
        char* base = static_cast<char*>(pool);
        RETURN_IF_ERROR(
            backend.Copy(base + c.dst * block_bytes, base + c.src * block_bytes, block_bytes));
      }
    }
  }
  return Status::Ok();  // ordered before the next step on the backend's queue
}

}  // namespace forge
