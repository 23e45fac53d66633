// F16/BF16 conversions against exhaustive properties: every F16 round-trips, and F32 -> F16
// rounds to the nearest representable value (ties to even), checked against a double search.
#include "base/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace forge {
namespace {

TEST(HalfTest, EveryF16RoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f))));
      continue;
    }
    EXPECT_EQ(F32ToF16(f), h) << "h=" << h << " f=" << f;
  }
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(F16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(F16ToF32(0xc000), -2.0f);
  EXPECT_EQ(F16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(F32ToF16(1e-8f), 0x0000);
  EXPECT_EQ(BF16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(F32ToBF16(1.0f), 0x3f80);
}

TEST(HalfTest, F32ToF16RoundsToNearest) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 200000; ++i) {
    float f;
    uint32_t u = bits(rng);
    std::memcpy(&f, &u, 4);
    if (!std::isfinite(f) || std::fabs(f) > 65504.0f) continue;
    uint16_t h = F32ToF16(f);
    double got = F16ToF32(h);
    // Neighbours must not be strictly closer.
    for (int d : {-1, 1}) {
      uint16_t n = static_cast<uint16_t>(h + d);
      float nf = F16ToF32(n);
      if (std::isnan(nf) || std::isinf(nf)) continue;
      if ((n ^ h) & 0x8000) continue;  // crossed the sign
      EXPECT_LE(std::fabs(got - f), std::fabs(static_cast<double>(nf) - f)) << f;
    }
  }
}

TEST(HalfTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBF16(BitsFloat(0x3f808000)), 0x3f80);  // tie -> even
  EXPECT_EQ(F32ToBF16(BitsFloat(0x3f818000)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(F32ToBF16(BitsFloat(0x3f808001)), 0x3f81);
}

}  // namespace
}  // namespace forge
