// The CUDA attention's dispatch rules (attention_dispatch.h), checked without a GPU: they read the
// host's view of a batch (token and sequence counts, dtypes, heads), never its memory.
#include "backend/cuda/attention/attention_dispatch.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace forge {
namespace {

AttentionParams Batch(int64_t tokens, int64_t seqs, int64_t head_dim, DType dtype = DType::kF16,
                      int64_t heads = 32, int64_t kv_heads = 8) {
  AttentionParams p;
  p.n_tokens = tokens;
  p.n_seqs = seqs;
  p.head_dim = head_dim;
  p.n_heads = heads;
  p.n_kv_heads = kv_heads;
  p.dtype = dtype;
  p.q_type = DType::kF32;
  return p;
}

std::string Chosen(const AttentionParams& p) {
  const cuda::AttentionChoice c = cuda::ChooseAttention(p);
  return c.variant != nullptr ? c.variant->name : "none";
}

// docs/kernels.md's attention table.
TEST(AttentionDispatchTest, FollowsTheDocumentedTable) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dt));
    for (int64_t hd : {64, 128}) {
      EXPECT_EQ(Chosen(Batch(512, 1, hd, dt)), "attention_prefill_wgmma") << hd;
      EXPECT_EQ(Chosen(Batch(65, 64, hd, dt)), "attention_prefill_wgmma") << hd;
    }
    for (int64_t hd : {80, 96}) EXPECT_EQ(Chosen(Batch(512, 2, hd, dt)), "attention_prefill");
    for (int64_t hd : {64, 80, 96, 128}) {
      EXPECT_EQ(Chosen(Batch(1, 1, hd, dt)), "attention_decode") << hd;
      EXPECT_EQ(Chosen(Batch(64, 64, hd, dt)), "attention_decode") << hd;
    }
    // Up to 16 query heads a KV head in the decode kernel; beyond, the generic one.
    EXPECT_EQ(Chosen(Batch(4, 4, 128, dt, 32, 2)), "attention_decode");
    EXPECT_EQ(Chosen(Batch(4, 4, 128, dt, 64, 2)), "attention_generic");
    // Other head dims up to 256.
    EXPECT_EQ(Chosen(Batch(512, 1, 256, dt)), "attention_generic");
    EXPECT_EQ(Chosen(Batch(1, 1, 256, dt)), "attention_generic");
    EXPECT_EQ(Chosen(Batch(7, 1, 8, dt, 8, 4)), "attention_generic");
  }
  // An F32 cache: the generic kernel only.
  EXPECT_EQ(Chosen(Batch(512, 1, 128, DType::kF32)), "attention_generic");
  EXPECT_EQ(Chosen(Batch(1, 1, 128, DType::kF32)), "attention_generic");
  // Past 256: none.
  EXPECT_EQ(Chosen(Batch(1, 1, 320)), "none");
}

TEST(AttentionDispatchTest, ExplainNamesWhatWasPassedOver) {
  const cuda::AttentionChoice c = cuda::ChooseAttention(Batch(1, 1, 256));
  EXPECT_EQ(c.Explain(),
            "attention_generic (passed over: attention_prefill_wgmma: no sequence has more than "
            "one query; attention_prefill: no sequence has more than one query; "
            "attention_decode: head dim not 64/80/96/128)");
}

TEST(AttentionDispatchTest, EveryVariantIsNamedOnceAndFound) {
  std::map<std::string, int> seen;
  for (const cuda::AttentionVariant& v : cuda::AttentionVariants()) {
    EXPECT_EQ(++seen[v.name], 1) << v.name;
    EXPECT_EQ(cuda::FindAttentionVariant(v.name), &v);
  }
  EXPECT_EQ(cuda::FindAttentionVariant("no such kernel"), nullptr);
}

}  // namespace
}  // namespace forge
