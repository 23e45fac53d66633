// Vectorized dequantization for the CPU matmul: bit-identical to DequantizeRow (the same
// products, in float), AVX2 for the formats decode time is spent on, DequantizeRow otherwise.
#pragma once

#include <cstdint>

#include "quant/type_table.h"

namespace forge {

// Requires: n is a multiple of the type's block size.
void DequantizeRowFast(GgmlType type, const uint8_t* src, float* dst, int64_t n);

}  // namespace forge
