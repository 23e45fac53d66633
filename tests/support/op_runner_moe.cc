// The op harness's mixture-of-experts runners (op_runner.h): Route against route_ref (the chosen
// experts exactly, in order; the weights within F32's bound) on router logits whose values are
// far apart (no near-ties to break differently), and ExpertSum against expert_sum_ref.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "support/op_buffers.h"
#include "support/op_cases.h"
#include "support/op_harness.h"

namespace forge::testing {
namespace {

// Per token, a shuffled ladder of logits 0.07 apart (plus a token's offset): distinct choices.
std::vector<float> LadderLogits(int64_t tokens, int64_t experts, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(tokens * experts);
  std::vector<int64_t> rank(experts);
  for (int64_t t = 0; t < tokens; ++t) {
    std::iota(rank.begin(), rank.end(), 0);
    std::shuffle(rank.begin(), rank.end(), rng);
    const float offset = static_cast<float>(rng() % 1000) / 250.0f - 2.0f;
    for (int64_t e = 0; e < experts; ++e) {
      v[t * experts + e] = offset + 0.07f * static_cast<float>(rank[e] - experts / 2);
    }
  }
  return v;
}

template <typename T>
std::vector<T> Fetch(Backend& be, const void* dev, size_t n) {
  std::vector<T> out(n);
  EXPECT_TRUE(be.Synchronize().ok());
  EXPECT_TRUE(be.Download(out.data(), dev, n * sizeof(T)).ok());
  return out;
}

}  // namespace

void RunRouteCases(std::span<OpTarget> targets) {
  const std::vector<RouteCase>& cases = RouteCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const RouteCase& c = cases[i];
    const std::vector<float> logits = LadderLogits(c.n_tokens, c.n_expert, 500 + i);
    std::vector<float> bias;
    if (c.bias) bias = RandomVector(c.n_expert, 520 + i, 0.01f);
    RouteParams p{.logits = logits.data(),
                  .bias = c.bias ? bias.data() : nullptr,
                  .n_tokens = c.n_tokens,
                  .n_expert = c.n_expert,
                  .k = c.k,
                  .gating = c.gating,
                  .normalize = c.normalize,
                  .scale = c.scale};
    std::vector<int32_t> want_ids(c.n_tokens * c.k);
    std::vector<float> want_w(c.n_tokens * c.k);
    p.ids = want_ids.data();
    p.weights = want_w.data();
    ASSERT_TRUE(route_ref(p).ok());
    const std::string what = "route | " + std::to_string(c.n_tokens) + " tokens, " +
                             std::to_string(c.k) + " of " + std::to_string(c.n_expert) +
                             " experts, gating " + std::to_string(static_cast<int>(c.gating)) +
                             (c.normalize ? ", normalized" : "") + (c.bias ? ", bias" : "");
    for (const OpTarget* tg : TargetsFor(targets, DType::kF32, c.n_tokens * c.n_expert)) {
      OpBuffers b(*tg->backend);
      RouteParams d = p;
      d.logits = b.In(logits);
      d.bias = c.bias ? b.In(bias) : nullptr;
      d.ids = static_cast<int32_t*>(b.In(std::vector<int32_t>(want_ids.size(), -1)));
      d.weights =
          static_cast<float*>(b.Out("weights", DType::kF32, want_w, BoundFor({DType::kF32})));
      ASSERT_TRUE(b.Reset());
      ASSERT_TRUE(tg->backend->Route(d).ok()) << what;
      EXPECT_EQ(Fetch<int32_t>(*tg->backend, d.ids, want_ids.size()), want_ids)
          << what << " | " << tg->backend->name();
      b.Check(what + " | " + tg->backend->name(), 0);
    }
  }
}

void RunExpertSumCases(std::span<OpTarget> targets) {
  const std::vector<ExpertSumCase>& cases = ExpertSumCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const ExpertSumCase& c = cases[i];
    const std::vector<float> y = RandomVector(c.n_tokens * c.k * c.n, 540 + i);
    const std::vector<float> w = RandomVector(c.n_tokens * c.k, 560 + i);
    const std::vector<float> shared = RandomVector(c.n_tokens * c.n, 580 + i);
    const std::vector<float> gate = RandomVector(c.n_tokens, 600 + i);
    std::vector<float> want(c.n_tokens * c.n);
    ExpertSumParams p{.y = y.data(),
                      .weights = w.data(),
                      .out = want.data(),
                      .n_tokens = c.n_tokens,
                      .k = c.k,
                      .n = c.n};
    if (c.shared) p.shared = shared.data();
    if (c.shared_gate) p.shared_gate = gate.data();
    ASSERT_TRUE(expert_sum_ref(p).ok());
    const std::string what = "expert_sum | " + std::to_string(c.n_tokens) + " tokens of " +
                             std::to_string(c.k) + " x " + std::to_string(c.n) +
                             (c.shared ? ", shared" : "") + (c.shared_gate ? " gated" : "");
    for (const OpTarget* tg : TargetsFor(targets, DType::kF32, c.n_tokens * c.k * c.n)) {
      OpBuffers b(*tg->backend);
      ExpertSumParams d = p;
      d.y = b.In(y);
      d.weights = b.In(w);
      d.shared = c.shared ? b.In(shared) : nullptr;
      d.shared_gate = c.shared_gate ? b.In(gate) : nullptr;
      d.out = static_cast<float*>(b.Out("out", DType::kF32, want, BoundFor({DType::kF32})));
      RunOp(*tg, b, what, d, &Backend::ExpertSum);
    }
  }
}

}  // namespace forge::testing
