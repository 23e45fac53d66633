// StepPlan: what one engine step runs: for each scheduled sequence the span of its tokens to
// compute (prefill chunks and single decode tokens together), and the block copies to do first.
#pragma once

#include <cstdint>
#include <vector>

namespace forge {

struct Sequence;

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int32_t start = 0;       // first position computed (the sequence's num_computed before)
  int32_t num_tokens = 0;  // tokens [start, start + num_tokens) of seq->tokens
  // True when the span reaches the sequence's last token: its logits choose the next token.
  bool wants_logits = false;
};

// Copy-on-write: block dst gets block src's K/V in every layer, before the forward. Within a
// plan every dst is distinct and no dst is any copy's src, so copies may run in any order or all
// at once (one batched kernel).
struct BlockCopy {
  int32_t src = -1;
  int32_t dst = -1;
};

struct StepPlan {
  uint64_t step = 0;               // 1, 2, ... (the scheduler's step counter)
  std::vector<ScheduledSeq> seqs;  // batch order
  std::vector<BlockCopy> copies;
  std::vector<uint64_t> preempted;  // sequences preempted while planning this step
  int32_t num_tokens = 0;           // sum of num_tokens

  bool empty() const { return seqs.empty(); }
};

}  // namespace forge
