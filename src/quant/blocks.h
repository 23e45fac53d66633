// The stored block layouts of the ggml weight formats, byte for byte as GGUF files hold them
// (little-endian; F16 scales kept as raw uint16_t bits). Sizes are checked against the type table.
#pragma once

#include <cstdint>

namespace forge {

inline constexpr int kQK = 32;           // elements per block of the legacy formats (Q4_0 .. Q8_0)
inline constexpr int kQK_K = 256;        // elements per super-block of the k-quants
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K / Q5_K

// value = d * (q - 8), q in [0, 15]; element j in the low nibble of qs[j], j + 16 in the high.
struct BlockQ4_0 {
  uint16_t d;      // F16 scale
  uint8_t qs[16];  // nibbles
};

// value = d * q + m, q in [0, 15]; nibble order as Q4_0.
struct BlockQ4_1 {
  uint16_t d;      // F16 scale
  uint16_t m;      // F16 minimum (offset)
  uint8_t qs[16];  // nibbles
};

// value = d * (q - 16), q in [0, 31]: low 4 bits as Q4_0, the fifth bit of element j is bit j
// of qh (read as a little-endian uint32).
struct BlockQ5_0 {
  uint16_t d;      // F16 scale
  uint8_t qh[4];   // fifth bits, element j -> bit j
  uint8_t qs[16];  // low nibbles
};

// value = d * q + m, q in [0, 31]; bit layout as Q5_0.
struct BlockQ5_1 {
  uint16_t d;      // F16 scale
  uint16_t m;      // F16 minimum
  uint8_t qh[4];   // fifth bits
  uint8_t qs[16];  // low nibbles
};

// value = d * q, q in [-128, 127] (the quantizer uses [-127, 127]).
struct BlockQ8_0 {
  uint16_t d;     // F16 scale
  int8_t qs[32];  // values
};

// 16 groups of 16: value = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4), q in [0, 3];
// element 128h + 32k + l (h < 2, k < 4, l < 32) is bits 2k..2k+1 of qs[32h + l].
struct BlockQ2_K {
  uint8_t scales[16];  // low nibble: scale, high nibble: min, per group of 16
  uint8_t qs[64];      // 2-bit quants
  uint16_t d;          // F16 super-block scale of the scales
  uint16_t dmin;       // F16 super-block scale of the mins
};

// 16 groups of 16: value = d * (s[g] - 32) * (q - (hmask bit set ? 0 : 4)): the low 2 bits of
// q as Q2_K's qs, the high bit of element e at hmask[e % 32] bit e / 32. The 6-bit scales s[g]:
// low 4 bits in scales[g] (g < 8) or scales[g - 8] >> 4; high 2 bits in scales[8 + g % 4] at
// bit 2 * (g / 4).
struct BlockQ3_K {
  uint8_t hmask[32];   // high bits of the 3-bit quants
  uint8_t qs[64];      // low 2 bits
  uint8_t scales[12];  // 16 packed 6-bit scales, offset by 32
  uint16_t d;          // F16 super-block scale
};

// 8 groups of 32: value = d * sc[g] * q - dmin * m[g], q in [0, 15]. qs[32 * i + l] holds
// element 64 * i + l (low nibble) and 64 * i + 32 + l (high nibble). sc/m 6-bit, packed:
// g < 4: sc = scales[g] & 63, m = scales[g + 4] & 63; g >= 4: sc = (scales[g + 4] & 15) |
// (scales[g - 4] >> 6) << 4, m = (scales[g + 4] >> 4) | (scales[g] >> 6) << 4.
struct BlockQ4_K {
  uint16_t d;                    // F16 super-block scale of the scales
  uint16_t dmin;                 // F16 super-block scale of the mins
  uint8_t scales[kKScaleBytes];  // packed 6-bit scales and mins
  uint8_t qs[128];               // nibbles
};

// Q4_K plus a fifth bit: element 64 * i + l has it at qh[l] bit 2 * i, element 64 * i + 32 + l
// at qh[l] bit 2 * i + 1; q in [0, 31].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[32];   // fifth bits
  uint8_t qs[128];  // low nibbles
};

// 16 groups of 16: value = d * scales[g] * (q - 32), q in [0, 63]. In each 128-element half h,
// for l < 32: ql[64h + l] holds elements 128h + l (low nibble) and 128h + 64 + l (high);
// ql[64h + 32 + l] holds 128h + 32 + l and 128h + 96 + l; their high 2 bits are qh[32h + l]
// bits 0-1, 4-5, 2-3 and 6-7 respectively (+0, +64, +32, +96).
struct BlockQ6_K {
  uint8_t ql[128];    // low 4 bits
  uint8_t qh[64];     // high 2 bits
  int8_t scales[16];  // signed 8-bit scales per group of 16
  uint16_t d;         // F16 super-block scale
};

// The activation format of k-quant dot products: value = d * qs[i]; bsums[g] = sum of the 16
// quants of group g.
struct BlockQ8_K {
  float d;            // F32 scale
  int8_t qs[256];     // values
  int16_t bsums[16];  // sums of groups of 16
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

}  // namespace forge
