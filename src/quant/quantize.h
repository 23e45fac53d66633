// CPU reference quantization: F32 values -> stored blocks of any supported type. Q4_0, Q4_1,
// Q5_0, Q5_1 and Q8_0 reproduce llama.cpp's bytes; the k-quants are plain round-to-nearest.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "quant/type_table.h"

namespace forge {

// Quantizes n elements (a multiple of the type's block size) from src into RowBytes(type, n)
// bytes at dst (any alignment). Requires: finite values (as ggml). Scales are stored as F16
// where the format says so: a block whose scale exceeds the F16 range gets Inf, as in ggml.
Status QuantizeRow(GgmlType type, const float* src, uint8_t* dst, int64_t n);

}  // namespace forge
