// What the CPU ops promise beyond matching their _ref twins (that is the op harness's job,
// ../op_harness_test.cc): a matmul row's result does not depend on the batch, paged attention
// equals attention over contiguous blocks bit for bit, bad block ids are refused by name, rope_ref
// rotates as its definition says, and the fast dequantizer is the reference one bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "backend/backend.h"
#include "backend/cpu/matmul/dequantize_fast.h"
#include "backend/cuda/quant_test_data.h"
#include "quant/dequantize.h"
#include "support/op_harness.h"

namespace forge {
namespace {

using testing::QuantizedRandom;
using testing::RandomVector;

WeightView View(const testing::QuantMatrix& q) {
  return {q.type, q.n, q.k, q.row_bytes, q.bytes.data()};
}

TEST(CpuOpsTest, MatmulRowsDoNotDependOnBatch) {
  const testing::QuantMatrix w = QuantizedRandom(GgmlType::kQ8_0, 96, 256, 3);
  std::vector<float> x = RandomVector(9 * 256, 4);
  std::vector<float> all(9 * 96), one(96);
  ASSERT_TRUE(matmul_cpu({x.data(), 0, View(w), nullptr, all.data(), 0, 9}).ok());
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE(matmul_cpu({x.data() + i * 256, 0, View(w), nullptr, one.data(), 0, 1}).ok());
    EXPECT_EQ(0, std::memcmp(one.data(), all.data() + i * 96, 96 * 4)) << "row " << i;
  }
}

TEST(CpuOpsTest, AttentionRejectsBadBlockIds) {
  std::vector<int32_t> cu = {0, 1}, lens = {20}, tables = {0, 99};
  std::vector<float> kc(4 * 16 * 8), q(8), out(8);
  AttentionParams p;
  p.q = q.data();
  p.k_cache = p.v_cache = kc.data();
  p.out = out.data();
  p.cu_seqlens_q = cu.data();
  p.seq_lens_k = lens.data();
  p.block_tables = tables.data();
  p.block_table_stride = 2;
  p.n_seqs = 1;
  p.n_tokens = 1;
  p.n_heads = p.n_kv_heads = 1;
  p.head_dim = 8;
  p.num_blocks = 4;
  Status st = attention_cpu(p);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("99"), std::string::npos) << st.message();
}

// Paged equals contiguous: the same keys in one contiguous run of blocks and scattered.
TEST(CpuOpsTest, PagedEqualsContiguous) {
  const int64_t bs = 16, H = 4, KV = 2, D = 64, block = bs * KV * D;
  for (int64_t len : {1, 15, 16, 17, 1000}) {
    const int64_t nb = (len + bs - 1) / bs;
    std::vector<float> keys = RandomVector(nb * block, len),
                       vals = RandomVector(nb * block, len + 1);
    std::vector<float> q = RandomVector(H * D, 7);
    // Contiguous: blocks 0..nb-1. Paged: block b stored at slot 2*(nb-1-b)+1 of a bigger pool.
    std::vector<int32_t> t_contig(nb), t_paged(nb);
    std::iota(t_contig.begin(), t_contig.end(), 0);
    std::vector<float> kp(2 * nb * block + block), vp(kp.size());
    for (int64_t b = 0; b < nb; ++b) {
      t_paged[b] = static_cast<int32_t>(2 * (nb - 1 - b) + 1);
      std::memcpy(&kp[t_paged[b] * block], &keys[b * block], block * 4);
      std::memcpy(&vp[t_paged[b] * block], &vals[b * block], block * 4);
    }
    std::vector<int32_t> cu = {0, 1}, lens = {static_cast<int32_t>(len)};
    std::vector<float> o1(H * D), o2(H * D);
    AttentionParams p;
    p.q = q.data();
    p.cu_seqlens_q = cu.data();
    p.seq_lens_k = lens.data();
    p.block_table_stride = nb;
    p.n_seqs = 1;
    p.n_tokens = 1;
    p.n_heads = H;
    p.n_kv_heads = KV;
    p.head_dim = D;
    p.block_size = bs;
    p.scale = 0.125f;
    p.k_cache = keys.data();
    p.v_cache = vals.data();
    p.block_tables = t_contig.data();
    p.num_blocks = nb;
    p.out = o1.data();
    ASSERT_TRUE(attention_cpu(p).ok());
    p.k_cache = kp.data();
    p.v_cache = vp.data();
    p.block_tables = t_paged.data();
    p.num_blocks = 2 * nb + 1;
    p.out = o2.data();
    ASSERT_TRUE(attention_cpu(p).ok());
    EXPECT_EQ(0, std::memcmp(o1.data(), o2.data(), o1.size() * 4)) << "len " << len;
  }
}

TEST(CpuOpsTest, RopeStylesAgreeWithDefinition) {
  // One head of 8 dims at position 3, theta 100: check a rotated pair by hand.
  for (RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kNeox}) {
    std::vector<float> x = RandomVector(8, 1), orig = x;
    int32_t pos = 3;
    RopeParams p{x.data(), &pos, 1, 1, 8, 0, 8, 100.0f, 1.0f, nullptr, style};
    ASSERT_TRUE(rope_ref(p).ok());
    for (int i = 0; i < 4; ++i) {
      double a = 3.0 * std::pow(100.0, -2.0 * i / 8);
      int ia = style == RopeStyle::kAdjacent ? 2 * i : i;
      int ib = style == RopeStyle::kAdjacent ? 2 * i + 1 : i + 4;
      EXPECT_NEAR(x[ia], orig[ia] * std::cos(a) - orig[ib] * std::sin(a), 1e-6);
      EXPECT_NEAR(x[ib], orig[ia] * std::sin(a) + orig[ib] * std::cos(a), 1e-6);
    }
  }
}

TEST(CpuOpsTest, FastDequantizeIsBitIdentical) {
  for (GgmlType type : SupportedTypes()) {
    const int64_t block = GetTypeTraits(type).block_elems;
    const int64_t n = 4 * block * (block == 1 ? 33 : 1);
    const testing::QuantMatrix m = QuantizedRandom(type, 1, n, 77);
    std::vector<float> a(n), b(n);
    ASSERT_TRUE(DequantizeRow(type, m.bytes.data(), a.data(), n).ok());
    DequantizeRowFast(type, m.bytes.data(), b.data(), n);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * 4)) << TypeName(type);
  }
}

}  // namespace
}  // namespace forge
