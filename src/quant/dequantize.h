// CPU reference dequantization: stored blocks of any supported type -> F32 values.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "quant/type_table.h"

namespace forge {

// Dequantizes n elements (a multiple of the type's block size) starting at src (any alignment);
// bit exact with ggml's dequantization for every supported type. Quantizing: quant/quantize.h.
Status DequantizeRow(GgmlType type, const uint8_t* src, float* dst, int64_t n);

}  // namespace forge
