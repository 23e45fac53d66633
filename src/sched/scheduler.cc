// Scheduler::Schedule (running first with preemption of the newest, then FCFS admission with
// prefix-cache lookups), step completion, forks, removal and the conservation checks.
#include "sched/scheduler.h"

#include <algorithm>
#include <string>

#include "base/check.h"

namespace forge {
namespace {

int32_t CeilDiv(int64_t a, int64_t b) { return static_cast<int32_t>((a + b - 1) / b); }

}  // namespace

Status SchedulerOptions::Validate() const {
  auto bad = [](const std::string& what) { return InvalidArgumentError("scheduler: " + what); };
  if (block_size <= 0) return bad("block_size=" + std::to_string(block_size) + ": must be > 0");
  if (num_blocks <= 0) return bad("num_blocks=" + std::to_string(num_blocks) + ": must be > 0");
  if (max_num_seqs <= 0) {
    return bad("max_num_seqs=" + std::to_string(max_num_seqs) + ": must be > 0");
  }
  if (max_num_batched_tokens < max_num_seqs) {
    return bad("max_num_batched_tokens=" + std::to_string(max_num_batched_tokens) +
               ": must be >= max_num_seqs=" + std::to_string(max_num_seqs));
  }
  return Status::Ok();
}

Scheduler::Scheduler(const SchedulerOptions& options)
    : options_(options), pool_(options.num_blocks, options.block_size) {
  Status s = options.Validate();
  CHECK(s.ok()) << s.ToString();
}

Sequence* Scheduler::Find(uint64_t id) {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

Sequence* Scheduler::Add(uint64_t id, std::vector<int32_t> prompt, int32_t max_len, SeqOrder order,
                         int32_t slots) {
  CHECK(!seqs_.count(id)) << "sequence " << id << " exists";
  CHECK(!prompt.empty() && static_cast<int32_t>(prompt.size()) <= max_len)
      << "prompt of " << prompt.size() << " tokens, max_len " << max_len;
  CHECK_LE(CeilDiv(max_len, options_.block_size), options_.num_blocks);
  CHECK(slots >= 1 && slots <= options_.max_num_seqs) << "slots " << slots;
  auto seq = std::make_unique<Sequence>();
  seq->id = id;
  seq->order = order;
  seq->num_prompt = static_cast<int32_t>(prompt.size());
  seq->tokens = std::move(prompt);
  seq->max_len = max_len;
  seq->slots = slots;
  Sequence* s = seq.get();
  seqs_[id] = std::move(seq);
  InsertWaiting(s);
  return s;
}

bool Scheduler::NeedsCow(const Sequence& s) const {
  const int32_t bs = options_.block_size;
  if (s.num_computed % bs == 0) return false;  // the next token starts a new block
  const int32_t b = s.blocks[s.num_computed / bs];
  // Sharers that already copied it this step still hold their (deferred) reference.
  const auto moved = std::count(cow_sources_.begin(), cow_sources_.end(), b);
  return pool_.refcount(b) - moved > 1;
}

int32_t Scheduler::TokensThatFit(const Sequence& s, int32_t n) const {
  const int64_t avail = int64_t{pool_.num_available()} - (NeedsCow(s) ? 1 : 0);
  if (avail < 0) return 0;
  const int64_t cap =
      (static_cast<int64_t>(s.blocks.size()) + avail) * options_.block_size - s.num_computed;
  return static_cast<int32_t>(std::clamp<int64_t>(cap, 0, n));
}

void Scheduler::AllocateFor(Sequence* s, int32_t n, StepPlan* plan) {
  const int32_t bs = options_.block_size;
  if (NeedsCow(*s)) {
    const int32_t idx = s->num_computed / bs;
    std::vector<int32_t> fresh;
    Status st = pool_.Allocate(1, &fresh);
    CHECK(st.ok()) << st.ToString();
    plan->copies.push_back({s->blocks[idx], fresh[0]});
    // The source's reference is dropped when planning ends, so a preemption later in this
    // step cannot free it and hand it out as another copy's destination.
    cow_sources_.push_back(s->blocks[idx]);
    s->blocks[idx] = fresh[0];
    ++stats_.cow_copies;
  }
  const int32_t need =
      CeilDiv(int64_t{s->num_computed} + n, bs) - static_cast<int32_t>(s->blocks.size());
  if (need > 0) {
    Status st = pool_.Allocate(need, &s->blocks);
    CHECK(st.ok()) << st.ToString();
  }
  s->scheduled_step = plan->step;
  plan->seqs.push_back({s, s->num_computed, n, s->num_computed + n == s->size()});
  plan->num_tokens += n;
}

void Scheduler::Preempt(Sequence* s, StepPlan* plan) {
  CHECK(s->state == SeqState::kRunning);
  pool_.ReleaseAll(s->blocks);
  s->blocks.clear();
  s->num_computed = 0;
  s->num_hashed = 0;
  running_.erase(std::find(running_.begin(), running_.end(), s));
  running_slots_ -= s->slots;
  InsertWaiting(s);
  ++s->num_preemptions;
  ++stats_.preemptions;
  plan->preempted.push_back(s->id);
}

StepPlan Scheduler::Schedule() {
  StepPlan plan;
  plan.step = ++step_;
  int32_t budget = options_.max_num_batched_tokens;
  // Budget held back for the decodes further down the list, so prefill chunks of older
  // sequences never crowd out a decode token.
  int32_t reserved = 0;
  for (const Sequence* s : running_) reserved += s->remaining() == 1 ? 1 : 0;
  bool preempted = false;
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence* s = running_[i];
    const int32_t rem = s->remaining();
    CHECK_GT(rem, 0) << "running sequence " << s->id << " has nothing to compute";
    if (rem == 1) --reserved;
    const int32_t n = std::min(rem, budget - reserved);
    if (n <= 0) continue;
    int32_t fit = TokensThatFit(*s, n);
    // Out of blocks: preempt the newest running sequences (never yet planned this step: the
    // list is walked oldest first) until this one can run, or it is the newest itself.
    while (fit == 0 && running_.back() != s) {
      Sequence* victim = running_.back();
      if (victim->remaining() == 1) --reserved;
      Preempt(victim, &plan);
      preempted = true;
      fit = TokensThatFit(*s, n);
    }
    if (fit == 0) {
      Preempt(s, &plan);  // it was the last in the list: the loop ends
      preempted = true;
      break;
    }
    AllocateFor(s, fit, &plan);
    budget -= fit;
  }
  // No new admissions in a step that had to preempt: memory is short.
  if (!preempted) AdmitWaiting(&budget, &plan);
  for (int32_t b : cow_sources_) pool_.Release(b);
  cow_sources_.clear();
  return plan;
}

void Scheduler::AdmitWaiting(int32_t* budget, StepPlan* plan) {
  const int32_t bs = options_.block_size;
  while (!waiting_.empty() && *budget > 0) {
    Sequence* s = waiting_.front();
    if (running_slots_ + s->slots > options_.max_num_seqs) break;
    // Cached blocks of the prefix; the last token is always computed (its logits are needed).
    std::vector<int32_t> hit;
    if (options_.enable_prefix_caching) hit = pool_.FindPrefix(s->tokens, (s->size() - 1) / bs);
    int32_t revive = 0;
    for (int32_t id : hit) revive += pool_.refcount(id) == 0 ? 1 : 0;
    const int32_t computed = static_cast<int32_t>(hit.size()) * bs;
    const int32_t n = std::min(s->size() - computed, *budget);
    const int64_t avail = int64_t{pool_.num_available()} - revive;
    const int32_t fit = static_cast<int32_t>(
        std::clamp<int64_t>((static_cast<int64_t>(hit.size()) + avail) * bs - computed, 0, n));
    if (fit == 0) break;  // first come, first served: nobody overtakes the head of the line
    if (options_.whole_prompts && fit < s->size() - computed) break;
    for (int32_t id : hit) pool_.Acquire(id);
    s->blocks = std::move(hit);
    s->num_computed = computed;
    s->num_hashed = static_cast<int32_t>(s->blocks.size());
    if (options_.enable_prefix_caching) {
      stats_.prefix_query_tokens += s->size();
      stats_.prefix_hit_tokens += computed;
    }
    if (!s->admitted_once) s->num_cached_tokens = computed;
    s->admitted_once = true;
    waiting_.pop_front();
    InsertRunning(s);
    AllocateFor(s, fit, plan);
    *budget -= fit;
  }
}

void Scheduler::OnStepDone(const StepPlan& plan) {
  const int32_t bs = options_.block_size;
  for (const ScheduledSeq& item : plan.seqs) {
    Sequence* s = item.seq;
    CHECK(s->state == SeqState::kRunning && s->num_computed == item.start)
        << "sequence " << s->id << " changed since it was planned";
    s->num_computed += item.num_tokens;
    if (!options_.enable_prefix_caching) continue;
    for (; s->num_hashed < s->num_computed / bs; ++s->num_hashed) {
      const int32_t k = s->num_hashed;
      pool_.Register(s->blocks[k], k > 0 ? s->blocks[k - 1] : -1,
                     std::span<const int32_t>(s->tokens.data() + int64_t{k} * bs, bs));
    }
  }
}

void Scheduler::AppendToken(uint64_t id, int32_t token) {
  Sequence* s = Find(id);
  CHECK(s && s->state == SeqState::kRunning) << "AppendToken to sequence " << id;
  CHECK(s->remaining() == 0 && s->size() < s->max_len)
      << "sequence " << id << ": " << s->size() << " tokens, " << s->num_computed
      << " computed, max_len " << s->max_len;
  s->tokens.push_back(token);
}

Sequence* Scheduler::Fork(uint64_t parent_id, uint64_t child_id, SeqOrder order) {
  Sequence* p = Find(parent_id);
  CHECK(p && p->state == SeqState::kRunning && p->remaining() == 0 && p->slots > 1)
      << "Fork of sequence " << parent_id;
  CHECK(!seqs_.count(child_id)) << "sequence " << child_id << " exists";
  auto child = std::make_unique<Sequence>(*p);
  child->id = child_id;
  child->order = order;
  child->slots = 1;
  child->num_preemptions = 0;
  for (int32_t b : child->blocks) pool_.Acquire(b);
  --p->slots;
  Sequence* c = child.get();
  seqs_[child_id] = std::move(child);
  c->state = SeqState::kWaiting;  // InsertRunning sets it
  running_slots_ -= 1;            // InsertRunning adds it back: the parent's slot moved
  InsertRunning(c);
  ++stats_.forks;
  return c;
}

bool Scheduler::Remove(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  Sequence* s = it->second.get();
  if (s->state == SeqState::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), s));
    running_slots_ -= s->slots;
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), s));
  }
  pool_.ReleaseAll(s->blocks);
  seqs_.erase(it);
  return true;
}

void Scheduler::InsertRunning(Sequence* s) {
  s->state = SeqState::kRunning;
  running_slots_ += s->slots;
  auto pos =
      std::upper_bound(running_.begin(), running_.end(), s,
                       [](const Sequence* a, const Sequence* b) { return a->order < b->order; });
  running_.insert(pos, s);
}

void Scheduler::InsertWaiting(Sequence* s) {
  s->state = SeqState::kWaiting;
  auto pos =
      std::upper_bound(waiting_.begin(), waiting_.end(), s,
                       [](const Sequence* a, const Sequence* b) { return a->order < b->order; });
  waiting_.insert(pos, s);
}

void Scheduler::CheckInvariants() const {
  pool_.CheckInvariants();
  const int32_t bs = options_.block_size;
  std::vector<int32_t> refs(pool_.num_blocks(), 0);
  int32_t slots = 0;
  for (const auto& [id, s] : seqs_) {
    for (int32_t b : s->blocks) {
      CHECK(b >= 0 && b < pool_.num_blocks()) << "sequence " << id << " holds block " << b;
      ++refs[b];
    }
    if (s->state == SeqState::kRunning) {
      CHECK_EQ(static_cast<int32_t>(s->blocks.size()), CeilDiv(s->num_computed, bs))
          << "sequence " << id << " block table vs " << s->num_computed << " computed tokens";
      slots += s->slots;
    } else {
      CHECK(s->blocks.empty() && s->num_computed == 0)
          << "waiting sequence " << id << " holds blocks";
    }
  }
  for (int32_t b = 0; b < pool_.num_blocks(); ++b) {
    CHECK_EQ(refs[b], pool_.refcount(b)) << "block " << b << ": references vs refcount";
  }
  CHECK_EQ(slots, running_slots_);
  CHECK_LE(running_slots_, options_.max_num_seqs);
  CHECK_EQ(running_.size() + waiting_.size(), seqs_.size());
  auto by_order = [](const Sequence* a, const Sequence* b) { return a->order < b->order; };
  CHECK(std::is_sorted(running_.begin(), running_.end(), by_order));
  CHECK(std::is_sorted(waiting_.begin(), waiting_.end(), by_order));
}

}  // namespace forge
