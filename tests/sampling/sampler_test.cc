// Sampler: each logit processor changes exactly the logits it should, truncation keeps exactly the
// right sets (against a sort-everything oracle too), greedy ties, logprobs, and input errors.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace forge {
namespace {

const std::vector<float> kLogits = {0.5f,   2.0f, -1.0f, 0.0f, 3.25f,
                                    -0.75f, 1.0f, -2.0f, 4.0f, 1.5f};

// Runs ProcessLogits on a copy of `logits`.
std::vector<float> Process(const SamplingParams& p, const SampleContext& c,
                           std::vector<float> logits = kLogits) {
  Sampler s(static_cast<int32_t>(logits.size()));
  Status st = s.ProcessLogits(p, c, logits);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return logits;
}

// Asserts that `got` equals kLogits bit for bit except at `expected` entries.
void ExpectOnlyChanged(const std::vector<float>& got, const std::map<int, float>& expected) {
  ASSERT_EQ(got.size(), kLogits.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const float want = expected.count(i) ? expected.at(i) : kLogits[i];
    EXPECT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0)
        << "token " << i << ": got " << got[i] << ", want " << want;
  }
}

std::vector<float> LogitsOf(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

std::vector<int32_t> Kept(const SamplingParams& p, const std::vector<float>& logits) {
  Sampler s(static_cast<int32_t>(logits.size()));
  StatusOr<std::vector<int32_t>> kept = s.KeptTokens(p, logits);
  EXPECT_TRUE(kept.ok()) << kept.status().ToString();
  return kept.ok() ? *kept : std::vector<int32_t>{};
}

const std::vector<int32_t> kPrompt = {1, 2};
const std::vector<int32_t> kGenerated = {2, 3, 3};

SampleContext Context() { return {.request_id = 0, .prompt = kPrompt, .generated = kGenerated}; }

TEST(SamplerProcessTest, DefaultsChangeNothing) {
  ExpectOnlyChanged(Process(SamplingParams(), Context()), {});
}

TEST(SamplerProcessTest, LogitBias) {
  SamplingParams p;
  p.logit_bias = {{4, 1.5f}, {7, -INFINITY}, {0, -0.25f}};
  ExpectOnlyChanged(Process(p, Context()), {{4, 4.75f}, {7, -INFINITY}, {0, 0.25f}});
}

TEST(SamplerProcessTest, RepetitionPenaltyOnPromptAndGenerated) {
  SamplingParams p;
  p.repetition_penalty = 2.0;
  // Window {1, 2, 2, 3, 3}: positive logits halved, negative doubled, each once.
  ExpectOnlyChanged(Process(p, Context()), {{1, 1.0f}, {2, -2.0f}, {3, 0.0f}});
  p.repetition_penalty = 0.5;  // < 1 rewards repeats
  ExpectOnlyChanged(Process(p, Context()), {{1, 4.0f}, {2, -0.5f}});
}

TEST(SamplerProcessTest, PresenceAndFrequencyCountGeneratedTokensOnly) {
  SamplingParams p;
  p.presence_penalty = 0.5;
  // Token 1 is only in the prompt: untouched.
  ExpectOnlyChanged(Process(p, Context()), {{2, -1.5f}, {3, -0.5f}});
  p.presence_penalty = 0;
  p.frequency_penalty = 0.25;
  ExpectOnlyChanged(Process(p, Context()), {{2, -1.25f}, {3, -0.5f}});
  p.presence_penalty = -1;  // negative values encourage
  ExpectOnlyChanged(Process(p, Context()), {{2, -0.25f}, {3, 0.5f}});
}

TEST(SamplerProcessTest, PenaltyWindow) {
  SamplingParams p;
  p.repetition_penalty = 2.0;
  p.frequency_penalty = 1.0;
  p.penalty_last_n = 2;  // {3, 3}
  ExpectOnlyChanged(Process(p, Context()), {{3, -2.0f}});
  p.penalty_last_n = 4;  // {2 | 2, 3, 3}: token 1 falls out
  ExpectOnlyChanged(Process(p, Context()), {{2, -3.0f}, {3, -2.0f}});
  p.penalty_last_n = 1000;  // all
  ExpectOnlyChanged(Process(p, Context()), {{1, 1.0f}, {2, -3.0f}, {3, -2.0f}});
  p.penalty_last_n = 0;  // none
  ExpectOnlyChanged(Process(p, Context()), {});
}

TEST(SamplerProcessTest, BiasComesBeforePenalties) {
  SamplingParams p;
  p.logit_bias = {{2, 2.0f}};  // -1 + 2 = 1, then repetition 2 -> 0.5 (penalty first would give 0)
  p.repetition_penalty = 2.0;
  ExpectOnlyChanged(Process(p, Context()), {{1, 1.0f}, {2, 0.5f}, {3, 0.0f}});
}

TEST(SamplerProcessTest, MinTokensMasksEosAndStopIdsUntilReached) {
  SamplingParams p;
  p.min_tokens = 3;
  p.stop_token_ids = {8};
  const std::vector<int32_t> eos = {9, 4};
  for (int n = 0; n <= 4; ++n) {
    const std::vector<int32_t> generated(n, 0);
    const SampleContext c{.prompt = kPrompt, .generated = generated, .eos_ids = eos};
    if (n < 3) {
      ExpectOnlyChanged(Process(p, c), {{9, -INFINITY}, {4, -INFINITY}, {8, -INFINITY}});
    } else {
      ExpectOnlyChanged(Process(p, c), {});
    }
  }
  // Greedy would pick token 8 (logit 4.0), then 4: both masked until 3 tokens exist.
  Sampler s(10);
  SamplingParams g = p;
  g.temperature = 0;
  std::vector<int32_t> generated;
  for (int step = 0; step < 4; ++step) {
    const SampleContext c{.prompt = kPrompt, .generated = generated, .eos_ids = eos};
    StatusOr<SampleResult> r = s.Sample(g, c, kLogits);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->token, step < 3 ? 1 : 8) << "step " << step;
    generated.push_back(r->token);
  }
}

TEST(SamplerProcessTest, IgnoreEosMasksEosOnly) {
  SamplingParams p;
  p.ignore_eos = true;
  p.stop_token_ids = {8};
  const std::vector<int32_t> eos = {4};
  const SampleContext c{.prompt = kPrompt, .generated = kGenerated, .eos_ids = eos};
  ExpectOnlyChanged(Process(p, c), {{4, -INFINITY}});
}

TEST(SamplerProcessTest, AllowedSetMasksEverythingElseLast) {
  // Tokens 1, 4 and 8 allowed; the bias on 4 still applies, and a ban stays a ban.
  const std::vector<uint32_t> allowed = {(1u << 1) | (1u << 4) | (1u << 8)};
  SamplingParams p;
  p.logit_bias = {{4, 1.0f}, {8, -INFINITY}, {5, 2.0f}};
  const SampleContext c{.prompt = kPrompt, .generated = kGenerated, .allowed = allowed};
  std::map<int, float> want;
  for (int t = 0; t < 10; ++t) want[t] = -INFINITY;
  want[1] = kLogits[1];
  want[4] = kLogits[4] + 1.0f;
  ExpectOnlyChanged(Process(p, c), want);
  // Too few words for the vocabulary: an error, not a read past the end.
  Sampler s(40);
  std::vector<float> logits(40, 0.0f);
  EXPECT_FALSE(s.ProcessLogits(SamplingParams(), c, logits).ok());
}

TEST(SamplerProcessTest, OnlyEndAllowedLiftsTheEosMasks) {
  // The grammar allows only its end (token 9): min_tokens and ignore_eos do not hold it back.
  const std::vector<uint32_t> allowed = {1u << 9};
  const std::vector<int32_t> eos = {9, 4};
  SamplingParams p;
  p.min_tokens = 50;
  p.ignore_eos = true;
  p.stop_token_ids = {8};
  p.temperature = 0;
  SampleContext c{.prompt = kPrompt, .generated = kGenerated, .eos_ids = eos, .allowed = allowed};
  EXPECT_FALSE(Sampler(10).Sample(p, c, kLogits).ok());  // every token masked
  c.only_end_allowed = true;
  StatusOr<SampleResult> r = Sampler(10).Sample(p, c, kLogits);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->token, 9);
}

TEST(SamplerProcessTest, AllowedSetEqualsMaskingByHand) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (int trial = 0; trial < 200; ++trial) {
    const int32_t n = 1 + static_cast<int32_t>(rng() % 300);
    std::vector<float> logits(n);
    for (float& l : logits) l = 2.0f * normal(rng);
    std::vector<uint32_t> allowed((n + 31) / 32, 0);
    const uint32_t density = 1 + rng() % 8;  // about 1/density of the tokens
    for (int32_t t = 0; t < n; ++t) {
      if (rng() % density == 0) allowed[t >> 5] |= 1u << (t & 31);
    }
    allowed[0] |= 1u;  // at least one
    std::vector<float> masked = logits;
    for (int32_t t = 0; t < n; ++t) {
      if (!((allowed[t >> 5] >> (t & 31)) & 1)) masked[t] = -INFINITY;
    }
    SamplingParams p;
    p.temperature = trial % 3 == 0 ? 0.0 : 0.7;
    p.top_k = trial % 2 ? 5 : 0;
    p.top_p = trial % 5 == 0 ? 0.8 : 1.0;
    p.logprobs = true;
    p.top_logprobs = 4;
    p.seed = trial;
    const SampleContext with{.prompt = kPrompt, .generated = kGenerated, .allowed = allowed};
    const SampleContext without{.prompt = kPrompt, .generated = kGenerated};
    Sampler s(n);
    StatusOr<SampleResult> a = s.Sample(p, with, logits);
    StatusOr<SampleResult> b = s.Sample(p, without, masked);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->token, b->token) << "trial " << trial;
    EXPECT_TRUE((allowed[a->token >> 5] >> (a->token & 31)) & 1);
    EXPECT_EQ(a->logprob, b->logprob);
    ASSERT_EQ(a->top_logprobs.size(), b->top_logprobs.size());
    for (size_t k = 0; k < a->top_logprobs.size(); ++k) {
      EXPECT_EQ(a->top_logprobs[k].token, b->top_logprobs[k].token);
    }
  }
}

TEST(SamplerGreedyTest, ArgmaxTiesToLowestIdAfterProcessing) {
  Sampler s(5);
  SamplingParams p;
  p.temperature = 0;
  const std::vector<float> tie = {1.0f, 3.0f, 2.0f, 3.0f, 3.0f};
  EXPECT_EQ(s.Sample(p, {}, tie)->token, 1);
  p.logit_bias = {{1, -0.5f}};
  EXPECT_EQ(s.Sample(p, {}, tie)->token, 3);
  p.logit_bias.clear();
  EXPECT_EQ(s.Sample(p, {}, std::vector<float>{-1.0f, -0.0f, 0.0f, -2.0f, -0.0f})->token, 1);
  // The repetition penalty applies before the argmax: 3.0 / 2 < 2.9.
  p.logit_bias.clear();
  p.repetition_penalty = 2;
  const std::vector<int32_t> prompt = {0};
  EXPECT_EQ(s.Sample(p, {.prompt = prompt}, std::vector<float>{3.0f, 2.9f, 0, 0, 0})->token, 1);
  // Greedy ignores truncation and the seed.
  p.repetition_penalty = 1;
  p.top_k = 1;
  p.top_p = 0.1;
  p.seed = 99;
  EXPECT_EQ(s.Sample(p, {.request_id = 5}, tie)->token, 1);
}

TEST(SamplerTruncationTest, TopK) {
  SamplingParams p;
  p.top_k = 3;
  EXPECT_EQ(Kept(p, {1, 5, 3, 4, 2}), (std::vector<int32_t>{1, 2, 3}));
  p.top_k = 2;  // every token tied with the 2nd value stays
  EXPECT_EQ(Kept(p, {3, 5, 5, 5, 1}), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(Kept(p, {3, 5, 4, 4, 1}), (std::vector<int32_t>{1, 2, 3}));
  p.top_k = 1;
  EXPECT_EQ(Kept(p, {3, 5, 4, 5, 1}), (std::vector<int32_t>{1, 3}));
  p.top_k = 5;  // >= vocab: off
  EXPECT_EQ(Kept(p, {3, 5, 4, 5, 1}), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  p.top_k = 4;  // masked tokens never count
  EXPECT_EQ(Kept(p, {3, -INFINITY, 4, -INFINITY, 1}), (std::vector<int32_t>{0, 2, 4}));
  p.top_k = -1;
  EXPECT_EQ(Kept(p, {3, 5, 4}), (std::vector<int32_t>{0, 1, 2}));
}

TEST(SamplerTruncationTest, TopP) {
  SamplingParams p;
  const std::vector<float> l = LogitsOf({0.15, 0.5, 0.05, 0.3});
  p.top_p = 0.75;
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{1, 3}));
  p.top_p = 0.85;
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{0, 1, 3}));
  p.top_p = 0.4;
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{1}));
  p.top_p = 0.99;
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{0, 1, 2, 3}));
  // Ties with the last token taken stay.
  p.top_p = 0.5;
  EXPECT_EQ(Kept(p, LogitsOf({0.2, 0.4, 0.2, 0.2})), (std::vector<int32_t>{0, 1, 2, 3}));
  p.top_p = 0.3;
  EXPECT_EQ(Kept(p, LogitsOf({0.2, 0.4, 0.2, 0.2})), (std::vector<int32_t>{1}));
  // Probabilities are those at the temperature: [2, 1, 0] is 0.665/0.245/0.090 at T=1, and
  // 0.982 for the top token at T=0.25.
  p.top_p = 0.7;
  EXPECT_EQ(Kept(p, {2, 1, 0}), (std::vector<int32_t>{0, 1}));
  p.temperature = 0.25;
  EXPECT_EQ(Kept(p, {2, 1, 0}), (std::vector<int32_t>{0}));
  p.temperature = 4;  // 0.41/0.32/0.25 -> needs all three
  p.top_p = 0.76;
  EXPECT_EQ(Kept(p, {2, 1, 0}), (std::vector<int32_t>{0, 1, 2}));
}

TEST(SamplerTruncationTest, TopPRenormalizesAfterTopK) {
  SamplingParams p;
  const std::vector<float> l = LogitsOf({0.3, 0.4, 0.1, 0.2});
  p.top_p = 0.55;
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{0, 1}));  // 0.4 < 0.55 <= 0.7
  p.top_k = 2;
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{1}));  // 0.4 / 0.7 = 0.57 >= 0.55
}

TEST(SamplerTruncationTest, MinP) {
  SamplingParams p;
  const std::vector<float> l = LogitsOf({0.2, 0.5, 0.05, 0.25});
  p.min_p = 0.45;  // keeps p >= 0.225
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{1, 3}));
  p.min_p = 0.35;  // keeps p >= 0.175
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{0, 1, 3}));
  p.min_p = 1.0;  // only the top (and ties with it)
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{1}));
  EXPECT_EQ(Kept(p, {1, 3, 3, 0}), (std::vector<int32_t>{1, 2}));
  p.min_p = 0.45;
  p.temperature = 2;  // ratios become square roots: 0.63, 1, 0.32, 0.71
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{0, 1, 3}));
  p.top_k = 2;  // and after top_k, min_p is still relative to the top token
  EXPECT_EQ(Kept(p, l), (std::vector<int32_t>{1, 3}));
}

// The definitions, by sorting everything: the oracle for random cases.
std::vector<int32_t> ReferenceKept(const SamplingParams& p, const std::vector<float>& l) {
  std::vector<int32_t> order;
  for (int32_t i = 0; i < static_cast<int32_t>(l.size()); ++i) {
    if (l[i] > -INFINITY) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
  float threshold = -INFINITY;
  if (p.top_k > 0 && p.top_k < static_cast<int32_t>(order.size())) {
    threshold = l[order[p.top_k - 1]];
  }
  std::vector<int32_t> cand;
  for (int32_t i : order) {
    if (l[i] >= threshold) cand.push_back(i);
  }
  const double max = l[cand[0]];
  std::vector<double> w;
  double sum = 0;
  for (int32_t i : cand) sum += w.emplace_back(std::exp((l[i] - max) / p.temperature));
  if (p.top_p < 1) {
    double cum = 0;
    for (size_t j = 0; j < cand.size(); ++j) {
      cum += w[j];
      if (cum >= p.top_p * sum) {
        threshold = std::max(threshold, l[cand[j]]);
        break;
      }
    }
  }
  if (p.min_p > 0) {
    float lowest = l[cand[0]];
    for (size_t j = 0; j < cand.size() && w[j] >= p.min_p; ++j) lowest = l[cand[j]];
    threshold = std::max(threshold, lowest);
  }
  std::vector<int32_t> kept;
  for (int32_t i : cand) {
    if (l[i] >= threshold) kept.push_back(i);
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

TEST(SamplerTruncationTest, MatchesSortEverythingOracleOnRandomCases) {
  // Vocab sizes that take the heap and nth_element top_k paths and spread top_p over many mass
  // buckets, some crowded enough to be refined; logits mostly rounded to 1/4 so ties are common;
  // some tokens masked.
  std::mt19937_64 rng(1234);
  int cases = 0;
  for (int32_t n_vocab : {7, 64, 1000, 5000, 30000}) {
    for (int trial = 0; trial < 60; ++trial) {
      std::normal_distribution<float> normal(0.0f, trial % 2 ? 3.0f : 0.7f);
      std::vector<float> l(n_vocab);
      for (float& v : l) v = normal(rng);
      if (trial % 5 != 0) {
        for (float& v : l) v = std::round(v * 4) / 4;
      }
      for (int m = 0; m < n_vocab / 10; ++m) l[rng() % n_vocab] = -INFINITY;
      l[rng() % n_vocab] = 7.0f;  // at least one finite
      SamplingParams p;
      p.temperature = std::array{0.3, 1.0, 1.7}[trial % 3];
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      const int what = trial % 8;
      if (what & 1) p.top_k = 1 + static_cast<int32_t>(rng() % (n_vocab < 40 ? n_vocab : 40));
      if (trial % 16 == 3) p.top_k = n_vocab / 2;  // the nth_element path
      if (what & 2) p.top_p = 0.05 + 0.9 * unit(rng);
      if (what & 4) p.min_p = 0.3 * unit(rng);
      ASSERT_EQ(Kept(p, l), ReferenceKept(p, l))
          << "n_vocab=" << n_vocab << " trial=" << trial << " top_k=" << p.top_k
          << " top_p=" << p.top_p << " min_p=" << p.min_p << " T=" << p.temperature;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 300);
}

TEST(SamplerTruncationTest, DrawsStayInTheKeptSet) {
  // Dense and sparse paths over a 20k vocab: every draw is a kept token, and the draws reach
  // beyond the argmax.
  std::mt19937_64 rng(77);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> l(20000);
  for (float& v : l) v = normal(rng);
  l[123] = -INFINITY;
  Sampler s(20000);
  struct Case {
    int32_t top_k;
    double top_p, min_p, t;
  };
  for (const Case& c : {Case{0, 0.9, 0, 1}, Case{0, 1, 0.2, 0.7}, Case{50, 0.8, 0.05, 1.3},
                        Case{0, 0.5, 0.1, 2}, Case{5000, 0.95, 0, 1}, Case{0, 1, 0, 1e-3}}) {
    SamplingParams p;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.temperature = c.t;
    const std::vector<int32_t> kept = *s.KeptTokens(p, l);
    std::set<int32_t> drawn;
    for (uint64_t seed = 0; seed < 300; ++seed) {
      p.seed = seed;
      const int32_t token = s.Sample(p, {}, l)->token;
      ASSERT_TRUE(std::binary_search(kept.begin(), kept.end(), token))
          << "token " << token << " top_k=" << c.top_k << " top_p=" << c.top_p;
      drawn.insert(token);
    }
    if (kept.size() > 10 && c.t > 0.5) {
      EXPECT_GT(drawn.size(), 5u) << "top_p=" << c.top_p;
    }
  }
}

TEST(SamplerGreedyTest, TinyTemperaturesAreGreedy) {
  const std::vector<float> l = {1.0f, 3.0f, 3.0f - 1e-6f, 2.0f};
  Sampler s(4);
  SamplingParams p;
  p.temperature = kGreedyTemperature / 2;
  EXPECT_TRUE(p.greedy());
  for (uint64_t seed = 0; seed < 20; ++seed) {
    p.seed = seed;
    EXPECT_EQ(s.Sample(p, {}, l)->token, 1);
  }
  p.temperature = 1e30;  // huge: close to uniform, still finite weights
  std::set<int32_t> drawn;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    p.seed = seed;
    drawn.insert(s.Sample(p, {}, l)->token);
  }
  EXPECT_EQ(drawn.size(), 4u);
}

TEST(SamplerLogprobsTest, NormalizedOverTheFullVocabOfProcessedLogitsAtT1) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(17);
  for (float& v : logits) v = normal(rng);
  SamplingParams p;
  p.temperature = 0.7;
  p.top_k = 3;
  p.logit_bias = {{5, -INFINITY}, {6, 1.0f}};
  p.repetition_penalty = 1.3;
  p.logprobs = true;
  p.top_logprobs = 17;
  const std::vector<int32_t> prompt = {1, 2, 3};
  const SampleContext c{.request_id = 3, .prompt = prompt};
  Sampler s(17);
  std::vector<float> processed = logits;
  ASSERT_TRUE(s.ProcessLogits(p, c, processed).ok());
  long double z = 0;
  for (float v : processed) z += std::exp(static_cast<long double>(v));
  for (int pos = 0; pos < 20; ++pos) {
    p.seed = pos;
    StatusOr<SampleResult> r = s.Sample(p, c, logits);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->top_logprobs.size(), 16u);  // the banned token is not listed
    double total = 0;
    for (size_t j = 0; j < r->top_logprobs.size(); ++j) {
      const TokenLogprob& t = r->top_logprobs[j];
      total += std::exp(t.logprob);
      EXPECT_NE(t.token, 5);
      EXPECT_NEAR(t.logprob, std::log(std::exp((long double)processed[t.token]) / z), 1e-12);
      if (j > 0) {
        const TokenLogprob& prev = r->top_logprobs[j - 1];
        EXPECT_TRUE(prev.logprob > t.logprob ||
                    (prev.logprob == t.logprob && prev.token < t.token));
      }
      if (t.token == r->token) {
        EXPECT_EQ(t.logprob, r->logprob);
      }
    }
    EXPECT_NEAR(total, 1.0, 1e-12);
    EXPECT_NEAR(r->logprob, std::log(std::exp((long double)processed[r->token]) / z), 1e-12);
  }
}

TEST(SamplerLogprobsTest, LargeVocabAndTies) {
  // 128k tokens: log-probabilities still sum to 1 (computed in double).
  const int32_t n = 128 * 1024;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(n);
  for (float& v : logits) v = normal(rng);
  logits[100] = logits[50] = 30.0f;  // a tie at the top
  SamplingParams p;
  p.temperature = 0;
  p.logprobs = true;
  p.top_logprobs = 3;
  Sampler s(n);
  StatusOr<SampleResult> r = s.Sample(p, {}, logits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->token, 50);
  ASSERT_EQ(r->top_logprobs.size(), 3u);
  EXPECT_EQ(r->top_logprobs[0].token, 50);
  EXPECT_EQ(r->top_logprobs[1].token, 100);
  long double z = 0;
  for (float v : logits) z += std::exp(static_cast<long double>(v) - 30);
  EXPECT_NEAR(r->logprob, -std::log(z), 1e-12);
  double total = 0;  // p_i = exp(l_i - log Z), log Z = 30 - logprob(top)
  for (int i = 0; i < n; ++i) total += std::exp(double{logits[i]} - 30 + r->logprob);
  EXPECT_NEAR(total, 1.0, 1e-9);
  p.logprobs = false;
  p.top_logprobs = 0;
  r = s.Sample(p, {}, logits);
  EXPECT_TRUE(std::isnan(r->logprob));
  EXPECT_TRUE(r->top_logprobs.empty());
}

TEST(SamplerErrorsTest, BadInputsAreNamed) {
  Sampler s(4);
  SamplingParams p;
  auto error = [&](const SampleContext& c, std::vector<float> l) {
    StatusOr<SampleResult> r = s.Sample(p, c, l);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(error({}, {1, 2, 3}), "logits: 3 values, expected n_vocab=4");
  EXPECT_EQ(error({}, {1, NAN, 3, 4}), "logits[1]=nan: must be finite or -inf");
  EXPECT_EQ(error({}, {1, 2, INFINITY, 4}), "logits[2]=inf: must be finite or -inf");
  const std::vector<int32_t> bad = {0, 4};
  EXPECT_EQ(error({.eos_ids = bad}, {1, 2, 3, 4}), "eos_ids[1]=4: out of vocabulary (n_vocab=4)");
  p.repetition_penalty = 1.1;
  EXPECT_EQ(error({.generated = bad}, {1, 2, 3, 4}),
            "generated[1]=4: out of vocabulary (n_vocab=4)");
  p.top_p = 2;
  EXPECT_EQ(error({}, {1, 2, 3, 4}), "top_p=2: must be in (0, 1]");
  p = SamplingParams();
  p.logit_bias = {{0, -INFINITY}, {1, -INFINITY}};
  StatusOr<SampleResult> r = s.Sample(p, {}, std::vector<float>{1, 2, -INFINITY, -INFINITY});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  // After errors the Sampler is still sound.
  p = SamplingParams();
  p.temperature = 0;
  EXPECT_EQ(s.Sample(p, {}, std::vector<float>{1, 2, 5, 4})->token, 2);
}

}  // namespace
}  // namespace forge
