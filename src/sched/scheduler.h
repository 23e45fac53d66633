// Scheduler: plans each step on the CPU: running sequences oldest first (a decode token or a prompt
// chunk), then waiting ones first come first served, within a token budget and a sequence cap. Owns
// the BlockPool: prefix-cache hits, copy-on-write forks, preempting the newest when blocks run out.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "sched/block_pool.h"
#include "sched/sequence.h"
#include "sched/step_plan.h"

namespace forge {

struct SchedulerOptions {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  int32_t max_num_seqs = 64;             // running sequences (forks count from admission)
  int32_t max_num_batched_tokens = 512;  // tokens per step; >= max_num_seqs
  bool enable_prefix_caching = true;
  // Prompts are never chunked: a waiting sequence is admitted only when its whole prompt fits in
  // the step's remaining tokens (an encoder's attention needs every token at once). Prompts must
  // then be at most max_num_batched_tokens long.
  bool whole_prompts = false;

  // Names the bad field: "max_num_batched_tokens=8: must be >= max_num_seqs=64".
  Status Validate() const;
};

struct SchedulerStats {
  int64_t preemptions = 0;
  // Prefix caching in tokens: every admission (first or after a preemption) looks up the
  // sequence's tokens; hits are the tokens whose K/V came from the cache.
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t cow_copies = 0;
  int64_t forks = 0;
};

class Scheduler {
 public:
  // Requires: options.Validate().ok().
  explicit Scheduler(const SchedulerOptions& options);

  const SchedulerOptions& options() const { return options_; }
  const BlockPool& pool() const { return pool_; }
  const SchedulerStats& stats() const { return stats_; }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  bool empty() const { return seqs_.empty(); }
  // Null when unknown.
  Sequence* Find(uint64_t id);

  // Adds a waiting sequence of `prompt` that may grow to max_len tokens and will fork into
  // `slots` samples. Requires: a new id, a non-empty prompt, prompt.size() <= max_len,
  // ceil(max_len / block_size) <= num_blocks, 1 <= slots <= max_num_seqs.
  Sequence* Add(uint64_t id, std::vector<int32_t> prompt, int32_t max_len, SeqOrder order,
                int32_t slots = 1);

  // Plans the next step (empty when nothing can run). Preempts when blocks run out.
  StepPlan Schedule();
  // After the plan's forward: the planned tokens are computed; newly full blocks are registered
  // in the prefix cache. Requires: the last Schedule()'s plan, none of its sequences removed.
  void OnStepDone(const StepPlan& plan);

  // Appends a generated token. Requires: running, every token computed, size() < max_len.
  void AppendToken(uint64_t id, int32_t token);
  // A running copy of `parent` under child_id that shares all its blocks (a partly filled last
  // block is copied on the first write). The parent gives the child one of its slots.
  // Requires: parent running with every token computed and slots > 1; a new child_id.
  Sequence* Fork(uint64_t parent, uint64_t child_id, SeqOrder order);
  // Drops a sequence wherever it is, releasing its blocks. False for an unknown id.
  bool Remove(uint64_t id);

  // CHECK-fails unless the pool is consistent and every block's refcount equals the number of
  // block tables holding it (no leaked or doubly released block), and the queues are in order.
  void CheckInvariants() const;

 private:
  bool NeedsCow(const Sequence& s) const;
  // The most of the next n tokens whose blocks can be had now (copy-on-write included).
  int32_t TokensThatFit(const Sequence& s, int32_t n) const;
  void AllocateFor(Sequence* s, int32_t n, StepPlan* plan);
  void Preempt(Sequence* s, StepPlan* plan);
  // Admits waiting sequences while budget, slots and blocks allow, first come first served.
  void AdmitWaiting(int32_t* budget, StepPlan* plan);
  void InsertRunning(Sequence* s);
  void InsertWaiting(Sequence* s);

  SchedulerOptions options_;
  BlockPool pool_;
  SchedulerStats stats_;
  std::unordered_map<uint64_t, std::unique_ptr<Sequence>> seqs_;
  std::vector<Sequence*> running_;  // by order, oldest first
  std::deque<Sequence*> waiting_;   // by order, oldest first
  int32_t running_slots_ = 0;
  uint64_t step_ = 0;
  std::vector<int32_t> cow_sources_;  // copied this step; released when planning ends
};

}  // namespace forge
