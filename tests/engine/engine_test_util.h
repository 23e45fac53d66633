// Helpers for the engine tests: stories260K loaded once, running a list of requests through an
// engine together (or one after another) and collecting every sample's tokens, text, finish and
// the logits rows it was sampled from; bit-exact comparison of two runs.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "engine/engine.h"
#include "support/test_env.h"

namespace forge::testing {

struct Stories {
  std::vector<std::unique_ptr<Backend>> backends;  // one CPU backend per tensor-parallel rank
  std::unique_ptr<Collective> collective;
  std::unique_ptr<ModelRunner> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// The tensor-parallel ranks Stories260K() loads the model over (1: none); a parameterized test
// sets it for its run (StoriesRanksScope).
inline int& StoriesRanks() {
  static int ranks = 1;
  return ranks;
}
struct StoriesRanksScope {
  explicit StoriesRanksScope(int n) { StoriesRanks() = n; }
  ~StoriesRanksScope() { StoriesRanks() = 1; }
};

// stories260K (vocab 512, 5 layers, head dim 8) on CPU backends over StoriesRanks() ranks, loaded
// on first use.
inline Stories& Stories260K() {
  // Never destroyed (like the models in it): the leak checker must still reach them at exit.
  static auto* loaded = new std::map<int, Stories*>();
  const int n = StoriesRanks();
  Stories*& s = (*loaded)[n];
  if (s == nullptr) {
    s = new Stories();
    std::vector<Backend*> ranks;
    for (int r = 0; r < n; ++r) ranks.push_back(s->backends.emplace_back(MakeCpuBackend()).get());
    if (n > 1) s->collective = MakeHostCollective(n);
    auto m = ModelRunner::LoadParallel(TestDataPath("models/stories260K.gguf"), ranks,
                                       s->collective.get());
    CHECK(m.ok()) << m.status().ToString();
    s->model = std::move(m).value();
    auto t = Tokenizer::FromGguf(s->model->file());
    CHECK(t.ok()) << t.status().ToString();
    s->tokenizer = std::move(t).value();
  }
  return *s;
}

// Small-model defaults: a 512-token context and a pool the tests size explicitly.
inline EngineOptions TestOptions(int32_t blocks = 512, int32_t max_seqs = 64,
                                 int32_t budget = 512) {
  EngineOptions o;
  o.ctx_size = 512;
  o.num_kv_blocks = blocks;
  o.max_num_seqs = max_seqs;
  o.max_num_batched_tokens = budget;
  o.check_invariants = true;
  o.seed_source = 1;
  return o;
}

struct SampleRun {
  std::vector<int32_t> tokens;
  std::string text;
  bool finished = false;
  FinishReason finish = FinishReason::kNone;
  Status status;
  RequestUsage usage;
  RequestTiming timing;
  std::vector<std::vector<float>> logits;  // every row this sample's sequence was sampled from
  std::vector<int64_t> positions;
};
using RequestRun = std::vector<SampleRun>;  // [n]

struct BatchRun {
  std::vector<RequestRun> runs;  // by submission index
  EngineStats stats;
};

// Submits every request, then steps until idle. one_by_one: each request runs to its end
// before the next is submitted (the "alone" reference).
inline BatchRun RunRequests(EngineOptions options, const std::vector<EngineRequest>& requests,
                            bool one_by_one = false, const Tokenizer* tokenizer = nullptr,
                            bool use_tokenizer = true) {
  Stories& st = Stories260K();
  BatchRun out;
  out.runs.resize(requests.size());
  auto index = std::make_shared<std::map<RequestId, size_t>>();
  options.logits_hook = [&out, index](const LogitsRow& row) {
    SampleRun& s = out.runs[index->at(row.request_id)][row.sample];
    s.logits.emplace_back(row.logits.begin(), row.logits.end());
    s.positions.push_back(row.position);
  };
  const Tokenizer* tok = use_tokenizer ? (tokenizer ? tokenizer : st.tokenizer.get()) : nullptr;
  auto engine = Engine::Create(*st.model, tok, options);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  if (!engine.ok()) return out;
  for (size_t i = 0; i < requests.size(); ++i) {
    EngineRequest r = requests[i];
    out.runs[i].resize(r.n);
    r.on_event = [&out, i](const RequestEvent& ev) {
      SampleRun& s = out.runs[i][ev.sample];
      EXPECT_FALSE(s.finished) << "event after the final one";
      s.tokens.insert(s.tokens.end(), ev.tokens.begin(), ev.tokens.end());
      s.text += ev.text;
      if (ev.finished) {
        s.finished = true;
        s.finish = ev.finish;
        s.status = ev.status;
        s.usage = ev.usage;
        s.timing = ev.timing;
      }
    };
    auto h = (*engine)->Submit(std::move(r));
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) continue;
    (*index)[h->id] = i;
    if (one_by_one) {
      EXPECT_TRUE((*engine)->RunUntilIdle().ok());
    }
  }
  Status s = (*engine)->RunUntilIdle();
  EXPECT_TRUE(s.ok()) << s.ToString();
  out.stats = (*engine)->stats();
  EXPECT_EQ(out.stats.kv_blocks_used, 0);
  EXPECT_EQ(out.stats.kv_blocks_used + out.stats.kv_blocks_cached + out.stats.kv_blocks_free,
            out.stats.kv_blocks_total);
  return out;
}

// Bit-exact: same tokens, text, finish and every logits row.
inline void ExpectSameRuns(const BatchRun& got, const BatchRun& want, const std::string& what) {
  ASSERT_EQ(got.runs.size(), want.runs.size());
  for (size_t i = 0; i < got.runs.size(); ++i) {
    ASSERT_EQ(got.runs[i].size(), want.runs[i].size());
    for (size_t k = 0; k < got.runs[i].size(); ++k) {
      const SampleRun& a = got.runs[i][k];
      const SampleRun& b = want.runs[i][k];
      SCOPED_TRACE(what + ": request " + std::to_string(i) + " sample " + std::to_string(k));
      EXPECT_TRUE(a.finished && b.finished);
      EXPECT_TRUE(a.status.ok()) << a.status.ToString();
      EXPECT_EQ(a.tokens, b.tokens);
      EXPECT_EQ(a.text, b.text);
      EXPECT_EQ(a.finish, b.finish);
      EXPECT_EQ(a.positions, b.positions);
      ASSERT_EQ(a.logits.size(), b.logits.size());
      for (size_t r = 0; r < a.logits.size(); ++r) {
        ASSERT_EQ(a.logits[r].size(), b.logits[r].size());
        ASSERT_EQ(0, std::memcmp(a.logits[r].data(), b.logits[r].data(), a.logits[r].size() * 4))
            << "logits row " << r << " (position " << a.positions[r] << ") differ";
      }
    }
  }
}

inline std::vector<int32_t> RandomPrompt(std::mt19937_64& rng, int32_t len, int32_t vocab = 512) {
  std::vector<int32_t> p(len);
  p[0] = 1;  // BOS
  for (int32_t i = 1; i < len; ++i) p[i] = 3 + static_cast<int32_t>(rng() % (vocab - 3));
  return p;
}

inline EngineRequest Greedy(std::vector<int32_t> prompt, int32_t max_tokens,
                            bool ignore_eos = true) {
  EngineRequest r;
  r.prompt_ids = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = ignore_eos;
  return r;
}

}  // namespace forge::testing
