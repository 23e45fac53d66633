// Deterministic synthetic weights: every row of every tensor has its own random stream keyed by
// (seed, tensor name, row), so a value never depends on which thread makes it or in what order.
#pragma once

#include <cstdint>
#include <vector>

#include "modelgen/model_spec.h"
#include "modelgen/tensor_plan.h"

namespace forge {

class WeightInit {
 public:
  // Requires: spec.n_vocab final (ResolveVocab done).
  explicit WeightInit(const ModelSpec& spec);

  // Fills row `row` (t.dims[0] values) of tensor t. Values (z ~ N(0, 1)-like, |z| < 3.5):
  //  norms 1 + 0.1 z; biases 0.5 z; matrices z / sqrt(row length).
  //  Peaked (spec.peak > 0): token_embd rows are z (RMS 1); output row v is
  //  z / sqrt(n_embd) + (peak / n_embd) * token_embd[Predecessor(v)]; attn_output and ffn_down
  //  are scaled by 1 / sqrt(2 n_layer) so the residual stream stays near the embedding.
  void FillRow(const TensorPlan& t, int64_t row, float* out) const;

  // Peaked models: the token whose logit an input token t's embedding lifts by about `peak`
  // (the greedy next token of a model whose layers add little): (mul * t + add) mod n_vocab, or
  // t itself when the embeddings are tied. mul is coprime with n_vocab, so this is a bijection.
  // With spec.successor_first = F > 0 the map permutes [F, n_vocab) only (a word vocabulary's
  // words): the ids below F alias the word F + t mod (n_vocab - F), sharing its embedding and its
  // successor, and have no predecessor (-1).
  int64_t Successor(int64_t token) const;
  int64_t Predecessor(int64_t token) const;
  int64_t Alias(int64_t token) const;
  uint64_t successor_mul() const { return mul_; }
  uint64_t successor_add() const { return add_; }

 private:
  void FillNormal(uint64_t key, int64_t n, float scale, float offset, float* out) const;
  uint64_t RowKey(const char* name, int64_t row) const;

  ModelSpec spec_;
  int64_t first_ = 0;  // spec.successor_first when it is in range
  uint64_t mul_ = 1, add_ = 0, inv_mul_ = 1;
};

}  // namespace forge
