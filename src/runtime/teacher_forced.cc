// TeacherForcedLogits: a private cache with blocks 0..n-1 in order.
#include "runtime/teacher_forced.h"

#include <numeric>

namespace forge {

StatusOr<std::vector<float>> TeacherForcedLogits(ModelRunner& runner,
                                                 const std::vector<int32_t>& tokens, int chunk,
                                                 int block_size) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return std::vector<float>{};
  const int64_t blocks = (n + block_size - 1) / block_size;
  ASSIGN_OR_RETURN(auto cache, runner.CreateKvCache(blocks, block_size));
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  if (chunk <= 0) chunk = static_cast<int>(n);
  std::vector<float> all, logits;
  for (int64_t pos = 0; pos < n; pos += chunk) {
    int64_t len = std::min<int64_t>(chunk, n - pos);
    ForwardBatch b;
    b.block_size = block_size;
    RETURN_IF_ERROR(b.AddSequence({tokens.begin() + pos, tokens.begin() + pos + len},
                                  static_cast<int32_t>(pos), table, ForwardBatch::Logits::kAll));
    b.Finish();
    RETURN_IF_ERROR(runner.Forward(b, *cache, &logits));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

}  // namespace forge
