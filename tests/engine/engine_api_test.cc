// The Engine API on stories260K: streamed text through a queue or a callback equals the expected
// greedy text, stop strings, logprobs, requests that can never fit are refused with a clear
// error, cancellation before and during a request releases its blocks, shutdown ends requests,
// statistics, and an engine without a tokenizer.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine_test_util.h"

namespace forge {
namespace {

using testing::Greedy;
using testing::Stories260K;
using testing::TestOptions;

std::unique_ptr<Engine> MakeEngine(const EngineOptions& o = TestOptions(64, 8, 64),
                                   bool tokenizer = true) {
  auto& st = Stories260K();
  auto e = Engine::Create(*st.model, tokenizer ? st.tokenizer.get() : nullptr, o);
  CHECK(e.ok()) << e.status().ToString();
  return std::move(e).value();
}

struct Drained {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<RequestEvent> finals;
  int events = 0;
};

Drained Drain(RequestEvents& q) {
  Drained d;
  RequestEvent ev;
  while (q.Next(&ev)) {
    ++d.events;
    d.tokens.insert(d.tokens.end(), ev.tokens.begin(), ev.tokens.end());
    d.text += ev.text;
    if (ev.finished) d.finals.push_back(ev);
  }
  return d;
}

TEST(EngineApiTest, StreamsTheExpectedGreedyText) {
  std::ifstream in(::forge::testing::TestDataPath("models/stories260K.expected.json"));
  const nlohmann::json all = nlohmann::json::parse(in);
  nlohmann::json c;
  for (const auto& x : all["models"]["stories260K.gguf"]["cases"]) {
    if (x["id"] == "once_upon_a_time_64") c = x;
  }
  auto ids = [](const nlohmann::json& v) {
    return (v.is_string() ? nlohmann::json::parse(v.get<std::string>()) : v)
        .get<std::vector<int32_t>>();
  };
  const std::vector<int32_t> want = ids(c["ids_after_bos"]);
  auto engine = MakeEngine();
  EngineRequest r;
  r.prompt = "Once upon a time";
  r.params.temperature = 0;
  r.params.max_tokens = static_cast<int32_t>(want.size()) - 4;
  auto h = engine->Submit(r);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->prompt_tokens, 5);
  ASSERT_TRUE(engine->RunUntilIdle().ok());
  Drained d = Drain(*h->events);
  EXPECT_EQ(d.tokens, std::vector<int32_t>(want.begin() + 4, want.end()));
  EXPECT_EQ("Once upon a time" + d.text, c["text"].get<std::string>());
  ASSERT_EQ(d.finals.size(), 1u);
  const RequestEvent& f = d.finals[0];
  EXPECT_EQ(f.finish, FinishReason::kLength);
  EXPECT_TRUE(f.status.ok());
  EXPECT_EQ(f.usage.prompt_tokens, 5);
  EXPECT_EQ(f.usage.completion_tokens, static_cast<int64_t>(d.tokens.size()));
  EXPECT_GT(f.timing.ttft_seconds, 0);
  EXPECT_GT(f.timing.mean_itl_seconds, 0);
  EXPECT_GE(f.timing.max_itl_seconds, f.timing.mean_itl_seconds);
  EXPECT_GE(f.timing.total_seconds, f.timing.ttft_seconds);
  EXPECT_EQ(d.events, static_cast<int>(d.tokens.size()));  // one event per step
  EXPECT_TRUE(h->events->closed());
  EngineStats s = engine->stats();
  EXPECT_EQ(s.requests_finished, 1);
  EXPECT_EQ(s.ttft_count, 1);
  EXPECT_GT(s.tokens_per_second(), 0);
  EXPECT_GT(s.generation_tokens_per_second(), 0);
  EXPECT_EQ(s.generation_tokens, static_cast<int64_t>(d.tokens.size()));
  EXPECT_EQ(s.prompt_tokens, 5);
}

TEST(EngineApiTest, StopStringCutsTheTextAndStops) {
  auto engine = MakeEngine();
  EngineRequest r;
  r.prompt = "Once upon a time";
  r.params.temperature = 0;
  r.params.max_tokens = 60;
  r.params.stop = {"Lily."};
  std::string text;
  FinishReason finish = FinishReason::kNone;
  r.on_event = [&](const RequestEvent& ev) {
    text += ev.text;
    if (ev.finished) finish = ev.finish;
  };
  auto h = engine->Submit(r);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->events, nullptr);
  ASSERT_TRUE(engine->RunUntilIdle().ok());
  EXPECT_EQ(text, ", there was a little girl named ");
  EXPECT_EQ(finish, FinishReason::kStop);
}

TEST(EngineApiTest, LogprobsComeWithEveryToken) {
  auto engine = MakeEngine();
  EngineRequest r = Greedy({1, 400, 30}, 5);
  r.params.logprobs = true;
  r.params.top_logprobs = 3;
  auto h = engine->Submit(r);
  ASSERT_TRUE(engine->RunUntilIdle().ok());
  RequestEvent ev;
  int n = 0;
  while (h->events->Next(&ev)) {
    ASSERT_EQ(ev.logprobs.size(), ev.tokens.size());
    for (size_t i = 0; i < ev.tokens.size(); ++i) {
      EXPECT_EQ(ev.logprobs[i].token, ev.tokens[i]);
      ASSERT_EQ(ev.logprobs[i].top_logprobs.size(), 3u);
      EXPECT_EQ(ev.logprobs[i].top_logprobs[0].token, ev.tokens[i]);  // greedy: the top one
      EXPECT_LE(ev.logprobs[i].logprob, 0.0);
      ++n;
    }
  }
  EXPECT_EQ(n, 5);
}

TEST(EngineApiTest, RefusesRequestsThatCanNeverFit) {
  EngineOptions o = TestOptions(/*blocks=*/4, 8, 64);  // 64 tokens of KV
  o.ctx_size = 100;
  auto engine = MakeEngine(o);
  auto expect_error = [&](EngineRequest r, const std::string& text) {
    auto h = engine->Submit(std::move(r));
    ASSERT_FALSE(h.ok()) << text;
    EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(h.status().message().find(text), std::string::npos) << h.status().message();
  };
  std::vector<int32_t> p60(60, 300);
  expect_error(Greedy(p60, 50), "prompt of 60 tokens + max_tokens=50 exceeds the context of 100");
  expect_error(Greedy(p60, 10), "needs 5 KV blocks of 16 tokens; the pool holds 4");
  expect_error(Greedy(std::vector<int32_t>(64, 300), -1), "does not fit in the KV pool of 4");
  expect_error(Greedy({}, 5), "empty prompt");
  expect_error(Greedy({1, 512}, 5), "prompt token 1 = 512 is outside the vocabulary of 512");
  EngineRequest bad = Greedy({1, 2}, 5);
  bad.params.top_p = 2;
  expect_error(bad, "top_p=2");
  bad = Greedy({1, 2}, 5);
  bad.n = 9;
  expect_error(bad, "n=9: must be in [1, max_num_seqs=8]");
  // What fits exactly is accepted, and max_tokens = -1 runs to the end of the pool.
  EXPECT_TRUE(engine->Submit(Greedy(p60, 4)).ok());
  auto h = engine->Submit(Greedy(std::vector<int32_t>(50, 300), -1));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(engine->RunUntilIdle().ok());
  Drained d = Drain(*h->events);
  EXPECT_EQ(d.tokens.size(), 14u);
  EXPECT_EQ(d.finals[0].finish, FinishReason::kLength);
}

TEST(EngineApiTest, CancelBeforeAdmissionAndTwice) {
  auto engine = MakeEngine();
  auto h = engine->Submit(Greedy({1, 5, 6}, 10));
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(engine->Cancel(h->id));
  EXPECT_TRUE(engine->Cancel(h->id));  // still live until the step sees it
  EXPECT_EQ(engine->stats().waiting, 1);
  ASSERT_TRUE(engine->Step().ok());
  EXPECT_FALSE(engine->Cancel(h->id));
  EXPECT_FALSE(engine->Cancel(12345));
  Drained d = Drain(*h->events);
  EXPECT_TRUE(d.tokens.empty());
  ASSERT_EQ(d.finals.size(), 1u);
  EXPECT_EQ(d.finals[0].status.code(), StatusCode::kCancelled);
  EXPECT_EQ(engine->stats().requests_cancelled, 1);
  EXPECT_FALSE(engine->HasWork());
}

TEST(EngineApiTest, CancelMidRequestOnTheLoopThreadReleasesEverything) {
  EngineOptions o = TestOptions(64, 8, 64);
  o.step_delay = std::chrono::milliseconds(2);
  auto engine = MakeEngine(o);
  engine->Start();
  EngineRequest r = Greedy(std::vector<int32_t>(40, 300), 200);
  r.n = 3;
  auto h = engine->Submit(r);
  ASSERT_TRUE(h.ok());
  RequestEvent ev;
  int tokens = 0;
  while (tokens < 6 && h->events->Next(&ev)) tokens += static_cast<int>(ev.tokens.size());
  EXPECT_GT(engine->stats().kv_blocks_used, 0);
  EXPECT_TRUE(engine->Cancel(h->id));
  Drained d = Drain(*h->events);
  ASSERT_EQ(d.finals.size(), 3u);
  for (const auto& f : d.finals) {
    EXPECT_EQ(f.status.code(), StatusCode::kCancelled);
    EXPECT_LT(f.usage.completion_tokens, 200);
  }
  engine->Stop();
  EngineStats s = engine->stats();
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.kv_blocks_used + s.kv_blocks_cached + s.kv_blocks_free, s.kv_blocks_total);
}

TEST(EngineApiTest, CancelFromTheEventCallback) {
  auto engine = MakeEngine();
  Engine* e = engine.get();
  RequestId id = 0;
  int tokens = 0;
  Status final_status;
  EngineRequest r = Greedy(std::vector<int32_t>(20, 300), 100);
  r.on_event = [&](const RequestEvent& ev) {
    tokens += static_cast<int>(ev.tokens.size());
    if (!ev.tokens.empty() && tokens == 3) {
      EXPECT_TRUE(e->Cancel(id));
    }
    if (ev.finished) final_status = ev.status;
  };
  auto h = engine->Submit(r);
  id = h->id;
  ASSERT_TRUE(engine->RunUntilIdle().ok());
  EXPECT_EQ(tokens, 3);
  EXPECT_EQ(final_status.code(), StatusCode::kCancelled);
  EXPECT_EQ(engine->stats().kv_blocks_used, 0);
}

TEST(EngineApiTest, ShutdownEndsUnfinishedRequests) {
  std::shared_ptr<RequestEvents> q;
  {
    auto engine = MakeEngine();
    auto a = engine->Submit(Greedy({1, 7, 8}, 50));
    ASSERT_TRUE(engine->Step().ok());
    auto b = engine->Submit(Greedy({1, 9}, 50));  // never stepped
    q = a->events;
    std::thread reader([ev = b->events] {
      Drained d = Drain(*ev);
      EXPECT_EQ(d.finals.size(), 1u);
      EXPECT_EQ(d.finals[0].status.code(), StatusCode::kCancelled);
    });
    engine.reset();
    reader.join();
  }
  Drained d = Drain(*q);
  ASSERT_EQ(d.finals.size(), 1u);
  EXPECT_EQ(d.finals[0].status.message(), "engine shut down");
  EXPECT_EQ(d.tokens.size(), 1u);
}

TEST(EngineApiTest, StatsShowQueuesAndBlocks) {
  auto engine = MakeEngine(TestOptions(64, 2, 64));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine->Submit(Greedy({1, 100 + i, 7}, 30)).ok());
  EngineStats s = engine->stats();
  EXPECT_EQ(s.waiting, 3);
  EXPECT_EQ(s.requests_submitted, 3);
  EXPECT_EQ(s.kv_blocks_total, 64);
  EXPECT_EQ(s.kv_blocks_free, 64);
  ASSERT_TRUE(engine->Step().ok());
  s = engine->stats();
  EXPECT_EQ(s.running, 2);  // max_num_seqs
  EXPECT_EQ(s.waiting, 1);
  EXPECT_EQ(s.kv_blocks_used, 2);
  EXPECT_EQ(s.steps, 1);
  ASSERT_TRUE(engine->RunUntilIdle().ok());
  s = engine->stats();
  EXPECT_EQ(s.running + s.waiting, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.requests_finished, 3);
}

TEST(EngineApiTest, WithoutATokenizerTakesIdsAndStopsAtGivenEos) {
  EngineOptions o = TestOptions(64, 8, 64);
  auto plain = MakeEngine(o, /*tokenizer=*/false);
  EngineRequest text;
  text.prompt = "hello";
  EXPECT_EQ(plain->Submit(text).status().code(), StatusCode::kInvalidArgument);
  EngineRequest stop = Greedy({1, 5}, 5);
  stop.params.stop = {"x"};
  EXPECT_EQ(plain->Submit(stop).status().code(), StatusCode::kInvalidArgument);
  // Learn the greedy path, then make its third token the "EOS".
  auto h = plain->Submit(Greedy({1, 400, 30}, 8, /*ignore_eos=*/false));
  ASSERT_TRUE(plain->RunUntilIdle().ok());
  Drained d = Drain(*h->events);
  ASSERT_EQ(d.tokens.size(), 8u);
  EXPECT_TRUE(d.text.empty());
  o.eos_ids = {d.tokens[2]};
  auto with_eos = MakeEngine(o, /*tokenizer=*/false);
  h = with_eos->Submit(Greedy({1, 400, 30}, 8, /*ignore_eos=*/false));
  ASSERT_TRUE(with_eos->RunUntilIdle().ok());
  Drained e = Drain(*h->events);
  EXPECT_EQ(e.tokens, std::vector<int32_t>(d.tokens.begin(), d.tokens.begin() + 3));
  EXPECT_EQ(e.finals[0].finish, FinishReason::kStop);
}

}  // namespace
}  // namespace forge
