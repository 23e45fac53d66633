// EngineOptions (context, KV pool, batch limits, debug hooks) and EngineStats (a snapshot for
// metrics: queues, KV blocks, prefix-cache hits, preemptions, throughput, latency sums).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/request.h"

namespace forge {

// A logits row the engine is about to sample from (debug hook).
struct LogitsRow {
  RequestId request_id = 0;
  int32_t sample = 0;             // the sequence's sample index (a not yet forked request: 0)
  int64_t position = 0;           // position of the token being chosen
  std::span<const float> logits;  // [n_vocab], valid during the call only
};

struct EngineOptions {
  int64_t ctx_size = 0;  // tokens per sequence; 0: the model's training context
  int32_t block_size = 16;
  // KV blocks in the pool; 0: enough for max_num_seqs full contexts, capped by kv_cache_bytes.
  int32_t num_kv_blocks = 0;
  // 0: no cap, except on a backend that reports its memory (a GPU), where the cap is planned
  // from gpu_memory_fraction.
  int64_t kv_cache_bytes = 0;
  // Share of the device's total memory this process may hold in all (weights, workspace, KV
  // cache, the runtime's own), in (0, 1]. With num_kv_blocks == 0 and kv_cache_bytes == 0 on a
  // backend that reports its memory, the workspace is reserved first and the KV pool gets
  // free - total * (1 - fraction).
  double gpu_memory_fraction = 0.9;
  int32_t max_num_seqs = 64;
  int32_t max_num_batched_tokens = 512;  // >= max_num_seqs
  bool enable_prefix_caching = true;
  // End-of-generation ids when the engine has no tokenizer (else the vocab's EOG tokens).
  std::vector<int32_t> eos_ids;

  // Debug: sleep this long after every step that ran, so tests can act mid-request.
  std::chrono::microseconds step_delay{0};
  // Check block conservation and refcounts after every step (CHECK-fails on a leak).
#ifdef NDEBUG
  bool check_invariants = false;
#else
  bool check_invariants = true;
#endif
  // Debug: called on the step thread with every logits row before it is sampled.
  std::function<void(const LogitsRow&)> logits_hook;
  // Seeds for requests without one come from this (0: std::random_device).
  uint64_t seed_source = 0;
};

// One request in flight (submitted, not finished) as of the last step: Engine::InFlight.
struct InFlightRequest {
  enum class State {
    kWaiting,    // not scheduled yet
    kPrefill,    // its prompt is being computed
    kDecoding,   // generating
    kPreempted,  // preempted, waiting to run again
  };
  RequestId id = 0;
  State state = State::kWaiting;  // of its first unfinished sample
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;  // all samples so far
  int32_t samples = 1;
  int32_t preemptions = 0;  // of its samples, times preempted so far
  std::chrono::steady_clock::time_point submitted;
};

struct EngineStats {
  int64_t waiting = 0;  // submitted and not running (new, or preempted and waiting again)
  int64_t running = 0;  // sequences admitted (each sample of a forked request counts)
  // Of the waiting sequences, those preempted (waiting to run again).
  int64_t preempted = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;    // referenced by a sequence
  int32_t kv_blocks_cached = 0;  // unreferenced, kept for prefix hits, evictable
  int32_t kv_blocks_free = 0;
  // Prefix cache, in tokens: looked up at every admission; hits were not recomputed.
  int64_t prefix_cache_queries = 0;
  int64_t prefix_cache_hits = 0;
  int64_t preemptions = 0;
  int64_t cow_copies = 0;
  int64_t steps = 0;
  int64_t prompt_tokens = 0;      // computed prompt tokens (recomputation after preemption too)
  int64_t generation_tokens = 0;  // sampled tokens
  double busy_seconds = 0;        // time inside steps that ran something
  // Device time inside the steps' forwards and sampling (Backend::BusySeconds: timed on the
  // device by a GPU backend, host wall time on the CPU), and its share of the wall time of the
  // last 10 s (BusyWindow; since the engine's creation when younger), in [0, 1].
  double device_busy_seconds = 0;
  double device_busy_ratio = 0;
  // When these counters were last updated (the end of a step), in seconds since the engine
  // started: deltas of the counters over deltas of this are rates over exactly the same span.
  double stats_time_seconds = 0;
  int64_t requests_submitted = 0;
  int64_t requests_finished = 0;  // every sample ended (stopped, length, cancelled or failed)
  int64_t requests_cancelled = 0;
  // Latency sums over finished samples (mean = sum / count).
  double ttft_seconds_sum = 0;
  int64_t ttft_count = 0;
  double itl_seconds_sum = 0;
  int64_t itl_count = 0;

  double prefix_cache_hit_rate() const {
    return prefix_cache_queries ? double(prefix_cache_hits) / prefix_cache_queries : 0.0;
  }
  // Throughput while busy.
  double tokens_per_second() const {
    return busy_seconds > 0 ? (prompt_tokens + generation_tokens) / busy_seconds : 0.0;
  }
  double generation_tokens_per_second() const {
    return busy_seconds > 0 ? generation_tokens / busy_seconds : 0.0;
  }
};

}  // namespace forge
