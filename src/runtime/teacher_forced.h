// Teacher-forced logits: every position's logits for a fixed token sequence, in one forward call
// or in prefill chunks. Used to compare backends and against other implementations.
#pragma once

#include <vector>

#include "runtime/model_runner.h"

namespace forge {

// [tokens.size(), n_vocab] logits. chunk > 0 splits the prompt into chunks of that many tokens.
StatusOr<std::vector<float>> TeacherForcedLogits(ModelRunner& runner,
                                                 const std::vector<int32_t>& tokens, int chunk = 0,
                                                 int block_size = 16);

}  // namespace forge
