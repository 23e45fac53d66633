// Writes the new tokens' K and V into the paged cache by slot mapping:
// cache[slot / block_size, slot % block_size, :, :] = k[t]; slot < 0 skips the token.
#pragma once

#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"

namespace forge {

struct KvWriteParams {
  const void* k = nullptr;  // [n_tokens, n_kv_heads, head_dim], row stride k_stride
  const void* v = nullptr;  // [n_tokens, n_kv_heads, head_dim], row stride v_stride
  int64_t k_stride = 0;     // 0: n_kv_heads * head_dim
  int64_t v_stride = 0;
  const int32_t* slot_mapping = nullptr;  // [n_tokens]
  int64_t n_tokens = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t num_slots = 0;    // num_blocks * block_size (bounds check)
  void* k_cache = nullptr;  // [num_blocks, block_size, n_kv_heads, head_dim]
  void* v_cache = nullptr;
  DType dtype = DType::kF32;     // of the cache (the CPU: F32 only)
  DType src_type = DType::kF32;  // of k and v, converted to dtype on the way in
};

Status kv_write_ref(const KvWriteParams& p);

}  // namespace forge
