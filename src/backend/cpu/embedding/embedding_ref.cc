// embedding_ref: one DequantizeRow per token; ids are checked against the vocab.
#include "backend/cpu/embedding/embedding.h"

#include <string>

#include "quant/dequantize.h"

namespace forge {

Status embedding_ref(const EmbeddingParams& p) {
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    int32_t id = p.ids[t];
    if (id < 0 || id >= p.table.rows) {
      return OutOfRangeError("token id " + std::to_string(id) + " outside the vocabulary of " +
                             std::to_string(p.table.rows));
    }
    RETURN_IF_ERROR(DequantizeRow(p.table.type, p.table.row(id), p.out + t * p.table.cols,
                                  p.table.cols));
  }
  return Status::Ok();
}

}  // namespace forge
