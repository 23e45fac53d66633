// The engine samples through the backend's Sample op (the step's rows and edits built by
// engine/sample_rows.h); the oracle is the host Sampler run on the very logits rows the engine
// sampled from (captured by the logits hook) with the request's params and context. Every token
// must equal the Sampler's, every log-probability match within 1e-9. Shared by the CPU engine
// test and its CUDA twin.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "support/test_env.h"

namespace forge::testing {

struct SamplingCase {
  SamplingParams params;
  int32_t n = 1;
};

// Varied settings: top_k, top_p, min_p, temperature, penalties over windows, logit bias (a ban
// too), min_tokens and ignore_eos masks, logprobs with alternatives, forks.
inline std::vector<SamplingCase> SamplingCases() {
  std::vector<SamplingCase> cases;
  auto add = [&](auto set, int32_t n = 1) {
    SamplingCase c;
    c.params.max_tokens = 24;
    c.params.seed = 100 + cases.size();
    set(c.params);
    c.n = n;
    cases.push_back(c);
  };
  add([](SamplingParams& p) {
    p.temperature = 0.8;
    p.top_k = 40;
    p.logprobs = true;
    p.top_logprobs = 5;
  });
  add([](SamplingParams& p) {
    p.temperature = 1.0;
    p.top_p = 0.9;
    p.min_p = 0.05;
    p.repetition_penalty = 1.3;
    p.presence_penalty = 0.5;
    p.frequency_penalty = 0.3;
  });
  add([](SamplingParams& p) {
    p.temperature = 1.5;
    p.logit_bias = {{10, 5.0f}, {20, -std::numeric_limits<float>::infinity()}, {300, -2.5f}};
    p.penalty_last_n = 8;
    p.repetition_penalty = 0.7;
    p.min_tokens = 5;
    p.logprobs = true;
    p.top_logprobs = 20;
  });
  add([](SamplingParams& p) {
    p.temperature = 0.0;
    p.ignore_eos = true;
    p.logprobs = true;
    p.top_logprobs = 3;
    p.frequency_penalty = 1.0;
  });
  add([](SamplingParams& p) {
    p.temperature = 2.0;
    p.top_k = 3;
    p.top_p = 0.5;
  });
  add([](SamplingParams& p) { p.temperature = 1.0; }, /*n=*/3);
  add([](SamplingParams& p) {
    p.temperature = 0.6;
    p.min_p = 0.2;
    p.stop_token_ids = {13};
    p.min_tokens = 3;
    p.logprobs = true;
  });
  return cases;
}

// Runs every case on `model` (stories260K-sized) through one engine together and checks each
// sample's tokens and logprobs against the host Sampler on the captured logits.
inline void ExpectEngineSamplingMatchesSampler(ModelRunner& model) {
  const std::vector<SamplingCase> cases = SamplingCases();
  struct Row {
    std::vector<float> logits;
    int64_t position;
  };
  struct Sample {
    std::vector<Row> rows;
    std::vector<int32_t> tokens;
    std::vector<SampleResult> logprobs;
    bool finished = false;
    Status status;
  };
  std::vector<std::vector<Sample>> got(cases.size());
  std::map<RequestId, size_t> index;
  EngineOptions o;
  o.ctx_size = 256;
  o.num_kv_blocks = 256;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 256;
  o.seed_source = 1;
  o.eos_ids = {2, 13};  // masked by min_tokens and ignore_eos, ending samples otherwise
  o.logits_hook = [&](const LogitsRow& row) {
    got[index.at(row.request_id)][row.sample].rows.push_back(
        {{row.logits.begin(), row.logits.end()}, row.position});
  };
  auto engine = Engine::Create(model, nullptr, o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < cases.size(); ++i) {
    got[i].resize(cases[i].n);
    std::vector<int32_t> prompt;
    for (size_t t = 0; t < 5 + 3 * i; ++t) {
      prompt.push_back(static_cast<int32_t>(1 + (t * 37 + i * 11) % 500));
    }
    prompts.push_back(prompt);
    EngineRequest r;
    r.prompt_ids = prompt;
    r.params = cases[i].params;
    r.n = cases[i].n;
    r.on_event = [&got, i](const RequestEvent& ev) {
      Sample& s = got[i][ev.sample];
      s.tokens.insert(s.tokens.end(), ev.tokens.begin(), ev.tokens.end());
      s.logprobs.insert(s.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
      if (ev.finished) {
        s.finished = true;
        s.status = ev.status;
      }
    };
    auto h = (*engine)->Submit(std::move(r));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    index[h->id] = i;
  }
  ASSERT_TRUE((*engine)->RunUntilIdle().ok());
  EXPECT_EQ((*engine)->stats().kv_blocks_used, 0);

  const int32_t n_vocab = static_cast<int32_t>(model.config().n_vocab);
  const std::vector<int32_t> eos = o.eos_ids;
  Sampler sampler(n_vocab);
  int64_t checked = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    for (int32_t k = 0; k < cases[i].n; ++k) {
      const Sample& s = got[i][k];
      SCOPED_TRACE("case " + std::to_string(i) + " sample " + std::to_string(k));
      ASSERT_TRUE(s.finished);
      ASSERT_TRUE(s.status.ok()) << s.status.ToString();
      ASSERT_FALSE(s.tokens.empty());
      // A forked request's first row is shared by its samples: the hook reports it once, for
      // sample 0; the others start at their second token.
      const size_t skip = s.rows.size() < s.tokens.size() ? s.tokens.size() - s.rows.size() : 0;
      ASSERT_EQ(s.rows.size() + skip, s.tokens.size());
      for (size_t j = 0; j < s.tokens.size(); ++j) {
        const Row* row = j >= skip ? &s.rows[j - skip] : (j == 0 ? &got[i][0].rows[0] : nullptr);
        ASSERT_NE(row, nullptr);
        SampleContext ctx;
        ctx.request_id = static_cast<uint64_t>(k);
        ctx.prompt = prompts[i];
        ctx.generated = std::span<const int32_t>(s.tokens.data(), j);
        ctx.eos_ids = eos;
        auto want = sampler.Sample(cases[i].params, ctx, row->logits);
        ASSERT_TRUE(want.ok()) << want.status().ToString();
        EXPECT_EQ(s.tokens[j], want->token) << "token " << j;
        if (cases[i].params.logprobs) {
          ASSERT_EQ(s.logprobs.size(), s.tokens.size());
          EXPECT_NEAR(s.logprobs[j].logprob, want->logprob, 1e-9) << "token " << j;
          ASSERT_EQ(s.logprobs[j].top_logprobs.size(), want->top_logprobs.size());
          for (size_t t = 0; t < want->top_logprobs.size(); ++t) {
            EXPECT_EQ(s.logprobs[j].top_logprobs[t].token, want->top_logprobs[t].token);
            EXPECT_NEAR(s.logprobs[j].top_logprobs[t].logprob, want->top_logprobs[t].logprob, 1e-9);
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

}  // namespace forge::testing
