// ForwardBatch::SingleQueriesFirst: the one-query sequences of a mixed batch move ahead of the
// others with their tokens, positions, slots, lengths and block tables; logits rows keep their
// order and follow the moved tokens.
#include "runtime/forward_batch.h"

#include <gtest/gtest.h>

#include <vector>

namespace forge {
namespace {

TEST(ForwardBatchTest, SingleQueriesMoveFirstAndLogitsFollow) {
  ForwardBatch b;
  b.block_size = 4;
  // Sequence 0: a 3-token chunk at 0 (all logits); 1: one token at 5; 2: 2 tokens at 1 (last);
  // 3: one token at 2 (no logits).
  ASSERT_TRUE(b.AddSequence({10, 11, 12}, 0, {7}, ForwardBatch::Logits::kAll).ok());
  ASSERT_TRUE(b.AddSequence({20}, 5, {3, 4}, ForwardBatch::Logits::kLast).ok());
  ASSERT_TRUE(b.AddSequence({30, 31}, 1, {9}, ForwardBatch::Logits::kLast).ok());
  ASSERT_TRUE(b.AddSequence({40}, 2, {6}, ForwardBatch::Logits::kNone).ok());
  b.Finish();
  EXPECT_EQ(b.SingleQueries(), 2);
  EXPECT_EQ(b.LeadingSingleQueries(), 0);

  const ForwardBatch m = b.SingleQueriesFirst();
  EXPECT_EQ(m.LeadingSingleQueries(), 2);
  EXPECT_EQ(m.token_ids, (std::vector<int32_t>{20, 40, 10, 11, 12, 30, 31}));
  EXPECT_EQ(m.positions, (std::vector<int32_t>{5, 2, 0, 1, 2, 1, 2}));
  EXPECT_EQ(m.slot_mapping, (std::vector<int32_t>{17, 26, 28, 29, 30, 37, 38}));
  EXPECT_EQ(m.cu_seqlens_q, (std::vector<int32_t>{0, 1, 2, 5, 7}));
  EXPECT_EQ(m.seq_lens_k, (std::vector<int32_t>{6, 3, 3, 3}));
  EXPECT_EQ(m.max_blocks, 2);
  EXPECT_EQ(m.block_tables, (std::vector<int32_t>{3, 4, 6, -1, 7, -1, 9, -1}));
  // Logits rows in the original order: sequence 0's three tokens, 1's, then 2's last.
  EXPECT_EQ(b.logits_indices, (std::vector<int32_t>{0, 1, 2, 3, 5}));
  EXPECT_EQ(m.logits_indices, (std::vector<int32_t>{2, 3, 4, 0, 6}));
  for (size_t i = 0; i < b.logits_indices.size(); ++i) {
    EXPECT_EQ(m.token_ids[m.logits_indices[i]], b.token_ids[b.logits_indices[i]]);
    EXPECT_EQ(m.positions[m.logits_indices[i]], b.positions[b.logits_indices[i]]);
  }
  EXPECT_TRUE(m.Validate(16, 100).ok());
}

}  // namespace
}  // namespace forge
