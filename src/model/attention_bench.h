// The attention op alone on a backend, against DESIGN.md's floors: decode attention as K and V
// bytes read per second, prefill attention as FLOP/s (4·B·H·S²·D, halved when causal). Each
// figure is the median of timed trials; decode K/V pools are rotated so that the bytes a round
// reads exceed the L2 cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace forge {

struct AttentionBenchCase {
  // false: decode, one query per sequence over seq_len keys; true: prefill, seq_len queries per
  // sequence over its seq_len keys, causal.
  bool prefill = false;
  int64_t n_seqs = 1;
  int64_t seq_len = 1;  // keys per sequence
  int64_t n_heads = 32;
  int64_t n_kv_heads = 8;
  int64_t head_dim = 128;
};

// The shapes of the decode/prefill attention benchmarks: decode 64 x 4096, 1 x 32768, and one
// stream at a served prompt's context (1 x 512, 1 x 2048: latency-bound, few blocks); prefill
// 2 x 8192 (causal) with 8 and 32 KV heads; 32 query heads of dim 128 throughout.
std::vector<AttentionBenchCase> DefaultAttentionBenchCases();
// "decode 64 x 4096, 32/8 heads, d128" and the like.
std::string AttentionBenchCaseName(const AttentionBenchCase& c);

struct AttentionBenchOptions {
  std::vector<AttentionBenchCase> cases = DefaultAttentionBenchCases();
  DType dtype = DType::kBF16;  // of the K/V cache and the output
  DType q_type = DType::kF32;  // of q (the model passes F32)
  int64_t block_size = 16;     // KV cache block size (tokens)
  int trials = 10;             // timed trials; the median is reported
  int calls_per_trial = 20;    // at least this many calls per trial
  int64_t rotate_bytes = 0;    // decode: K/V copies are cycled until a round reads this many
  uint64_t seed = 1;
};

struct AttentionBenchRow {
  AttentionBenchCase c;
  double seconds = 0;   // one call (median over the trials)
  double kv_bytes = 0;  // K and V bytes in the cache per call (decode: the floor's bytes)
  double flops = 0;     // 4·B·H·S²·D / 2 for prefill (causal); 0 for decode
  int copies = 1;       // K/V copies rotated through
  bool graphs = false;  // timed as replays of a recorded graph of the calls
};

// Runs every case of o on the backend (inputs random, block tables scattered over the pool).
StatusOr<std::vector<AttentionBenchRow>> RunAttentionBench(Backend& backend,
                                                           const AttentionBenchOptions& o);

}  // namespace forge
