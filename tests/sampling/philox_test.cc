// Philox4x32-10 against Random123's known-answer vectors, and the (seed, request, position) keying.
#include "sampling/philox.h"

#include <gtest/gtest.h>

#include <set>

namespace forge {
namespace {

TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  // Random123 tests/kat_vectors: philox4x32 10 <counter> <key> <expected>.
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, SamplingBitsLayout) {
  // key = seed halves, counter = position halves then request halves.
  const uint64_t seed = 0x299f31d0a4093822ull;
  const uint64_t request = 0x0370734413198a2eull;
  const uint64_t position = 0x85a308d3243f6a88ull;
  EXPECT_EQ(SamplingBits(seed, request, position),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  const double u = SamplingUniform(seed, request, position);
  EXPECT_EQ(u, static_cast<double>(((uint64_t{0xd16cfe09} << 32) | 0x94fdcceb) >> 11) * 0x1.0p-53);
}

TEST(PhiloxTest, UniformIsAPureFunctionOfEachKeyPart) {
  const double base = SamplingUniform(1, 2, 3);
  EXPECT_EQ(SamplingUniform(1, 2, 3), base);
  EXPECT_NE(SamplingUniform(2, 2, 3), base);
  EXPECT_NE(SamplingUniform(1, 3, 3), base);
  EXPECT_NE(SamplingUniform(1, 2, 4), base);
  // High halves matter too.
  EXPECT_NE(SamplingUniform(1ull << 40, 2, 3), SamplingUniform(0, 2, 3));
  EXPECT_NE(SamplingUniform(1, 2ull << 40, 3), SamplingUniform(1, 2, 3));
  EXPECT_NE(SamplingUniform(1, 2, 3ull << 40), SamplingUniform(1, 2, 3));
}

TEST(PhiloxTest, UniformLooksUniform) {
  // 10 equal bins over 100k positions: each within 5% of 10k (about 16 sigma for a fair stream),
  // all values in [0, 1), and no repeats.
  constexpr int kN = 100000;
  int bins[10] = {};
  std::set<double> values;
  for (int p = 0; p < kN; ++p) {
    const double u = SamplingUniform(42, 7, p);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ++bins[static_cast<int>(u * 10)];
    values.insert(u);
  }
  for (int b = 0; b < 10; ++b) EXPECT_NEAR(bins[b], kN / 10, kN / 200) << "bin " << b;
  EXPECT_EQ(values.size(), static_cast<size_t>(kN));
}

}  // namespace
}  // namespace forge
