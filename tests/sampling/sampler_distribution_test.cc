// Sampler draws: chi-square tests of sampled frequencies against softmax(logits / T) (and the
// truncated, renormalized distributions), and reproducibility keyed by (seed, request, position).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "sampling/sampler.h"

namespace forge {
namespace {

// Regularized upper incomplete gamma Q(a, x): series below a + 1, continued fraction above.
double GammaQ(double a, double x) {
  const double log_prefactor = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1) {
    double ap = a, del = 1 / a, sum = del;
    for (int n = 0; n < 10000 && std::fabs(del) > std::fabs(sum) * 1e-16; ++n) {
      ap += 1;
      del *= x / ap;
      sum += del;
    }
    return 1 - sum * std::exp(log_prefactor);
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-16) break;
  }
  return std::exp(log_prefactor) * h;
}

double ChiSquarePValue(double chi2, int df) { return GammaQ(df / 2.0, chi2 / 2.0); }

// A deterministic test with fixed seeds; a correct sampler passes at this level, a wrong
// distribution gives p-values many orders of magnitude below it.
constexpr double kMinPValue = 1e-4;

std::vector<double> Softmax(const std::vector<float>& logits, double t,
                            const std::vector<int32_t>& kept) {
  std::vector<double> q(logits.size(), 0.0);
  double max = -INFINITY, sum = 0;
  for (int32_t i : kept) max = std::max(max, double{logits[i]});
  for (int32_t i : kept) sum += q[i] = std::exp((logits[i] - max) / t);
  for (double& v : q) v /= sum;
  return q;
}

std::vector<int32_t> AllTokens(size_t n) {
  std::vector<int32_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = static_cast<int32_t>(i);
  return all;
}

// Draws n tokens at positions 0..n-1 of one request; returns counts per token.
std::vector<int64_t> Frequencies(const SamplingParams& p, const std::vector<float>& logits, int n,
                                 uint64_t request) {
  Sampler s(static_cast<int32_t>(logits.size()));
  const std::vector<int32_t> history(n, 0);  // only its length (the position) is used
  std::vector<int64_t> counts(logits.size(), 0);
  for (int pos = 0; pos < n; ++pos) {
    const SampleContext c{.request_id = request, .generated = std::span(history).first(pos)};
    StatusOr<SampleResult> r = s.Sample(p, c, logits);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) break;
    ++counts[r->token];
  }
  return counts;
}

// The chi-square p-value of counts against probabilities q (cells expecting < 5 pooled). A token
// with q == 0 that was drawn at all gives 0.
double PValue(const std::vector<int64_t>& counts, const std::vector<double>& q) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  double chi2 = 0, pooled_expected = 0;
  int64_t pooled_observed = 0;
  int cells = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] == 0) {
      if (counts[i] != 0) return 0;
      continue;
    }
    const double e = q[i] * n;
    if (e < 5) {
      pooled_expected += e;
      pooled_observed += counts[i];
      continue;
    }
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
    ++cells;
  }
  if (pooled_expected > 0) {
    chi2 +=
        (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
    ++cells;
  }
  return ChiSquarePValue(chi2, cells - 1);
}

const std::vector<float> kLogits8 = {1.2f, 0.9f, 0.5f, 0.3f, 0.0f, -0.4f, -0.8f, 0.7f};

TEST(ChiSquareTest, PValueMatchesTables) {
  EXPECT_NEAR(ChiSquarePValue(3.841458820694124, 1), 0.05, 1e-9);
  EXPECT_NEAR(ChiSquarePValue(18.307038053275146, 10), 0.05, 1e-9);
  EXPECT_NEAR(ChiSquarePValue(24.321886347856854, 7), 0.001, 1e-10);
  EXPECT_NEAR(ChiSquarePValue(1.0, 2), std::exp(-0.5), 1e-12);  // df 2: exp(-x/2)
  EXPECT_NEAR(ChiSquarePValue(124.342, 100), 0.05, 1e-4);
}

TEST(SamplerDistributionTest, MatchesSoftmaxAtEachTemperature) {
  constexpr int kN = 100000;
  uint64_t request = 1;
  for (double t : {0.5, 1.0, 2.0}) {
    SamplingParams p;
    p.temperature = t;
    p.seed = 1000 + request;
    const std::vector<int64_t> counts = Frequencies(p, kLogits8, kN, request++);
    const double pv = PValue(counts, Softmax(kLogits8, t, AllTokens(8)));
    EXPECT_GT(pv, kMinPValue) << "T=" << t;
  }
}

TEST(SamplerDistributionTest, AWrongTemperatureFails) {
  // The same draws judged against the wrong temperature, or with two tokens swapped, fail.
  constexpr int kN = 100000;
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 5;
  const std::vector<int64_t> counts = Frequencies(p, kLogits8, kN, 9);
  EXPECT_GT(PValue(counts, Softmax(kLogits8, 1.0, AllTokens(8))), kMinPValue);
  EXPECT_LT(PValue(counts, Softmax(kLogits8, 1.25, AllTokens(8))), 1e-12);
  EXPECT_LT(PValue(counts, Softmax(kLogits8, 0.9, AllTokens(8))), 1e-12);
  std::vector<double> swapped = Softmax(kLogits8, 1.0, AllTokens(8));
  std::swap(swapped[2], swapped[3]);  // 0.5 vs 0.3: probabilities 18% apart
  EXPECT_LT(PValue(counts, swapped), 1e-12);
}

TEST(SamplerDistributionTest, TruncatedDistributionsAreRenormalized) {
  constexpr int kN = 100000;
  struct Case {
    int32_t top_k;
    double top_p, min_p, t;
    size_t kept;
  };
  uint64_t request = 100;
  for (const Case& c : {Case{4, 1.0, 0.0, 0.8, 4}, Case{0, 0.7, 0.0, 1.0, 4},
                        Case{0, 1.0, 0.4, 1.5, 6}, Case{6, 0.9, 0.0, 0.6, 5}}) {
    SamplingParams p;
    p.temperature = c.t;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.seed = 77;
    Sampler s(8);
    const std::vector<int32_t> kept = *s.KeptTokens(p, kLogits8);
    EXPECT_EQ(kept.size(), c.kept) << "top_k=" << c.top_k << " top_p=" << c.top_p;
    const std::vector<int64_t> counts = Frequencies(p, kLogits8, kN, request++);
    EXPECT_GT(PValue(counts, Softmax(kLogits8, c.t, kept)), kMinPValue)
        << "top_k=" << c.top_k << " top_p=" << c.top_p << " min_p=" << c.min_p;
  }
}

TEST(SamplerDistributionTest, LargerVocabsDenseAndSparse) {
  // 300 tokens sampled densely; 5000 tokens through the top_k path.
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> small(300), large(5000);
  for (float& v : small) v = normal(rng);
  for (float& v : large) v = 2 * normal(rng);
  SamplingParams p;
  p.seed = 8;
  p.temperature = 1.3;
  EXPECT_GT(PValue(Frequencies(p, small, 100000, 1), Softmax(small, 1.3, AllTokens(300))),
            kMinPValue);
  p.top_k = 40;
  p.temperature = 0.9;
  Sampler s(5000);
  const std::vector<int32_t> kept = *s.KeptTokens(p, large);
  ASSERT_EQ(kept.size(), 40u);
  EXPECT_GT(PValue(Frequencies(p, large, 50000, 2), Softmax(large, 0.9, kept)), kMinPValue);
}

// Autoregressive generation with penalties; returns the tokens.
std::vector<int32_t> Generate(Sampler& s, const SamplingParams& p, uint64_t request,
                              const std::vector<float>& logits, int n) {
  const std::vector<int32_t> prompt = {1, 2, 3};
  std::vector<int32_t> generated;
  for (int i = 0; i < n; ++i) {
    StatusOr<SampleResult> r = s.Sample(p, {request, prompt, generated, {}}, logits);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    generated.push_back(r.ok() ? r->token : -1);
  }
  return generated;
}

std::vector<float> FlatLogits(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> l(n);
  for (float& v : l) v = u(rng);
  return l;
}

TEST(SamplerReproducibilityTest, SeededRunsReproduce) {
  const std::vector<float> logits = FlatLogits(100, 1);
  SamplingParams p;
  p.seed = 1234;
  p.top_p = 0.95;
  p.frequency_penalty = 0.3;
  p.repetition_penalty = 1.2;
  Sampler a(100), b(100);
  const std::vector<int32_t> first = Generate(a, p, 7, logits, 64);
  EXPECT_EQ(Generate(b, p, 7, logits, 64), first);
  EXPECT_EQ(Generate(a, p, 7, logits, 64), first);  // scratch reuse leaves no trace
  p.seed = 1235;
  EXPECT_NE(Generate(a, p, 7, logits, 64), first);
  p.seed = 1234;
  EXPECT_NE(Generate(a, p, 8, logits, 64), first);  // a fork with its own request id
}

TEST(SamplerReproducibilityTest, DrawsDoNotDependOnCallOrder) {
  // Three requests with their own logits and params, sampled request by request, position by
  // position (as a batch would), and in a shuffled order, through one shared Sampler.
  constexpr int kRequests = 3, kPositions = 40;
  std::vector<std::vector<float>> logits = {FlatLogits(64, 1), FlatLogits(64, 2),
                                            FlatLogits(64, 3)};
  std::vector<SamplingParams> params(kRequests);
  params[0].seed = 1;
  params[1].seed = 1;
  params[1].top_k = 10;
  params[1].repetition_penalty = 1.5;
  params[2].seed = 99;
  params[2].min_p = 0.5;
  params[2].temperature = 0.7;
  const std::vector<int32_t> history(kPositions, 5);
  Sampler s(64);
  auto draw = [&](int r, int pos) {
    const SampleContext c{.request_id = static_cast<uint64_t>(r),
                          .generated = std::span(history).first(pos)};
    return s.Sample(params[r], c, logits[r])->token;
  };
  std::vector<std::pair<int, int>> order;
  for (int r = 0; r < kRequests; ++r) {
    for (int pos = 0; pos < kPositions; ++pos) order.emplace_back(r, pos);
  }
  std::map<std::pair<int, int>, int32_t> by_request, interleaved, shuffled;
  for (auto [r, pos] : order) by_request[{r, pos}] = draw(r, pos);
  for (int pos = 0; pos < kPositions; ++pos) {
    for (int r = kRequests - 1; r >= 0; --r) interleaved[{r, pos}] = draw(r, pos);
  }
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  for (auto [r, pos] : order) shuffled[{r, pos}] = draw(r, pos);
  EXPECT_EQ(interleaved, by_request);
  EXPECT_EQ(shuffled, by_request);
  // Not trivially constant: draws vary along the positions.
  std::set<int32_t> distinct;
  for (int pos = 0; pos < kPositions; ++pos) distinct.insert(by_request[{0, pos}]);
  EXPECT_GT(distinct.size(), 10u);
}

TEST(SamplerReproducibilityTest, PositionIsPromptPlusGenerated) {
  // Preemption by recomputation may re-split a sequence: 3 prompt + 2 generated tokens and a
  // 5-token prompt are both position 5, and draw the same token.
  const std::vector<float> logits = FlatLogits(50, 4);
  const std::vector<int32_t> prompt3 = {1, 2, 3}, generated2 = {4, 5}, prompt5 = {1, 2, 3, 4, 5};
  Sampler s(50);
  int differ_from_position_4 = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    SamplingParams p;
    p.seed = seed;
    const int32_t a = s.Sample(p, {11, prompt3, generated2, {}}, logits)->token;
    const int32_t b = s.Sample(p, {11, prompt5, {}, {}}, logits)->token;
    EXPECT_EQ(a, b) << "seed " << seed;
    const std::vector<int32_t> prompt4 = {1, 2, 3, 4};
    differ_from_position_4 += s.Sample(p, {11, prompt4, {}, {}}, logits)->token != a;
  }
  EXPECT_GT(differ_from_position_4, 40);
}

}  // namespace
}  // namespace forge
