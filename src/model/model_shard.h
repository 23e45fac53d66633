// Tensor-parallel shards of a llama-family model: rank r of n holds a contiguous range of the
// query heads with the KV heads they read (column-parallel q/k/v, row-parallel output
// projection), a range of the FFN's hidden features (column-parallel gate/up, row-parallel down)
// and a range of the vocabulary (embedding rows and LM head rows). Norms and RoPE factors are
// replicated. The partial sums of the row-parallel matmuls and of the embedding meet in an
// all-reduce; the LM head's slices meet in an all-gather.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace forge {

struct ShardPlan {
  int rank = 0;
  int n = 1;
  int64_t head_begin = 0, n_head = 0;        // query heads
  int64_t kv_head_begin = 0, n_head_kv = 0;  // KV heads (shared by ranks when n > n_head_kv)
  int64_t ff_begin = 0, n_ff = 0;            // FFN hidden features
  int64_t ff_exp_begin = 0, n_ff_exp = 0;    // each expert's hidden features
  int64_t ff_shexp_begin = 0, n_ff_shexp = 0;  // the shared expert's
  int64_t vocab_begin = 0, n_vocab = 0;      // embedding / LM head rows
  int64_t vocab_pad = 0;  // ceil(vocabulary / n): every rank's logits width in the gather
};

// The plan for `rank` of `n`. Errors (INVALID_ARGUMENT, naming the numbers) when the query heads
// do not divide by n, the KV heads neither divide by n nor divide n, or a row-parallel split
// (attn_output's or ffn_down's columns) does not fall on a block boundary of its quantized type.
StatusOr<ShardPlan> PlanShard(const ModelConfig& c, const ModelWeights& host, int rank, int n);

// The model as rank `plan.rank` sees it: its config (head counts, n_ff and n_vocab are the
// shard's) and its weights, row ranges as views of `host`, column ranges copied into `owned`
// (which must outlive the views).
struct WeightShard {
  ModelConfig config;
  ModelWeights weights;
  std::vector<std::vector<uint8_t>> owned;
};
StatusOr<WeightShard> ShardWeights(const ModelConfig& c, const ModelWeights& host,
                                   const ShardPlan& plan);

}  // namespace forge
