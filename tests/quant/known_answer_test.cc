// Known-answer blocks built byte by byte for every format, with the values worked out by hand
// from the format definitions: each scale, min, high-bit and sign field is exercised.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/half.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "quant/type_table.h"

namespace forge {
namespace {

// F16 bit patterns used below.
constexpr uint16_t kHalf1 = 0x3C00;      // 1.0
constexpr uint16_t kHalf0_5 = 0x3800;    // 0.5
constexpr uint16_t kHalf0_25 = 0x3400;   // 0.25
constexpr uint16_t kHalf0_125 = 0x3000;  // 0.125
constexpr uint16_t kHalf2 = 0x4000;      // 2.0
constexpr uint16_t kHalfM1 = 0xBC00;     // -1.0

void Put16(std::vector<uint8_t>& b, size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); }

std::vector<float> Deq(GgmlType type, const std::vector<uint8_t>& block) {
  const TypeTraits& t = GetTypeTraits(type);
  EXPECT_EQ(static_cast<int64_t>(block.size()), t.block_bytes);
  std::vector<float> out(t.block_elems, -12345.0f);
  EXPECT_TRUE(DequantizeRow(type, block.data(), out.data(), t.block_elems).ok());
  return out;
}

TEST(KnownAnswerTest, F16ConstantsAreWhatTheNamesSay) {
  EXPECT_EQ(F16ToF32(kHalf1), 1.0f);
  EXPECT_EQ(F16ToF32(kHalf0_5), 0.5f);
  EXPECT_EQ(F16ToF32(kHalf0_25), 0.25f);
  EXPECT_EQ(F16ToF32(kHalf0_125), 0.125f);
  EXPECT_EQ(F16ToF32(kHalf2), 2.0f);
  EXPECT_EQ(F16ToF32(kHalfM1), -1.0f);
}

// Q4_0: [d f16][16 bytes]; low nibble of byte j -> element j, high -> j + 16; value d * (q - 8).
TEST(KnownAnswerTest, Q4_0) {
  std::vector<uint8_t> b(18);
  Put16(b, 0, kHalf0_5);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto v = Deq(GgmlType::kQ4_0, b);
  EXPECT_EQ(v[0], -4.0f);   // q 0
  EXPECT_EQ(v[8], 0.0f);    // q 8
  EXPECT_EQ(v[15], 3.5f);   // q 15
  EXPECT_EQ(v[16], 3.5f);   // high nibble of byte 0: q 15
  EXPECT_EQ(v[31], -4.0f);  // high nibble of byte 15: q 0
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], 0.5f * (j - 8));
    EXPECT_EQ(v[j + 16], 0.5f * (7 - j));
  }
}

// Q4_1: [d][m][16 bytes]; value d * q + m.
TEST(KnownAnswerTest, Q4_1) {
  std::vector<uint8_t> b(20);
  Put16(b, 0, kHalf0_25);
  Put16(b, 2, kHalfM1);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto v = Deq(GgmlType::kQ4_1, b);
  EXPECT_EQ(v[0], -1.0f);
  EXPECT_EQ(v[15], 2.75f);
  EXPECT_EQ(v[16], 2.75f);
  EXPECT_EQ(v[31], -1.0f);
  EXPECT_EQ(v[5], 0.25f);
}

// Q5_0: [d][qh u32 LE][16 bytes]; fifth bit of element j is qh bit j; value d * (q - 16).
TEST(KnownAnswerTest, Q5_0) {
  std::vector<uint8_t> b(22);
  Put16(b, 0, kHalf1);
  b[2] = 0x55, b[3] = 0x55, b[4] = 0xAA, b[5] = 0xAA;  // qh = 0xAAAA5555
  for (int j = 0; j < 16; ++j) b[6 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto v = Deq(GgmlType::kQ5_0, b);
  EXPECT_EQ(v[0], 0.0f);    // 0 | 16 (bit 0 set) - 16
  EXPECT_EQ(v[1], -15.0f);  // 1, bit 1 clear
  EXPECT_EQ(v[14], 14.0f);  // 14 | 16 - 16
  EXPECT_EQ(v[16], -1.0f);  // 15, bit 16 clear
  EXPECT_EQ(v[17], 14.0f);  // 14 | 16 (bit 17 set) - 16
  EXPECT_EQ(v[31], 0.0f);   // 0 | 16 (bit 31 set) - 16
}

// Q5_1: [d][m][qh][16 bytes]; value d * q + m.
TEST(KnownAnswerTest, Q5_1) {
  std::vector<uint8_t> b(24);
  Put16(b, 0, kHalf0_5);
  Put16(b, 2, kHalf2);
  b[4] = 0x01, b[5] = 0x00, b[6] = 0x00, b[7] = 0x80;  // qh bits 0 and 31
  for (int j = 0; j < 16; ++j) b[8 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto v = Deq(GgmlType::kQ5_1, b);
  EXPECT_EQ(v[0], 10.0f);   // (0 | 16) * 0.5 + 2
  EXPECT_EQ(v[1], 2.5f);    // 1 * 0.5 + 2
  EXPECT_EQ(v[16], 9.5f);   // 15 * 0.5 + 2
  EXPECT_EQ(v[30], 2.5f);   // high nibble of byte 14 = 1
  EXPECT_EQ(v[31], 10.0f);  // (0 | 16) * 0.5 + 2
}

// Q8_0: [d][32 int8]; value d * q, q signed.
TEST(KnownAnswerTest, Q8_0) {
  std::vector<uint8_t> b(34, 0);
  Put16(b, 0, kHalf0_125);
  b[2] = 0x80;  // -128
  b[3] = 0x7F;  // 127
  b[4] = 0xFF;  // -1
  b[5] = 0x05;
  auto v = Deq(GgmlType::kQ8_0, b);
  EXPECT_EQ(v[0], -16.0f);
  EXPECT_EQ(v[1], 15.875f);
  EXPECT_EQ(v[2], -0.125f);
  EXPECT_EQ(v[3], 0.625f);
  EXPECT_EQ(v[31], 0.0f);
}

// Q2_K: [scales 16][qs 64][d][dmin]; group g of 16: d * (scales[g] & 15) * q - dmin *
// (scales[g] >> 4); element 128h + 32k + l reads bits 2k of qs[32h + l].
TEST(KnownAnswerTest, Q2_K) {
  std::vector<uint8_t> b(84);
  for (int g = 0; g < 16; ++g) b[g] = static_cast<uint8_t>(g | ((15 - g) << 4));
  for (int i = 0; i < 64; ++i) b[16 + i] = 0xE4;  // fields 0, 1, 2, 3
  b[16 + 37] = 0x1B;                              // fields 3, 2, 1, 0
  Put16(b, 80, kHalf1);
  Put16(b, 82, kHalf0_5);
  auto v = Deq(GgmlType::kQ2_K, b);
  EXPECT_EQ(v[0], -7.5f);    // g 0: 0 * 0 - 0.5 * 15
  EXPECT_EQ(v[40], -4.5f);   // k 1, g 2: 2 * 1 - 0.5 * 13
  EXPECT_EQ(v[127], 17.0f);  // k 3, g 7: 7 * 3 - 0.5 * 8
  EXPECT_EQ(v[133], 20.5f);  // h 1, k 0, l 5 -> qs[37] field 0 = 3; g 8: 24 - 3.5
  EXPECT_EQ(v[229], -0.5f);  // h 1, k 3, l 5 -> qs[37] field 3 = 0; g 14: 0 - 0.5
  EXPECT_EQ(v[230], 41.5f);  // l 6 -> qs[38] field 3 = 3; g 14: 42 - 0.5
  EXPECT_EQ(v[255], 45.0f);  // g 15: 15 * 3 - 0
}

// Q3_K: [hmask 32][qs 64][scales 12][d]; group scale s (6 bits) - 32; q = low 2 bits -
// (hmask bit ? 0 : 4); hmask[l] bit 4h + k for element 128h + 32k + l.
TEST(KnownAnswerTest, Q3_K) {
  std::vector<uint8_t> b(110, 0);
  for (int l = 0; l < 32; ++l) b[l] = 0x0F;  // high bit set in half 0, clear in half 1
  b[3] = 0xF0;                               // ... reversed for l = 3
  for (int i = 0; i < 64; ++i) b[32 + i] = 0xE4;
  // s[g] = 4g: low nibbles (4g & 15) in bytes 0-7 (g < 8) / high nibbles (g >= 8); high 2
  // bits (4g >> 4 = g / 4) in byte 8 + g % 4 at bit 2 * (g / 4).
  uint8_t* sc = &b[96];
  for (int g = 0; g < 16; ++g) {
    sc[g % 8] |= static_cast<uint8_t>(((4 * g) & 15) << (g < 8 ? 0 : 4));
    sc[8 + g % 4] |= static_cast<uint8_t>(((4 * g) >> 4) << (2 * (g / 4)));
  }
  EXPECT_EQ(sc[8], 0xE4);  // groups 0, 4, 8, 12 have high bits 0, 1, 2, 3
  Put16(b, 108, kHalf0_5);
  auto v = Deq(GgmlType::kQ3_K, b);
  EXPECT_EQ(v[3], 64.0f);     // hmask[3] bit 0 clear: q 0 - 4; s 0 - 32: 0.5 * -32 * -4
  EXPECT_EQ(v[4], 0.0f);      // bit set: q 0
  EXPECT_EQ(v[36], -12.0f);   // k 1, q 1; g 2: s 8 - 32: 0.5 * -24 * 1
  EXPECT_EQ(v[227], 36.0f);   // h 1, k 3, l 3: hmask[3] bit 7 set, q 3; g 14: s 24
  EXPECT_EQ(v[228], -12.0f);  // l 4: bit 7 clear, q 3 - 4; g 14
  EXPECT_EQ(v[250], -14.0f);  // h 1, k 3, l 26: bit 7 clear, q -1; g 15: s 28
  EXPECT_EQ(v[100], -12.0f);  // h 0, k 3, l 4: bit 3 set, q 3; g 6: s 24 - 32 = -8
}

// Packed 6-bit scales/mins of Q4_K and Q5_K for sc[g] = 10 + 7g, m[g] = 63 - 5g, worked out by
// hand: bytes 0-3 sc[0..3] | (sc[4..7] >> 4) << 6; bytes 4-7 m[0..3] | (m[4..7] >> 4) << 6;
// bytes 8-11 (sc[4..7] & 15) | (m[4..7] & 15) << 4.
constexpr uint8_t kScaleMinBytes[12] = {138, 145, 216, 223, 191, 186, 181, 112, 182, 109, 20, 203};

// Q4_K: [d][dmin][scales 12][qs 128]; group g of 32: d * sc[g] * q - dmin * m[g]; qs[32j + l]
// low nibble -> element 64j + l (group 2j), high -> 64j + 32 + l (group 2j + 1).
TEST(KnownAnswerTest, Q4_K) {
  std::vector<uint8_t> b(144);
  Put16(b, 0, kHalf0_5);
  Put16(b, 2, kHalf0_25);
  std::memcpy(&b[4], kScaleMinBytes, 12);
  for (int i = 0; i < 128; ++i) b[16 + i] = static_cast<uint8_t>((i & 15) | ((15 - (i & 15)) << 4));
  auto v = Deq(GgmlType::kQ4_K, b);
  EXPECT_EQ(v[0], -15.75f);   // g 0 (sc 10, m 63), q 0
  EXPECT_EQ(v[50], 96.0f);    // g 1 (17, 58), qs[18] high = 13: 110.5 - 14.5
  EXPECT_EQ(v[100], 158.5f);  // g 3 (31, 48), qs[36] high = 11: 170.5 - 12
  EXPECT_EQ(v[133], 84.25f);  // g 4 (38, 43), qs[69] low = 5: 95 - 10.75
  EXPECT_EQ(v[225], 406.0f);  // g 7 (59, 28), qs[97] high = 14: 413 - 7
}

// Q5_K: [d][dmin][scales 12][qh 32][qs 128]; fifth bit of element 64j + l is qh[l] bit 2j, of
// 64j + 32 + l bit 2j + 1.
TEST(KnownAnswerTest, Q5_K) {
  std::vector<uint8_t> b(176, 0);
  Put16(b, 0, kHalf0_5);
  Put16(b, 2, kHalf0_25);
  std::memcpy(&b[4], kScaleMinBytes, 12);
  uint8_t* qh = &b[16];
  for (int l = 1; l < 32; l += 2) qh[l] = 0xFF;
  qh[1] = 0x80;  // only bit 7: element 64 * 3 + 32 + 1
  qh[3] = 0x04;  // only bit 2: element 64 * 1 + 3
  for (int i = 0; i < 128; ++i) b[48 + i] = static_cast<uint8_t>((i & 15) | ((15 - (i & 15)) << 4));
  auto v = Deq(GgmlType::kQ5_K, b);
  EXPECT_EQ(v[0], -15.75f);    // qh[0] = 0, q 0
  EXPECT_EQ(v[1], -10.75f);    // g 0, q 1 (qh[1] bit 0 clear): 5 - 15.75
  EXPECT_EQ(v[3], -0.75f);     // g 0, q 3 (qh[3] bit 0 clear): 15 - 15.75
  EXPECT_EQ(v[67], 214.75f);   // g 2 (24, 53), q 3 | 16 (qh[3] bit 2): 228 - 13.25
  EXPECT_EQ(v[133], 388.25f);  // g 4 (38, 43), q 5 | 16 (qh[5] = 0xFF): 399 - 10.75
  EXPECT_EQ(v[193], 17.75f);   // g 6 (52, 33), q 1 (qh[1] bit 6 clear): 26 - 8.25
  EXPECT_EQ(v[225], 878.0f);   // g 7 (59, 28), q 14 | 16 (qh[1] bit 7): 885 - 7
  EXPECT_EQ(v[226], 376.5f);   // g 7, q 13 (qh[2] = 0): 383.5 - 7
}

// Q6_K: [ql 128][qh 64][scales 16 x int8][d]; value d * scales[g] * (q - 32); element
// 128h + 32k + l: low 4 bits in ql[64h + 32(k & 1) + l] nibble k >> 1, high 2 bits in
// qh[32h + l] bits 2k.
TEST(KnownAnswerTest, Q6_K) {
  std::vector<uint8_t> b(210);
  for (int i = 0; i < 128; ++i) b[i] = static_cast<uint8_t>(i);
  for (int i = 0; i < 64; ++i) b[128 + i] = 0xE4;  // fields 0, 1, 2, 3
  b[128 + 40] = 0x1B;                              // fields 3, 2, 1, 0
  for (int g = 0; g < 16; ++g) {
    const int s = (g % 2 ? 1 : -1) * (8 * g + 1);
    b[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(s));
  }
  b[192] = 0x80;       // -128
  b[192 + 15] = 0x7F;  // 127
  Put16(b, 208, kHalf0_25);
  auto v = Deq(GgmlType::kQ6_K, b);
  EXPECT_EQ(v[0], 1024.0f);    // q 0 - 32, scale -128
  EXPECT_EQ(v[33], 63.75f);    // k 1: ql[33] low 1 | field 1 << 4 = 17 - 32; g 2: -17
  EXPECT_EQ(v[72], 0.0f);      // k 2: ql[8] high 0 | field 2 << 4 = 32 - 32
  EXPECT_EQ(v[104], -220.5f);  // k 3: ql[40] high 2 | 3 << 4 = 50 - 32; g 6: -49
  EXPECT_EQ(v[200], 291.0f);   // h 1, k 2: ql[72] high 4 | qh[40] field 2 = 1 -> 20 - 32; g 12: -97
  EXPECT_EQ(v[255], 730.25f);  // h 1, k 3: ql[127] high 7 | 3 << 4 = 55 - 32; g 15: 127
}

// Q8_K: [d f32][256 x int8][16 x int16 bsums]; value d * q.
TEST(KnownAnswerTest, Q8_K) {
  std::vector<uint8_t> b(292, 0);
  const float d = 0.5f;
  std::memcpy(&b[0], &d, 4);
  for (int j = 0; j < 256; ++j) b[4 + j] = static_cast<uint8_t>(j ^ 0x80);  // q = j - 128
  auto v = Deq(GgmlType::kQ8_K, b);
  EXPECT_EQ(v[0], -64.0f);
  EXPECT_EQ(v[128], 0.0f);
  EXPECT_EQ(v[255], 63.5f);
}

std::vector<uint8_t> Quant(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> out(*RowBytes(type, static_cast<int64_t>(x.size())), 0xCD);
  EXPECT_TRUE(QuantizeRow(type, x.data(), out.data(), static_cast<int64_t>(x.size())).ok());
  return out;
}

// llama.cpp's Q4_0 rule: d = (signed absmax) / -8, q = min(15, trunc(x / d + 8.5)).
TEST(KnownQuantizeTest, Q4_0) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.25f * (j - 16);  // absmax -4 at j = 0 -> d = 0.5
  auto b = Quant(GgmlType::kQ4_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kHalf0_5);
  // q_j = x_j / 0.5 + 8 rounded half up = (j + 1) / 2; q_{j+16} = 8 + (j + 1) / 2, 16 -> 15.
  EXPECT_EQ(b[2], 0x80);
  EXPECT_EQ(b[3], 0x91);
  EXPECT_EQ(b[4], 0x91);
  EXPECT_EQ(b[2 + 15], 0xF8);
}

// Q8_0: d = absmax / 127, q = roundf(x / d): halves go away from zero.
TEST(KnownQuantizeTest, Q8_0RoundsHalfAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127, x[1] = -63.5f, x[2] = 0.5f, x[3] = -0.5f, x[4] = 2.5f;
  auto b = Quant(GgmlType::kQ8_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kHalf1);
  EXPECT_EQ(static_cast<int8_t>(b[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(b[3]), -64);
  EXPECT_EQ(static_cast<int8_t>(b[4]), 1);
  EXPECT_EQ(static_cast<int8_t>(b[5]), -1);
  EXPECT_EQ(static_cast<int8_t>(b[6]), 3);
  EXPECT_EQ(b[33], 0);
}

// Q4_1 / Q5_1: d = (max - min) / (2^bits - 1), m = min.
TEST(KnownQuantizeTest, Q4_1AndQ5_1) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = -1.0f + 0.5f * (j % 16);  // min -1, max 6.5 -> d = 0.5
  auto b = Quant(GgmlType::kQ4_1, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kHalf0_5);
  EXPECT_EQ(b[2] | (b[3] << 8), kHalfM1);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b[4 + j], j | (j << 4)) << j;

  for (int j = 0; j < 32; ++j) x[j] = 2.0f + 0.5f * j;  // min 2, max 17.5 -> d = 0.5, q = j
  b = Quant(GgmlType::kQ5_1, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kHalf0_5);
  EXPECT_EQ(b[2] | (b[3] << 8), kHalf2);
  EXPECT_EQ(b[4] | (b[5] << 8) | (b[6] << 16) | (static_cast<uint32_t>(b[7]) << 24),
            0xFFFF0000u);  // q_{j+16} = j + 16 has its fifth bit set
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b[8 + j], j | (j << 4)) << j;
}

// Q5_0: d = (signed absmax) / -16; x_j = j - 16 gives d = 1 and q_j = j.
TEST(KnownQuantizeTest, Q5_0) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  auto b = Quant(GgmlType::kQ5_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kHalf1);
  EXPECT_EQ(b[2] | (b[3] << 8) | (b[4] << 16) | (static_cast<uint32_t>(b[5]) << 24), 0xFFFF0000u);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b[6 + j], j | (j << 4)) << j;
}

// Q8_K: the largest magnitude maps to -127 (so d < 0 when it is positive); bsums are group sums.
TEST(KnownQuantizeTest, Q8_KScaleAndBsums) {
  std::vector<float> x(256);
  for (int j = 0; j < 256; ++j) x[j] = static_cast<float>(j - 100);  // absmax +155 at j = 255
  auto b = Quant(GgmlType::kQ8_K, x);
  float d;
  std::memcpy(&d, &b[0], 4);
  EXPECT_FLOAT_EQ(d, -155.0f / 127.0f);
  EXPECT_EQ(static_cast<int8_t>(b[4 + 255]), -127);
  EXPECT_EQ(static_cast<int8_t>(b[4 + 100]), 0);
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += static_cast<int8_t>(b[4 + 16 * g + l]);
    int16_t bsum;
    std::memcpy(&bsum, &b[260 + 2 * g], 2);
    EXPECT_EQ(bsum, sum) << "group " << g;
  }
  EXPECT_EQ(static_cast<int8_t>(b[4 + 0]), 82);  // -100 * -127 / 155 = 81.9 -> 82
}

// Blocks of zeros quantize to blocks that dequantize to exact zeros, for every format.
TEST(KnownQuantizeTest, ZerosStayZeros) {
  for (GgmlType type : SupportedTypes()) {
    std::vector<float> x(256, 0.0f);
    auto b = Quant(type, x);
    std::vector<float> y(256, 1.0f);
    ASSERT_TRUE(DequantizeRow(type, b.data(), y.data(), 256).ok());
    for (float v : y) ASSERT_EQ(v, 0.0f) << TypeName(type);
  }
}

TEST(KnownQuantizeTest, RejectsPartialBlocks) {
  std::vector<float> x(48);
  std::vector<uint8_t> b(1024);
  Status st = QuantizeRow(GgmlType::kQ4_K, x.data(), b.data(), 48);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("Q4_K"), std::string::npos) << st.message();
  st = DequantizeRow(GgmlType::kQ8_0, b.data(), x.data(), 48);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DequantizeRow(GgmlType::kIQ2_XXS, b.data(), x.data(), 256).code(),
            StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace forge
