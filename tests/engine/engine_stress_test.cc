// Random submit/cancel stress on the engine's loop thread from several threads (thousands of
// operations, forks, shared prefixes, a pool small enough to preempt): every request ends exactly
// once per sample, block counts are conserved at every step (check_invariants) and in every
// snapshot, and no block stays used at the end.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "engine_test_util.h"

namespace forge {
namespace {

using testing::Stories260K;
using testing::TestOptions;

TEST(EngineStressTest, RandomSubmitAndCancelFromManyThreads) {
  EngineOptions o = TestOptions(/*blocks=*/12, /*max_seqs=*/8, /*budget=*/48);
  auto& st = Stories260K();
  auto created = Engine::Create(*st.model, st.tokenizer.get(), o);
  ASSERT_TRUE(created.ok());
  Engine& engine = **created;
  engine.Start();

  constexpr int kThreads = 4, kOps = 500;
  std::mutex mu;
  std::vector<RequestId> ids;
  std::vector<std::pair<std::shared_ptr<RequestEvents>, int32_t>> queues;  // with n
  std::map<RequestId, int32_t> expected_finals;                            // callback requests: n
  std::map<RequestId, int32_t> callback_finals;
  std::atomic<int64_t> submitted{0}, refused{0}, cancels{0};
  std::atomic<bool> bad_event{false};

  auto worker = [&](int t) {
    std::mt19937_64 rng(1000 + t);
    for (int op = 0; op < kOps; ++op) {
      const int kind = static_cast<int>(rng() % 100);
      if (kind < 55) {
        EngineRequest r;
        const int32_t len = 1 + static_cast<int32_t>(rng() % 48);
        r.prompt_ids.resize(len);
        const int32_t salt = static_cast<int32_t>(rng() % 4);  // shared prefixes
        for (int32_t i = 0; i < len; ++i) {
          r.prompt_ids[i] = i < 20 ? 3 + (salt * 37 + i * 11) % 500 : 3 + int32_t(rng() % 500);
        }
        r.params.max_tokens = 1 + static_cast<int32_t>(rng() % 24);
        r.params.temperature = rng() % 2 ? 0.0 : 0.8;
        if (rng() % 4 == 0) r.params.seed = rng();
        if (rng() % 5 == 0) r.params.stop = {"the", "."};
        r.params.logprobs = rng() % 6 == 0;
        r.n = 1 + static_cast<int32_t>(rng() % 3);
        if (rng() % 40 == 0) r.params.max_tokens = 500;  // never fits: refused
        const bool callback = rng() % 2;
        std::shared_ptr<std::atomic<RequestId>> my_id;
        if (callback) {
          my_id = std::make_shared<std::atomic<RequestId>>(0);
          r.on_event = [&, my_id](const RequestEvent& ev) {
            if (!ev.finished) return;
            std::lock_guard<std::mutex> lock(mu);
            if (ev.request_id == 0) bad_event = true;
            ++callback_finals[ev.request_id];
          };
        }
        const int32_t n = r.n;
        auto h = engine.Submit(std::move(r));
        if (!h.ok()) {
          ++refused;
          continue;
        }
        ++submitted;
        std::lock_guard<std::mutex> lock(mu);
        ids.push_back(h->id);
        if (callback) {
          expected_finals[h->id] = n;
        } else {
          queues.push_back({h->events, n});
        }
      } else if (kind < 90) {
        RequestId victim = 0;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!ids.empty()) victim = ids[rng() % ids.size()];
        }
        if (victim && engine.Cancel(victim)) ++cancels;
      } else {
        EngineStats s = engine.stats();
        if (s.kv_blocks_used + s.kv_blocks_cached + s.kv_blocks_free != s.kv_blocks_total) {
          bad_event = true;
        }
      }
      if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 400));
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();

  // Every queued request ends with exactly n final events, then its queue closes.
  for (auto& [q, n] : queues) {
    RequestEvent ev;
    int finals = 0;
    std::map<int32_t, int> per_sample;
    while (q->Next(&ev)) {
      if (ev.finished) {
        ++finals;
        ++per_sample[ev.sample];
      }
    }
    EXPECT_EQ(finals, n);
    for (auto& [sample, c] : per_sample) EXPECT_EQ(c, 1) << "sample " << sample;
  }
  // Callback requests: wait (bounded) for their final events.
  for (int i = 0; i < 6000; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (callback_finals == expected_finals) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(callback_finals, expected_finals);
  }
  engine.Stop();
  EngineStats s = engine.stats();
  EXPECT_FALSE(bad_event);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.kv_blocks_used + s.kv_blocks_cached + s.kv_blocks_free, s.kv_blocks_total);
  EXPECT_EQ(s.requests_finished, submitted.load());
  EXPECT_EQ(s.requests_submitted, submitted.load());
  EXPECT_GT(refused.load(), 0);
  EXPECT_GT(cancels.load(), 100);
  EXPECT_GT(s.requests_cancelled, 0);
  EXPECT_GT(s.preemptions, 0);
  EXPECT_GT(s.prefix_cache_hits, 0);
  EXPECT_GT(s.cow_copies, 0);
  EXPECT_GE(submitted.load() + refused.load() + cancels.load(), 1000);
}

}  // namespace
}  // namespace forge
