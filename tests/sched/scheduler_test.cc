// Scheduler without a model: token budgets and chunked prefill, decodes before prefills, FCFS
// admission, prefix-cache hits, preemption of the newest sequence, forks with copy-on-write, and
// a random simulation (forks, removals, preemptions) checking block conservation every step.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace forge {
namespace {

constexpr int32_t kBs = 4;

SchedulerOptions Opts(int32_t blocks, int32_t budget, int32_t max_seqs = 8) {
  SchedulerOptions o;
  o.num_blocks = blocks;
  o.block_size = kBs;
  o.max_num_batched_tokens = budget;
  o.max_num_seqs = max_seqs;
  return o;
}

std::vector<int32_t> Prompt(int32_t n, int32_t salt) {
  std::vector<int32_t> v(n);
  for (int32_t i = 0; i < n; ++i) v[i] = (salt * 31 + i * 7) % 97;
  return v;
}

// Drives the scheduler like the engine: every sequence reaching its last token gets a token, and
// is removed once it generated `gen[id]` tokens.
struct Sim {
  explicit Sim(const SchedulerOptions& o) : sched(o) {}
  Scheduler sched;
  std::map<uint64_t, int32_t> gen, produced;

  uint64_t next_child = 1000000;

  void Add(uint64_t id, int32_t prompt_len, int32_t n_gen, uint64_t arrival, int32_t salt = 0,
           int32_t slots = 1) {
    sched.Add(id, Prompt(prompt_len, salt ? salt : int32_t(id)), prompt_len + n_gen, {arrival, 0},
              slots);
    gen[id] = n_gen;
  }
  // What a step ran, captured before finished sequences are removed.
  struct Ran {
    std::vector<std::pair<uint64_t, int32_t>> seqs;  // id, tokens, in batch order
    std::vector<int32_t> starts;
    std::vector<uint64_t> preempted;
  };
  Ran Step() {
    StepPlan plan = sched.Schedule();
    sched.OnStepDone(plan);
    Ran ran;
    for (const ScheduledSeq& item : plan.seqs) {
      ran.seqs.push_back({item.seq->id, item.num_tokens});
      ran.starts.push_back(item.start);
    }
    ran.preempted = plan.preempted;
    // Copies are independent: distinct destinations, none of them a source.
    std::set<int32_t> srcs, dsts;
    for (const BlockCopy& c : plan.copies) srcs.insert(c.src);
    for (const BlockCopy& c : plan.copies) {
      EXPECT_TRUE(dsts.insert(c.dst).second) << "block " << c.dst << " copied into twice";
      EXPECT_FALSE(srcs.count(c.dst)) << "block " << c.dst << " is a source and a destination";
    }
    for (const ScheduledSeq& item : plan.seqs) {
      if (!item.wants_logits) continue;
      std::vector<uint64_t> ids = {item.seq->id};
      const SeqOrder order = item.seq->order;
      for (int32_t k = 1; item.seq->slots > 1; ++k) {  // the first token: fork the samples
        ids.push_back(next_child++);
        sched.Fork(item.seq->id, ids.back(), {order.arrival, k});
        gen[ids.back()] = gen[item.seq->id];
      }
      for (uint64_t id : ids) {
        if (++produced[id] == gen[id]) {
          sched.Remove(id);
        } else {
          sched.AppendToken(id, static_cast<int32_t>((id * 13 + sched.Find(id)->size()) % 97));
        }
      }
    }
    sched.CheckInvariants();
    return ran;
  }
  static int32_t Tokens(const Ran& r, uint64_t id) {
    for (const auto& [seq, n] : r.seqs) {
      if (seq == id) return n;
    }
    return 0;
  }
};

TEST(SchedulerTest, OptionsAreValidated) {
  SchedulerOptions o = Opts(8, 4, 8);
  Status s = o.Validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_num_batched_tokens=4: must be >= max_num_seqs=8"),
            std::string::npos);
  EXPECT_FALSE(Opts(0, 8).Validate().ok());
}

TEST(SchedulerTest, LongPromptIsChunkedWithinTheBudget) {
  Sim sim(Opts(64, 8));
  sim.Add(1, 21, 2, 1);
  std::vector<int32_t> chunks;
  for (int i = 0; i < 5; ++i) chunks.push_back(sim.Tokens(sim.Step(), 1));
  EXPECT_EQ(chunks, (std::vector<int32_t>{8, 8, 5, 1, 0}));
  EXPECT_TRUE(sim.sched.empty());
  EXPECT_EQ(sim.sched.pool().num_used(), 0);
}

TEST(SchedulerTest, DecodesFirstThenWaitingFirstComeFirstServed) {
  Sim sim(Opts(64, 8));
  sim.Add(1, 3, 5, 1);
  Sim::Ran p = sim.Step();
  EXPECT_EQ(sim.Tokens(p, 1), 3);
  sim.Add(2, 20, 2, 2);
  sim.Add(3, 2, 2, 3);
  p = sim.Step();
  // 1 decodes; 2 takes the rest of the budget; 3 waits behind it (no overtaking).
  EXPECT_EQ(sim.Tokens(p, 1), 1);
  EXPECT_EQ(sim.Tokens(p, 2), 7);
  EXPECT_EQ(sim.Tokens(p, 3), 0);
  EXPECT_EQ(p.seqs[0].first, 1u);
  p = sim.Step();
  EXPECT_EQ(sim.Tokens(p, 1), 1);
  EXPECT_EQ(sim.Tokens(p, 2), 7);
  p = sim.Step();  // 2 finishes its prompt (6 left); 3 fits behind it
  EXPECT_EQ(sim.Tokens(p, 2), 6);
  EXPECT_EQ(sim.Tokens(p, 3), 1);
}

TEST(SchedulerTest, PrefixCacheHitSkipsCachedBlocks) {
  Sim sim(Opts(64, 64));
  sim.Add(1, 14, 1, 1, /*salt=*/5);
  sim.Step();  // computes 14 prompt tokens, generates its one token and finishes
  EXPECT_TRUE(sim.sched.empty());
  EXPECT_EQ(sim.sched.pool().num_cached(), 3);  // 3 full blocks of 4 stay cached
  sim.Add(2, 18, 1, 2, /*salt=*/5);             // the same first 14 tokens, then 4 more
  Sim::Ran p = sim.Step();
  EXPECT_EQ(p.starts[0], 12);
  EXPECT_EQ(sim.Tokens(p, 2), 6);
  EXPECT_EQ(sim.sched.stats().prefix_hit_tokens, 12);
  EXPECT_EQ(sim.sched.stats().prefix_query_tokens, 14 + 18);
  // A prompt that is all cached still computes its last block (its logits are needed).
  sim.Add(3, 12, 1, 3, /*salt=*/5);
  p = sim.Step();
  EXPECT_EQ(p.starts[0], 8);
  EXPECT_EQ(sim.Tokens(p, 3), 4);
}

TEST(SchedulerTest, PreemptsTheNewestAndResumesIt) {
  // 6 blocks of 4: two sequences of 8 prompt + 8 generated (4 blocks each) cannot both finish.
  Sim sim(Opts(6, 16));
  sim.Add(1, 8, 8, 1);
  sim.Add(2, 8, 8, 2);
  int steps = 0;
  bool saw_preempt = false;
  while (!sim.sched.empty() && steps < 100) {
    Sim::Ran p = sim.Step();
    for (uint64_t id : p.preempted) {
      EXPECT_EQ(id, 2u) << "the newest is preempted";
      saw_preempt = true;
    }
    ++steps;
  }
  EXPECT_TRUE(sim.sched.empty());
  EXPECT_TRUE(saw_preempt);
  EXPECT_GT(sim.sched.stats().preemptions, 0);
  EXPECT_EQ(sim.produced[1], 8);
  EXPECT_EQ(sim.produced[2], 8);
  EXPECT_EQ(sim.sched.pool().num_used(), 0);
}

TEST(SchedulerTest, ForkSharesBlocksAndCopiesThePartialOneOnWrite) {
  Scheduler sched(Opts(16, 16));
  sched.Add(1, Prompt(6, 1), 12, {1, 0}, /*slots=*/3);
  StepPlan p = sched.Schedule();
  sched.OnStepDone(p);
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_TRUE(p.seqs[0].wants_logits);
  sched.Fork(1, 2, {1, 1});
  sched.Fork(1, 3, {1, 2});
  for (uint64_t id : {1, 2, 3}) sched.AppendToken(id, int32_t(id));
  EXPECT_EQ(sched.pool().num_used(), 2);
  EXPECT_EQ(sched.pool().refcount(sched.Find(1)->blocks[1]), 3);
  sched.CheckInvariants();
  p = sched.Schedule();
  // Block 1 holds positions 4..5 and gets position 6 written: two of three copy it first.
  ASSERT_EQ(p.seqs.size(), 3u);
  ASSERT_EQ(p.copies.size(), 2u);
  EXPECT_EQ(sched.stats().cow_copies, 2);
  const int32_t shared = sched.Find(3)->blocks[1];
  EXPECT_EQ(p.copies[0].src, shared);
  EXPECT_EQ(p.copies[1].src, shared);
  EXPECT_EQ(sched.pool().refcount(shared), 1);
  // Copies are independent: distinct destinations, none of them a source.
  EXPECT_NE(p.copies[0].dst, p.copies[1].dst);
  for (const BlockCopy& c : p.copies) EXPECT_NE(c.dst, shared);
  EXPECT_EQ(sched.pool().refcount(sched.Find(1)->blocks[0]), 3);  // full block still shared
  sched.OnStepDone(p);
  sched.CheckInvariants();
  for (uint64_t id : {1, 2, 3}) sched.Remove(id);
  sched.CheckInvariants();
  EXPECT_EQ(sched.pool().num_used(), 0);
}

TEST(SchedulerTest, RandomSimulationConservesBlocks) {
  std::mt19937_64 rng(7);
  for (bool caching : {true, false}) {
    SchedulerOptions o = Opts(24, 16, 6);
    o.enable_prefix_caching = caching;
    Sim sim(o);
    uint64_t next = 1;
    for (int step = 0; step < 400; ++step) {
      if (rng() % 3 == 0) {
        const int32_t len = 1 + int32_t(rng() % 30), n_gen = 1 + int32_t(rng() % 40);
        // Shared prefixes: a few salts only.
        sim.Add(next, len, std::min(n_gen, 24 * kBs - len), next, 1 + int32_t(rng() % 3),
                rng() % 4 == 0 ? 3 : 1);
        ++next;
      }
      if (rng() % 7 == 0 && next > 1) {
        const uint64_t victim = 1 + rng() % (next - 1);
        sim.sched.Remove(victim);
      }
      sim.Step();
    }
    while (!sim.sched.empty()) sim.Step();
    EXPECT_EQ(sim.sched.pool().num_used(), 0);
    EXPECT_GT(sim.sched.stats().preemptions, 0);
    EXPECT_GT(sim.sched.stats().forks, 0);
    EXPECT_GT(sim.sched.stats().cow_copies, 0);
    if (caching) {
      EXPECT_GT(sim.sched.stats().prefix_hit_tokens, 0);
    }
  }
}

}  // namespace
}  // namespace forge
