// embedding_ref: one DequantizeRow per token; ids are checked against the vocab.
#include "backend/cpu/embedding/embedding.h"

#include <algorithm>
#include <string>

#include "quant/dequantize.h"

namespace forge {

Status embedding_ref(const EmbeddingParams& p) {
  const int64_t n_vocab = p.n_vocab > 0 ? p.n_vocab : p.table.rows;
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    int32_t id = p.ids[t];
    if (id < 0 || id >= n_vocab) {
      return OutOfRangeError("token id " + std::to_string(id) + " outside the vocabulary of " +
                             std::to_string(n_vocab));
    }
    float* out = p.out + t * p.table.cols;
    const int64_t row = id - p.row_offset;
    if (row < 0 || row >= p.table.rows) {
      std::fill(out, out + p.table.cols, 0.0f);
      continue;
    }
    RETURN_IF_ERROR(DequantizeRow(p.table.type, p.table.row(row), out, p.table.cols));
    if (p.scale != 1.0f) {
      for (int64_t i = 0; i < p.table.cols; ++i) out[i] *= p.scale;
    }
  }
  return Status::Ok();
}

}  // namespace forge
