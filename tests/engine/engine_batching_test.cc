// The engine's equality oracles on stories260K (CPU, batch-invariant): 64 requests together ==
// each alone (logits bit for bit, tokens, text); chunked prefill == one-shot; a prefix-cache hit
// == a cold run; preempted and resumed == never preempted; seeded sampling alone == batched ==
// preempted == Generator; forked samples == Generator with their sample index. Every oracle
// runs on one rank and under tensor parallelism over two CPU ranks (a host collective).
#include <gtest/gtest.h>

#include "engine/generator.h"
#include "engine_test_util.h"

namespace forge {
namespace {

using testing::BatchRun;
using testing::ExpectSameRuns;
using testing::Greedy;
using testing::RandomPrompt;
using testing::RunRequests;
using testing::Stories260K;
using testing::TestOptions;

class EngineBatchingTest : public ::testing::TestWithParam<int> {
 protected:
  testing::StoriesRanksScope ranks_{GetParam()};
};

INSTANTIATE_TEST_SUITE_P(TensorParallel, EngineBatchingTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "tp" + std::to_string(i.param);
                         });

std::vector<EngineRequest> SixtyFourRequests() {
  std::mt19937_64 rng(64);
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 64; ++i) {
    const int32_t len = 1 + static_cast<int32_t>(rng() % 70) + (i % 8 == 0 ? 60 : 0);
    const int32_t gen = 1 + static_cast<int32_t>(rng() % 24);
    reqs.push_back(Greedy(RandomPrompt(rng, len), gen, /*ignore_eos=*/i % 2 == 0));
  }
  return reqs;
}

TEST_P(EngineBatchingTest, SixtyFourTogetherEqualEachAlone) {
  const std::vector<EngineRequest> reqs = SixtyFourRequests();
  BatchRun alone = RunRequests(TestOptions(), reqs, /*one_by_one=*/true);
  BatchRun together = RunRequests(TestOptions(), reqs);
  ExpectSameRuns(together, alone, "64 batched vs alone");
  // The mechanism ran: far fewer steps than alone, and prompts were split over steps
  // (they total more than one step's 512-token budget).
  EXPECT_LT(together.stats.steps * 4, alone.stats.steps);
  int64_t prompt_total = 0;
  for (const auto& r : reqs) prompt_total += static_cast<int64_t>(r.prompt_ids.size());
  EXPECT_GT(prompt_total, 512);
  EXPECT_EQ(together.stats.requests_finished, 64);
  EXPECT_GT(together.stats.generation_tokens, 64);
}

TEST_P(EngineBatchingTest, ChunkedPrefillEqualsOneShot) {
  std::mt19937_64 rng(5);
  std::vector<EngineRequest> reqs = {Greedy(RandomPrompt(rng, 200), 20),
                                     Greedy(RandomPrompt(rng, 37), 20)};
  BatchRun one_shot = RunRequests(TestOptions(512, 8, 512), reqs);
  BatchRun chunked = RunRequests(TestOptions(512, 8, 8), reqs);  // 8 tokens per step
  ExpectSameRuns(chunked, one_shot, "chunked vs one-shot");
  EXPECT_GE(chunked.stats.steps, 200 / 8);
  EXPECT_LE(one_shot.stats.steps, 21);
}

TEST_P(EngineBatchingTest, PrefixCacheHitEqualsColdRun) {
  std::mt19937_64 rng(9);
  const std::vector<int32_t> system = RandomPrompt(rng, 70);
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> p = system;
    for (int k = 0; k < 5 + 7 * i; ++k) p.push_back(3 + static_cast<int32_t>(rng() % 500));
    reqs.push_back(Greedy(p, 12));
  }
  reqs.push_back(Greedy(system, 12));  // the whole prompt cached but its last block
  EngineOptions cold = TestOptions();
  cold.enable_prefix_caching = false;
  BatchRun want = RunRequests(cold, reqs, /*one_by_one=*/true);
  BatchRun got = RunRequests(TestOptions(), reqs, /*one_by_one=*/true);
  ExpectSameRuns(got, want, "prefix hit vs cold");
  EXPECT_EQ(want.stats.prefix_cache_hits, 0);
  EXPECT_GT(got.stats.prefix_cache_hits, 0);
  EXPECT_GT(got.stats.prefix_cache_hit_rate(), 0.5);
  EXPECT_EQ(got.runs[0][0].usage.cached_prompt_tokens, 0);
  for (int i = 1; i < 5; ++i) EXPECT_EQ(got.runs[i][0].usage.cached_prompt_tokens, 64) << i;
}

TEST_P(EngineBatchingTest, PreemptedAndResumedEqualsNeverPreempted) {
  std::mt19937_64 rng(11);
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 8; ++i) reqs.push_back(Greedy(RandomPrompt(rng, 20 + 9 * i), 60));
  BatchRun want = RunRequests(TestOptions(), reqs, /*one_by_one=*/true);
  for (bool caching : {true, false}) {
    EngineOptions small = TestOptions(/*blocks=*/16, /*max_seqs=*/8, /*budget=*/64);
    small.enable_prefix_caching = caching;
    BatchRun got = RunRequests(small, reqs);
    ExpectSameRuns(got, want, caching ? "preempted (caching)" : "preempted (no caching)");
    EXPECT_GT(got.stats.preemptions, 0);
    int preempted = 0;
    for (const auto& r : got.runs) preempted += r[0].timing.preemptions > 0 ? 1 : 0;
    EXPECT_GT(preempted, 0);
  }
}

EngineRequest Seeded(std::vector<int32_t> prompt, uint64_t seed, int32_t n = 1) {
  EngineRequest r;
  r.prompt_ids = std::move(prompt);
  r.params.temperature = 0.9;
  r.params.top_p = 0.95;
  r.params.seed = seed;
  r.params.max_tokens = 50;
  r.params.ignore_eos = true;
  r.n = n;
  return r;
}

std::vector<int32_t> GeneratorTokens(const EngineRequest& r, uint64_t request_id) {
  auto& st = Stories260K();
  GenerateRequest g;
  g.prompt = r.prompt_ids;
  g.params = r.params;
  g.request_id = request_id;
  Generator gen(*st.model, *st.tokenizer, {.ctx_size = 512});
  auto out = gen.Generate(g);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? out->tokens : std::vector<int32_t>{};
}

TEST_P(EngineBatchingTest, SeededSamplingSameAloneBatchedAndPreempted) {
  std::mt19937_64 rng(13);
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 7; ++i) reqs.push_back(Greedy(RandomPrompt(rng, 30 + 5 * i), 50));
  reqs.push_back(Seeded(RandomPrompt(rng, 40), 1234));  // the newest: preempted first
  const std::vector<int32_t> reference = GeneratorTokens(reqs.back(), 0);
  ASSERT_EQ(reference.size(), 50u);

  BatchRun alone = RunRequests(TestOptions(), {reqs.back()});
  BatchRun batched = RunRequests(TestOptions(), reqs);
  BatchRun preempted = RunRequests(TestOptions(/*blocks=*/20, 8, 64), reqs);
  EXPECT_EQ(alone.runs[0][0].tokens, reference);
  EXPECT_EQ(batched.runs.back()[0].tokens, reference);
  EXPECT_EQ(preempted.runs.back()[0].tokens, reference);
  EXPECT_GT(preempted.runs.back()[0].timing.preemptions, 0);
  // Another seed gives another continuation.
  EngineRequest other = reqs.back();
  other.params.seed = 1235;
  EXPECT_NE(RunRequests(TestOptions(), {other}).runs[0][0].tokens, reference);
}

TEST_P(EngineBatchingTest, UnsetSeedIsPickedAndReplays) {
  std::mt19937_64 rng(3);
  EngineRequest r = Seeded(RandomPrompt(rng, 10), 0);
  r.params.seed.reset();
  auto& st = Stories260K();
  auto engine = Engine::Create(*st.model, st.tokenizer.get(), TestOptions(64, 4, 64));
  ASSERT_TRUE(engine.ok());
  auto h = (*engine)->Submit(r);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE((*engine)->RunUntilIdle().ok());
  std::vector<int32_t> got;
  RequestEvent ev;
  while (h->events->Next(&ev)) got.insert(got.end(), ev.tokens.begin(), ev.tokens.end());
  r.params.seed = h->seed;
  EXPECT_EQ(got, GeneratorTokens(r, 0));
}

TEST_P(EngineBatchingTest, ForkedSamplesEqualGeneratorWithTheirSampleIndex) {
  std::mt19937_64 rng(17);
  // 21 tokens: the prompt's last block is partly filled and shared, so samples copy it.
  EngineRequest fork = Seeded(RandomPrompt(rng, 21), 99, /*n=*/4);
  std::vector<std::vector<int32_t>> want;
  for (int i = 0; i < 4; ++i) want.push_back(GeneratorTokens(fork, i));
  EXPECT_NE(want[0], want[1]);
  std::vector<EngineRequest> reqs = {Greedy(RandomPrompt(rng, 50), 60), fork};
  for (int32_t blocks : {256, 14}) {  // roomy, then small enough to preempt samples
    BatchRun got = RunRequests(TestOptions(blocks, 8, 64), reqs);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(got.runs[1][i].tokens, want[i]) << "sample " << i << ", " << blocks << " blocks";
      EXPECT_EQ(got.runs[1][i].finish, FinishReason::kLength);
    }
    EXPECT_GT(got.stats.cow_copies, 0);
    if (blocks == 14) {
      EXPECT_GT(got.stats.preemptions, 0);
    }
  }
}

TEST_P(EngineBatchingTest, PoolTooSmallForAllCompletesWithoutDeadlock) {
  std::mt19937_64 rng(21);
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < 32; ++i) {
    reqs.push_back(Greedy(RandomPrompt(rng, 1 + static_cast<int32_t>(rng() % 60)),
                          1 + static_cast<int32_t>(rng() % 60)));
    if (i % 5 == 0) reqs.back().n = 2;
  }
  BatchRun want = RunRequests(TestOptions(), reqs, /*one_by_one=*/true);
  // 12 blocks = 192 tokens: about two requests at a time at most.
  BatchRun got = RunRequests(TestOptions(/*blocks=*/12, 16, 64), reqs);
  ExpectSameRuns(got, want, "small pool");
  EXPECT_GT(got.stats.preemptions, 0);
  EXPECT_EQ(got.stats.requests_finished, 32);
}

}  // namespace
}  // namespace forge
