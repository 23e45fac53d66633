// WeightView: a 2-D weight matrix in its stored format, viewed without a copy: `rows` output
// features, each a row of `cols` input features in `type`'s blocks. GGUF dims are [cols, rows].
#pragma once

#include <cstdint>

#include "quant/type_table.h"

namespace forge {

struct WeightView {
  GgmlType type = GgmlType::kF32;
  int64_t rows = 0;       // output features (N)
  int64_t cols = 0;       // input features (K), a multiple of the type's block size
  int64_t row_bytes = 0;  // bytes of one row
  const uint8_t* data = nullptr;  // [rows][row_bytes]; host or device memory per backend

  const uint8_t* row(int64_t r) const { return data + r * row_bytes; }
  int64_t bytes() const { return rows * row_bytes; }
  // Rows [begin, begin + count) as their own view (fused QKV / gate-up splits).
  WeightView Rows(int64_t begin, int64_t count) const {
    WeightView v = *this;
    v.rows = count;
    v.data = data + begin * row_bytes;
    return v;
  }
};

}  // namespace forge
