// The Sampler's vectorized loops: exp accuracy against libm, the fixed summation order (bit for
// bit against the scalar definition), buckets, thresholds and order keys.
#include "sampling/sampling_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace forge::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

template <typename T>
double LanesSum(const std::vector<T>& w) {  // the documented order, written out
  double acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= w.size(); i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += w[i + j];
  }
  for (int j = 0; i < w.size(); ++i, ++j) acc[j] += w[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

std::vector<float> RandomLogits(int n, float sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

TEST(SamplingKernelsTest, FloatExpWithin2UlpAndZeroPastTheCutoff) {
  double worst = 0;
  for (double x = -86.0; x <= 0.0; x += 0.000731) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(double{xf});
    worst = std::max(worst, std::fabs(ExpNonPositive(xf) - want) / want);
  }
  EXPECT_LT(worst, 2.5e-7);  // 2 ulp of float
  EXPECT_EQ(ExpNonPositive(0.0f), 1.0f);
  EXPECT_EQ(ExpNonPositive(-0.0f), 1.0f);
  EXPECT_EQ(ExpNonPositive(-86.5f), 0.0f);
  EXPECT_EQ(ExpNonPositive(-1e30f), 0.0f);
  EXPECT_EQ(ExpNonPositive(-kInf), 0.0f);
}

TEST(SamplingKernelsTest, DoubleExpWithin2Ulp) {
  double worst = 0;
  for (double x = -708.0; x <= 0.0; x += 0.00731) {
    const double want = std::exp(x);
    worst = std::max(worst, std::fabs(ExpNonPositive(x) - want) / want);
  }
  EXPECT_LT(worst, 4.5e-16);
  EXPECT_EQ(ExpNonPositive(0.0), 1.0);
  EXPECT_EQ(ExpNonPositive(-709.0), 0.0);
  EXPECT_EQ(ExpNonPositive(-double{kInf}), 0.0);
}

TEST(SamplingKernelsTest, SumsFollowTheDocumentedOrderBitForBit) {
  for (int n : {0, 1, 7, 8, 9, 63, 1000, 1027, 128256}) {
    const std::vector<float> x = RandomLogits(n, 3.0f, n);
    float max = -kInf;
    for (float v : x) max = std::max(max, v);
    std::vector<float> w(n);
    const double sum = ExpWeights(x.data(), n, max, 0.8f, w.data());
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(w[i], ExpNonPositive((x[i] - max) * 0.8f)) << "n=" << n << " i=" << i;
    }
    EXPECT_TRUE(SameBits(sum, LanesSum(w))) << "n=" << n;
    EXPECT_TRUE(SameBits(SumDouble(w.data(), n), LanesSum(w))) << "n=" << n;
    std::vector<double> terms(n);
    for (int i = 0; i < n; ++i) terms[i] = ExpNonPositive(double{x[i]} - max);
    const double exp_sum = ExpSumDouble(x.data(), n, max);
    EXPECT_TRUE(SameBits(exp_sum, LanesSum(terms))) << "n=" << n;
    long double exact = 0;
    for (float v : x) exact += std::exp(static_cast<long double>(v) - max);
    if (n > 0) {
      EXPECT_NEAR(exp_sum / static_cast<double>(exact), 1.0, 1e-14) << "n=" << n;
    }
  }
}

TEST(SamplingKernelsTest, BucketsFollowTheScaledDistance) {
  std::vector<float> x = RandomLogits(1001, 4.0f, 5);
  x[3] = -kInf;
  x[4] = -1000.0f;
  float max = -kInf;
  for (float v : x) max = std::max(max, v);
  std::vector<float> w(x.size()), w2(x.size());
  std::vector<uint16_t> bucket(x.size());
  const int n = static_cast<int>(x.size());
  const double sum = ExpWeightsBucketed(x.data(), n, max, 1.25f, 32, 2047, w.data(), bucket.data());
  EXPECT_TRUE(SameBits(sum, ExpWeights(x.data(), n, max, 1.25f, w2.data())));
  EXPECT_EQ(w, w2);
  const float scale = 1.25f * 32.0f;
  for (int i = 0; i < n; ++i) {
    const float y = (max - x[i]) * scale;
    const int want = y >= 2047.0f ? 2047 : static_cast<int>(y);
    ASSERT_EQ(bucket[i], want) << "i=" << i << " x=" << x[i];
  }
  EXPECT_EQ(bucket[3], 2047);
  EXPECT_EQ(bucket[4], 2047);
}

TEST(SamplingKernelsTest, OrderKeysMatchFloatOrder) {
  const std::vector<float> ordered = {-kInf,  -3e38f, -1.0f, -1e-40f, 0.0f,
                                      1e-40f, 0.5f,   1.0f,  3e38f,   kInf};
  for (size_t i = 1; i < ordered.size(); ++i) {
    EXPECT_LT(OrderKey(ordered[i - 1]), OrderKey(ordered[i])) << ordered[i];
    EXPECT_EQ(FromOrderKey(OrderKey(ordered[i])), ordered[i]);
  }
  EXPECT_EQ(OrderKey(-0.0f), OrderKey(0.0f));  // equal floats, equal keys

  std::vector<float> x = RandomLogits(200, 1.0f, 9);
  x[130] = 9.0f;
  x[17] = -kInf;
  int32_t lo, hi;
  KeyRange(x.data(), 200, &lo, &hi);
  EXPECT_EQ(lo, OrderKey(-kInf));
  EXPECT_EQ(hi, OrderKey(9.0f));
  std::vector<int32_t> keys((200 + kKeyBlock - 1) / kKeyBlock);
  BlockMaxKeys(x.data(), 200, keys.data());
  for (size_t b = 0; b < keys.size(); ++b) {
    float m = -kInf;
    for (int i = b * kKeyBlock; i < std::min<int>(200, (b + 1) * kKeyBlock); ++i) {
      m = std::max(m, x[i]);
    }
    EXPECT_EQ(keys[b], OrderKey(m)) << "block " << b;
  }
}

TEST(SamplingKernelsTest, MaskedBlockSumsKeepLogitsAtOrAboveTheThreshold) {
  for (int n : {5, 1024, 3000}) {
    std::vector<float> x = RandomLogits(n, 1.0f, n);
    x[1] = -0.0f;  // equal to the threshold 0: kept
    x[2] = 0.0f;
    std::vector<float> w = RandomLogits(n, 1.0f, n + 1);
    std::vector<double> sums((n + kSumBlock - 1) / kSumBlock);
    MaskedBlockSums(x.data(), w.data(), n, 0.0f, sums.data());
    for (size_t b = 0; b < sums.size(); ++b) {
      std::vector<float> masked;
      for (int i = b * kSumBlock; i < std::min<int>(n, (b + 1) * kSumBlock); ++i) {
        masked.push_back(x[i] >= 0.0f ? w[i] : 0.0f);
      }
      EXPECT_TRUE(SameBits(sums[b], LanesSum(masked))) << "n=" << n << " block " << b;
    }
  }
}

TEST(SamplingKernelsTest, IndicesOfFindsEveryMatchInOrder) {
  std::vector<uint16_t> bucket(1000, 7);
  const std::vector<int32_t> want = {0, 63, 64, 500, 999};
  for (int32_t i : want) bucket[i] = 3;
  std::vector<int32_t> out(1000);
  ASSERT_EQ(IndicesOf(bucket.data(), 1000, 3, out.data()), 5);
  out.resize(5);
  EXPECT_EQ(out, want);
  EXPECT_EQ(IndicesOf(bucket.data(), 1000, 4, out.data()), 0);
}

}  // namespace
}  // namespace forge::sampling
