// The cross-backend op harness's tables (DESIGN.md, Testing): for each Backend op but Sample, the
// shapes and layouts it is checked on. A case names no backend, dtype or kernel: op_runner.h runs
// each case on every backend, activation dtype and variant that takes it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/rope/rope.h"
#include "backend/cpu/route/route.h"
#include "backend/cpu/swiglu/swiglu.h"
#include "quant/type_table.h"

namespace forge::testing {

struct EmbeddingCase {
  GgmlType type = GgmlType::kF32;  // the table's stored format
  int64_t rows = 0, dim = 0;       // the table [rows, dim]
  std::vector<int32_t> ids;        // [n_tokens], vocabulary ids
  int64_t row_offset = 0;          // a slice of the vocabulary: the first row's id
  int64_t n_vocab = 0;             // 0: the table is the whole vocabulary
  float scale = 1.0f;              // rows times this (Gemma's sqrt(n_embd))
};

// RmsNorm and AddRmsNorm: rows of dim elements.
struct NormCase {
  int64_t rows = 0, dim = 0;
};

// LayerNorm: rows of dim elements; the residual's delta added first or not, a bias or not, out
// in place of x or apart, the row also cast to the activation dtype (out_cast) or not; x's values
// shifted by `shift` (a mean far from 0); one row added to every row (add_row) or not.
struct LayerNormCase {
  int64_t rows = 0, dim = 0;
  bool delta = false, bias = false, in_place = false, cast = false;
  float shift = 0.0f;
  bool add_row = false;
};

// Pool: a ragged batch of sequences of these lengths (0: empty) over rows of dim elements; each
// case runs every pooling type, normalized and not.
struct PoolCase {
  std::vector<int32_t> lens;
  int64_t dim = 0;
};

struct RopeCase {
  RopeStyle style = RopeStyle::kAdjacent;
  int64_t n_tokens = 0, n_heads = 0, head_dim = 0;
  int64_t rope_dims = 0;  // 0: head_dim
  int64_t token_pad = 0;  // elements between one token's heads and the next token's
  float theta = 10000.0f, freq_scale = 1.0f;
  bool freq_factors = false;  // Llama 3.1's per-frequency divisors
};

struct KvWriteCase {
  int64_t n_tokens = 0, n_kv_heads = 0, head_dim = 0;
  int64_t num_slots = 0;  // the cache's blocks x block size; not a multiple of 7
  int64_t src_pad = 0;    // k and v rows inside wider rows (as in a [T, q | k | v] buffer)
  bool skip = false;      // some tokens have slot -1 (not written)
};

struct RopeKvWriteCase {
  RopeStyle style = RopeStyle::kAdjacent;
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0, n_tokens = 0;
  int64_t rope_dims = 0;  // 0: head_dim
};

struct MatmulCase {
  enum class Weights { kRandomBlocks, kQuantized, kOracle };
  GgmlType type = GgmlType::kF32;  // the stored weight's format
  int64_t n = 0, k = 0;            // out features, in features (kOracle: from the file)
  std::vector<int64_t> ms;         // activation row counts
  // kRandomBlocks: random bytes with finite scales (block formats only); kQuantized: normal values
  // through QuantizeRow; kOracle: llama.cpp's blk.0.ffn_down.weight of ../shared/testdata/quant.
  Weights weights = Weights::kQuantized;
  bool bias = true;
  int64_t first_row = 0;           // the weight is a view from this row of a larger matrix
  int64_t x_pad = 0, out_pad = 0;  // x_stride = k + x_pad, out_stride = n + out_pad
  bool outliers = false;           // one activation in 61 scaled by 30 (int8 block scales)
};

struct AttentionCase {
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  std::vector<std::pair<int, int>> seqs;  // per sequence: (cached keys, new queries)
  struct Options {
    bool q_f32 = false;    // q in F32 (as the model passes it) rather than the cache's type
    int64_t n_single = 0;  // leading one-query sequences known to the host
    int64_t block_size = 16;
    bool causal = true;
    int64_t q_pad = 0;  // q rows inside wider rows: q_stride = n_heads * head_dim + q_pad
    float softcap = 0.0f;  // soft-capped scores (Gemma 2)
    int64_t window = 0;    // a sliding window of keys
  };
  Options options = {};
};

struct SwigluCase {
  int64_t n_tokens = 0, dim = 0;
  bool stacked = false;  // gate and up rows interleaved (the stacked gate|up matmul's output)
  GluAct act = GluAct::kSilu;
  bool gated = true;  // false: out = act(gate), no up (stacked: gate rows of stride 2 dim)
};

// Route: a router's choice over n_expert experts for n_tokens tokens.
struct RouteCase {
  int64_t n_tokens = 0, n_expert = 0, k = 0;
  ExpertGating gating = ExpertGating::kSoftmax;
  bool normalize = false, bias = false;
  float scale = 1.0f;
};

// ExpertSum: k expert rows of n per token, with a shared expert (and its gate) or not.
struct ExpertSumCase {
  int64_t n_tokens = 0, k = 0, n = 0;
  bool shared = false, shared_gate = false;
};

// Soft-capping in place: n F32 values, at `cap`.
struct SoftCapCase {
  int64_t n = 0;
  float cap = 0.0f;
};

struct AddCase {
  int64_t n = 0;
  bool in_place = false;  // out aliases a
};

struct GatherRowsCase {
  int64_t src_rows = 0, row_len = 0;
  std::vector<int32_t> indices;
};

const std::vector<EmbeddingCase>& EmbeddingCases();
const std::vector<NormCase>& NormCases();  // RmsNorm and AddRmsNorm
const std::vector<LayerNormCase>& LayerNormCases();
const std::vector<PoolCase>& PoolCases();
const std::vector<RopeCase>& RopeCases();
const std::vector<KvWriteCase>& KvWriteCases();
const std::vector<RopeKvWriteCase>& RopeKvWriteCases();
const std::vector<MatmulCase>& MatmulCases();
const std::vector<AttentionCase>& AttentionCases();
const std::vector<SwigluCase>& SwigluCases();
const std::vector<AddCase>& AddCases();
const std::vector<GatherRowsCase>& GatherRowsCases();
const std::vector<SoftCapCase>& SoftCapCases();
const std::vector<RouteCase>& RouteCases();
const std::vector<ExpertSumCase>& ExpertSumCases();

}  // namespace forge::testing
