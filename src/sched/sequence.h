// Sequence: one stream of tokens the scheduler runs (a request, or one sample of a request that
// forked): its tokens, how many have K/V in the cache, its block table and its place in line.
#pragma once

#include <cstdint>
#include <vector>

namespace forge {

// First come, first served: by arrival, then by sample index within a forked request.
struct SeqOrder {
  uint64_t arrival = 0;
  int32_t sample = 0;
  friend bool operator<(const SeqOrder& a, const SeqOrder& b) {
    return a.arrival != b.arrival ? a.arrival < b.arrival : a.sample < b.sample;
  }
};

enum class SeqState { kWaiting, kRunning };

struct Sequence {
  uint64_t id = 0;
  SeqOrder order;
  SeqState state = SeqState::kWaiting;
  std::vector<int32_t> tokens;  // prompt + generated
  int32_t num_prompt = 0;
  // Tokens whose K/V are in `blocks` (positions [0, num_computed)). Between steps
  // blocks.size() == ceil(num_computed / block_size).
  int32_t num_computed = 0;
  // The most tokens this sequence may reach (prompt + max new tokens); admission checked it fits.
  int32_t max_len = 0;
  std::vector<int32_t> blocks;  // block table
  // Leading blocks already offered to the prefix cache (registered or found there).
  int32_t num_hashed = 0;
  // Running-sequence slots this sequence stands for: n for a request that will fork into n
  // samples (until it forks), else 1. Counted against max_num_seqs.
  int32_t slots = 1;
  int32_t num_preemptions = 0;
  int32_t num_cached_tokens = 0;  // prompt tokens found in the prefix cache at first admission
  bool admitted_once = false;
  uint64_t scheduled_step = 0;  // the last step that scheduled it (0: never)

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  int32_t remaining() const { return size() - num_computed; }
};

}  // namespace forge
