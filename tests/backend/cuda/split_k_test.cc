// The quantized matmuls' split of k (split_k.h): host rules, checked without a GPU on shapes whose
// answers follow from the rules' definitions by hand.
#include "backend/cuda/matmul/split_k.h"

#include <gtest/gtest.h>

namespace forge {
namespace {

TEST(SplitKTest, WaveFill) {
  EXPECT_DOUBLE_EQ(cuda::WaveFill(264, 264), 1.0);
  EXPECT_DOUBLE_EQ(cuda::WaveFill(265, 264), 265.0 / 528.0);
  EXPECT_DOUBLE_EQ(cuda::WaveFill(32, 264), 32.0 / 264.0);
}

TEST(SplitKTest, ByFillTakesTheFullestWavesUpToTheCap) {
  auto blocks = [](int64_t rows) { return [rows](int s) { return rows * s; }; };
  // 32 row blocks on 264 slots fill 12%, 24%, 48%, 97% at splits 1, 2, 4, 8.
  EXPECT_EQ(cuda::SplitByFill(8, 264, blocks(32)), 8);
  EXPECT_EQ(cuda::SplitByFill(2, 264, blocks(32)), 2);
  EXPECT_EQ(cuda::SplitByFill(0, 264, blocks(32)), 1) << "a cap below 1 still allows 1";
  // 264 row blocks fill every wave at split 1: larger splits fill no better.
  EXPECT_EQ(cuda::SplitByFill(8, 264, blocks(264)), 1);
  // A larger split must fill 2% better: 1.5% is not enough.
  auto ctas = [](int s) -> int64_t { return s == 1 ? 1000 : 1015; };
  EXPECT_EQ(cuda::SplitByFill(8, 1024, ctas), 1);
  auto better = [](int s) -> int64_t { return s == 1 ? 1000 : 1024; };
  EXPECT_EQ(cuda::SplitByFill(8, 1024, better), 2) << "the first split that fills 2% better";
}

TEST(SplitKTest, ByTimeWeighsWavesAgainstWorkPerCta) {
  // One tile of 16 units on 132 slots: 17, 9, 5, 3 units of time at 1, 2, 4, 8.
  EXPECT_EQ(cuda::SplitByTime(1, 16, 132), 8);
  // 132 tiles fill one wave unsplit (17); split 2 takes two waves (2 x 9 = 18).
  EXPECT_EQ(cuda::SplitByTime(132, 16, 132), 1);
  // 66 tiles: 17 unsplit, one wave of 132 at split 2 (9), two at 4 (2 x 5 = 10).
  EXPECT_EQ(cuda::SplitByTime(66, 16, 132), 2);
  // 5 units: split 4 would leave a CTA without a unit (2 + 2 + 1 + 0), so 2 (1 x 4) wins over 1.
  EXPECT_EQ(cuda::SplitByTime(1, 5, 132), 2);
  // Never more CTAs than units.
  EXPECT_EQ(cuda::SplitByTime(1, 1, 132), 1);
}

TEST(SplitKTest, InOneWave) {
  auto even = [](int64_t sms) { return [sms](int ns) -> int64_t { return sms / ns; }; };
  // Two CTAs an SM: the largest power of two whose CTAs fit the slots (32 x 8 <= 264).
  EXPECT_EQ(cuda::SplitInOneWave(32, 16, 132, 2, 8, false, even(132)).ns, 8);
  EXPECT_EQ(cuda::SplitInOneWave(100, 16, 132, 2, 8, false, even(132)).ns, 2);
  EXPECT_EQ(cuda::SplitInOneWave(32, 3, 132, 2, 8, false, even(132)).ns, 2) << "at most sbs";
  // One CTA an SM: the largest cluster size whose clusters all fit (132 / 4 = 33 >= 32).
  cuda::OneWaveSplit s = cuda::SplitInOneWave(32, 16, 132, 1, 8, false, even(132));
  EXPECT_EQ(s.ns, 4);
  EXPECT_FALSE(s.global);
  // Clusters of 4 that do not all fit (30 resident): 3; with a workspace, 4 CTAs of 4
  // super-blocks through global memory instead of 3 of 6.
  auto gpc = [](int ns) -> int64_t { return ns == 4 ? 30 : 132 / ns; };
  EXPECT_EQ(cuda::SplitInOneWave(32, 16, 132, 1, 8, false, gpc).ns, 3);
  s = cuda::SplitInOneWave(32, 16, 132, 1, 8, true, gpc);
  EXPECT_EQ(s.ns, 4);
  EXPECT_TRUE(s.global);
  // Clusters of 4 and 5 that do not fit (20 resident): 3 CTAs of 4 super-blocks of 12. A global
  // split of 5 fits the SMs (26 x 5 <= 132) with 3 each; 4 gives 3 each too, with fewer CTAs.
  auto gpc45 = [](int ns) -> int64_t { return ns == 4 || ns == 5 ? 20 : 132 / ns; };
  EXPECT_EQ(cuda::SplitInOneWave(26, 12, 132, 1, 8, false, gpc45).ns, 3);
  s = cuda::SplitInOneWave(26, 12, 132, 1, 8, true, gpc45);
  EXPECT_EQ(s.ns, 4);
  EXPECT_TRUE(s.global);
  // No cluster fits at all: unsplit.
  EXPECT_EQ(cuda::SplitInOneWave(200, 16, 132, 1, 8, false, even(132)).ns, 1);
}

}  // namespace
}  // namespace forge
