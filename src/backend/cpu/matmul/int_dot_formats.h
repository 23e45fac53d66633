// Where each block format keeps its integers, for the integer dot products: the weights' stored
// integers u of a block (as src/quant's dequantizers read them) and a k-quant block's decoded
// group scales, minimums and factors. Scalar; the vector paths use the scales and their own
// unpacking of u.
#pragma once

#include <cstdint>

#include "quant/type_table.h"

namespace forge::int_dot_formats {

// A legacy block (32 elements): value = d * (u - offset), or d * u + m where has_min.
struct LegacyLayout {
  int offset = 0;
  bool has_min = false;
  int qs_at = 2;   // byte offset of the 16 nibble bytes (Q8_0: of the 32 int8 values)
  int qh_at = -1;  // byte offset of the 4 fifth-bit bytes (Q5_0 / Q5_1), -1 if none
};
constexpr LegacyLayout LegacyLayoutOf(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
      return {8, false, 2, -1};
    case GgmlType::kQ4_1:
      return {0, true, 4, -1};
    case GgmlType::kQ5_0:
      return {16, false, 6, 2};
    case GgmlType::kQ5_1:
      return {0, true, 8, 4};
    default:
      return {0, false, 2, -1};  // Q8_0
  }
}
// u[0, 32) of a legacy block (Q8_0: its signed values).
void LegacyUnpack(GgmlType t, const uint8_t* blk, int16_t* u);

// A k-quant block in groups of 16: value = d * sc[g] * (u - offset) - dmin * mn[g] (the minimum
// term only where has_min; Q4_K / Q5_K's groups of 32 as two groups of 16 with equal scales).
struct KScales {
  int32_t sc[16] = {}, mn[16] = {};
  int offset = 0;
  bool has_min = false;
  float d = 0, dmin = 0;
};
// u[0, 256) and the scales of a k-quant block.
void KUnpack(GgmlType t, const uint8_t* blk, int16_t* u, KScales* s);
// The scales alone.
void KDecodeScales(GgmlType t, const uint8_t* blk, KScales* s);

}  // namespace forge::int_dot_formats
