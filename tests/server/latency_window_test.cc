// LatencyWindow against a sorted copy of what it should hold: nearest-rank quantiles, trimming by
// age, and the capacity dropping the oldest first.
#include "server/latency_window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace forge::server {
namespace {

using Clock = LatencyWindow::Clock;
using std::chrono::milliseconds;

// The ceil(q * n)-th smallest of values (the definition, from a full sort).
double NearestRank(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::max<size_t>(rank, 1) - 1];
}

TEST(LatencyWindowTest, QuantilesAreNearestRanksOfTheLastSpan) {
  LatencyWindow w(milliseconds(60'000));
  std::mt19937 rng(7);
  std::lognormal_distribution<double> latency(-5, 1.5);
  const Clock::time_point t0 = Clock::now();
  std::vector<std::pair<Clock::time_point, double>> all;
  for (int i = 0; i < 5000; ++i) {  // one every 20 ms: 100 s of observations
    const Clock::time_point at = t0 + milliseconds(20 * i);
    all.emplace_back(at, latency(rng));
    w.Observe(all.back().second, at);
  }
  const Clock::time_point now = t0 + milliseconds(20 * 4999 + 5);
  std::vector<double> kept;
  for (const auto& [at, v] : all) {
    if (now - at <= milliseconds(60'000)) kept.push_back(v);
  }
  const std::vector<double> qs = {0.001, 0.5, 0.9, 0.99, 1.0};
  const LatencyWindow::Summary s = w.Read(qs, now);
  ASSERT_EQ(s.count, static_cast<int64_t>(kept.size()));
  ASSERT_EQ(s.quantiles.size(), qs.size());
  for (size_t i = 0; i < qs.size(); ++i) {
    EXPECT_EQ(s.quantiles[i], NearestRank(kept, qs[i])) << "q=" << qs[i];
  }
  EXPECT_NEAR(s.span_seconds, 60.0, 0.03);
  // Later, fewer remain; long after, none.
  EXPECT_LT(w.Read({0.5}, now + milliseconds(30'000)).count, s.count);
  const LatencyWindow::Summary empty = w.Read({0.5}, now + milliseconds(61'000));
  EXPECT_EQ(empty.count, 0);
  EXPECT_TRUE(empty.quantiles.empty());
}

TEST(LatencyWindowTest, CapacityDropsTheOldest) {
  LatencyWindow w(milliseconds(60'000), /*capacity=*/100);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 250; ++i) w.Observe(i, t0 + milliseconds(i));
  const LatencyWindow::Summary s = w.Read({0.01, 1.0}, t0 + milliseconds(250));
  EXPECT_EQ(s.count, 100);
  EXPECT_EQ(s.quantiles[0], 150);  // the 100 newest: 150 .. 249
  EXPECT_EQ(s.quantiles[1], 249);
}

}  // namespace
}  // namespace forge::server
