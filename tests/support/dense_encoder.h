// An encoder forward pass written apart from Forge's, as the embedding tests' oracle: BERT's layer
// (learned positions and token type 0 added to the token embeddings, LayerNorm after the
// embeddings and after each sublayer, biases where the file has them, exact GELU) or
// nomic-bert's (rotary NeoX positions, one qkv matrix, SwiGLU), every query seeing every key, in
// double precision from a GGUF's F32 tensors; and the pooling of any model's last states.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/pool/pool.h"
#include "gguf/gguf_file.h"

namespace forge::testing {

// [ids.size(), n_embd]: the last layer's output of an encoder file (bert or nomic-bert).
std::vector<double> DenseEncode(const GgufFile& f, const std::vector<int32_t>& ids);

// One L2-normalized vector [dim] of the rows [n, dim] of `hidden` pooled as `type` says.
std::vector<double> DensePool(const std::vector<double>& hidden, int64_t dim, PoolingType type);

}  // namespace forge::testing
