// Decode steps for the whole-model GPU tests: sequences prefilled alone into a cache, then decoded
// token by token, batched or each alone (the graph-replay and batching equalities).
#pragma once

#include <vector>

#include "runtime/model_runner.h"

namespace forge::testing {

// Prefills n sequences (each alone; sequence s has 5 + 23 s prompt tokens, in blocks of 16 spread
// over the cache, 16 blocks each) into `cache`, then decodes `steps` tokens for all of them,
// batched (one Forward per step) or each alone; returns every decode step's logits by sequence.
std::vector<std::vector<float>> DecodeSteps(ModelRunner& model, KvCache& cache, int n, int steps,
                                            bool batched);

}  // namespace forge::testing
