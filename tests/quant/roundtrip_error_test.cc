// Quantize -> dequantize error on random data for every format, against a stated bound per
// format (derived below from each format's scale grid), plus an RMS bound on Gaussian data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "quant/type_table.h"

namespace forge {
namespace {

// Worst-case |x - dequant(quant(x))| as a fraction of a block's scale reference: the block's
// absmax for symmetric formats, its range plus |min| for those with a stored minimum, |x| for
// F16/BF16. Scales stored as F16 are rounded by up to 2^-11 relative, or 2^-25 absolute when
// they fall in F16's subnormal range; `abs` is that absolute term times the largest integer
// multiplier of the scale.
//  Q8_0: d = amax/127, rounding d/2, plus 127 * |d - f16(d)|:        1/254 + 2^-11; 127.
//  Q4_0: d = amax/8 over q in [-8, 7]: the top half-step clamps, error <= d: 1/8 + 2^-11; 8.
//  Q5_0: the same with 16:                                           1/16 + 2^-11; 16.
//  Q4_1 / Q5_1: d = range/15 (31), rounding d/2, plus F16 rounding of d and m:
//        range/30 (62) + 2^-11 * (range + |min|); 15 + 1 (31 + 1).
//  Q8_K: d = amax/127 (F32): rounding d/2, the far end may clamp by one step: 1/127.
//  k-quants (Forge's quantizer; amax = super-block absmax, group scales rounded to the grid):
//   asymmetric q in [0, Q], 4/6-bit scales and mins in [0, S] (Q2_K Q=3 S=15; Q4_K 15, 63;
//   Q5_K 31, 63): group scale <= 2amax/Q, super scale d <= 2amax/(QS), dmin <= amax/S;
//   error <= max(rounding (s + d/2)/2, clamping Q*d/2 + dmin/2) <= amax * max(1/Q + 1/(2QS),
//   1.5/S): Q2_K 0.345, Q4_K 0.0672, Q5_K 0.0325; abs (Q + 1) * S.
//   symmetric q in [-N, N-1], scales in [-M, M-1] (Q3_K N=4 M=32; Q6_K 32, 128): group scale
//   s = amax_g/N, |d| = max s/M; error <= s + (N-1)|d| <= amax (1/N + (N-1)/(NM)):
//   Q3_K 0.2735, Q6_K 0.0389; abs N * M.
// RMS error / RMS value on N(0, 1) data is measured, not derived: the bounds are the values
// measured when these quantizers were written plus ~25%, to catch a regression in quality.
struct Bound {
  GgmlType type;
  double max_err;  // worst element error / block reference
  double abs;      // plus abs * 2^-25 (F16 subnormal scales)
  double rms_rel;  // RMS error / RMS value on N(0, 1) data
};

const Bound kBounds[] = {
    {GgmlType::kF32, 0.0, 0, 0.0},
    {GgmlType::kF16, 0x1p-11, 1, 3e-4},
    {GgmlType::kBF16, 0x1p-8, 0, 2.1e-3},
    {GgmlType::kQ4_0, 0.125 + 0x1p-11, 8, 0.11},
    {GgmlType::kQ4_1, 1.0 / 30 + 0x1p-11, 16, 0.10},
    {GgmlType::kQ5_0, 0.0625 + 0x1p-11, 16, 0.055},
    {GgmlType::kQ5_1, 1.0 / 62 + 0x1p-11, 32, 0.048},
    {GgmlType::kQ8_0, 1.0 / 254 + 0x1p-11, 127, 0.007},
    {GgmlType::kQ2_K, 0.345, 4 * 15, 0.41},
    {GgmlType::kQ3_K, 0.2735, 4 * 32, 0.20},
    {GgmlType::kQ4_K, 0.0672, 16 * 63, 0.10},
    {GgmlType::kQ5_K, 0.0325, 32 * 63, 0.048},
    {GgmlType::kQ6_K, 0.0389, 32 * 128, 0.024},
    {GgmlType::kQ8_K, 1.0 / 127, 0, 0.009},
};

bool HasMin(GgmlType t) { return t == GgmlType::kQ4_1 || t == GgmlType::kQ5_1; }

// N(0, 1) blocks, then blocks with an offset (exercising mins), wide and tiny magnitudes, a
// single spike, a constant and all-negative data.
std::vector<float> TestData() {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x;
  for (int i = 0; i < 64 * 256; ++i) x.push_back(normal(rng));
  for (int i = 0; i < 8 * 256; ++i) x.push_back(3.0f + normal(rng));
  for (int i = 0; i < 4 * 256; ++i) x.push_back(100.0f * normal(rng));
  for (int i = 0; i < 4 * 256; ++i) x.push_back(1e-3f * normal(rng));
  for (int i = 0; i < 256; ++i) x.push_back(i == 77 ? 50.0f : 0.01f * normal(rng));
  for (int i = 0; i < 256; ++i) x.push_back(0.7f);
  for (int i = 0; i < 256; ++i) x.push_back(-1.0f - std::fabs(normal(rng)));
  return x;
}

TEST(RoundTripErrorTest, EveryFormatWithinItsBound) {
  const std::vector<float> x = TestData();
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t n_gauss = 64 * 256;
  ASSERT_EQ(std::size(kBounds), SupportedTypes().size());
  for (const Bound& bound : kBounds) {
    SCOPED_TRACE(TypeName(bound.type));
    const int64_t be = GetTypeTraits(bound.type).block_elems;
    std::vector<uint8_t> q(*RowBytes(bound.type, n));
    std::vector<float> y(n);
    ASSERT_TRUE(QuantizeRow(bound.type, x.data(), q.data(), n).ok());
    ASSERT_TRUE(DequantizeRow(bound.type, q.data(), y.data(), n).ok());
    double worst = 0, err2 = 0, ref2 = 0;
    for (int64_t b0 = 0; b0 < n; b0 += std::max<int64_t>(be, 32)) {
      const int64_t len = std::max<int64_t>(be, 32);
      float amax = 0, lo = x[b0], hi = x[b0];
      for (int64_t i = b0; i < b0 + len; ++i) {
        amax = std::max(amax, std::fabs(x[i]));
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
      }
      // Plain types: relative to each element; others: to the block reference.
      for (int64_t i = b0; i < b0 + len; ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << "element " << i;
        const double e = std::fabs(static_cast<double>(y[i]) - x[i]);
        double ref = be == 1 ? std::fabs(x[i]) : amax;
        if (HasMin(bound.type)) ref = (hi - lo) + std::fabs(lo);
        const double allowed = bound.max_err * ref + bound.abs * 0x1p-25;
        if (allowed > 0) {
          worst = std::max(worst, e / allowed);
        } else {
          ASSERT_EQ(e, 0.0) << "element " << i;
        }
        if (i < n_gauss) {
          err2 += e * e;
          ref2 += static_cast<double>(x[i]) * x[i];
        }
      }
    }
    const double rms = std::sqrt(err2 / ref2);
    std::printf(
        "[ error    ] %-5s worst %.3f of the bound (%.5f of the reference)  rms %.5f "
        "(bound %.5f)\n",
        std::string(TypeName(bound.type)).c_str(), worst, bound.max_err, rms, bound.rms_rel);
    EXPECT_LE(worst, 1.0 + 1e-6);
    EXPECT_LE(rms, bound.rms_rel);
  }
}

}  // namespace
}  // namespace forge
