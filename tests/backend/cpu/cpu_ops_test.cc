// The op harness on the CPU backend: each op's CPU path against its _ref twin over the shapes
// DESIGN.md requires (odd sizes, block-straddling lengths, decode, GQA 1/4/8, head dims
// 64/80/96/128, many blocks), with poisoned outputs and guard words.
#include <gtest/gtest.h>

#include <numeric>

#include "backend/backend.h"
#include "backend/cpu/matmul/dequantize_fast.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "support/op_harness.h"

namespace forge {
namespace {

using testing::GuardedBuffer;
using testing::RandomVector;

struct QuantMatrix {
  std::vector<uint8_t> bytes;
  WeightView view;
};

QuantMatrix MakeMatrix(GgmlType type, int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v = RandomVector(rows * cols, seed, 0.5f);
  QuantMatrix m;
  int64_t row_bytes = RowBytes(type, cols).value();
  m.bytes.resize(rows * row_bytes);
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(QuantizeRow(type, v.data() + r * cols, m.bytes.data() + r * row_bytes, cols).ok());
  }
  m.view = {type, rows, cols, row_bytes, m.bytes.data()};
  return m;
}

TEST(CpuOpsTest, MatmulEveryFormatAndShape) {
  for (GgmlType type : SupportedTypes()) {
    if (type == GgmlType::kQ8_K) continue;  // an activation format, not a weight format
    const int64_t block = GetTypeTraits(type).block_elems;
    for (int64_t m : {1, 2, 3, 7, 17}) {
      for (int64_t n : {1, 5, 13, 64}) {
        const int64_t k = block == 1 ? 13 : 2 * block;
        QuantMatrix w = MakeMatrix(type, n, k, 11 * m + n);
        std::vector<float> x = RandomVector(m * k, m + 100 * n);
        std::vector<float> bias = RandomVector(n, 5);
        GuardedBuffer ref(m * n), got(m * n);
        MatmulParams p{x.data(), 0, w.view, bias.data(), ref.data(), 0, m};
        ASSERT_TRUE(matmul_ref(p).ok());
        p.out = got.data();
        ASSERT_TRUE(matmul_cpu(p).ok());
        EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), m * n, 1e-5)
            << TypeName(type) << " m=" << m << " n=" << n;
        EXPECT_TRUE(got.GuardsIntact());
      }
    }
  }
}

TEST(CpuOpsTest, MatmulRowsDoNotDependOnBatch) {
  QuantMatrix w = MakeMatrix(GgmlType::kQ8_0, 96, 256, 3);
  std::vector<float> x = RandomVector(9 * 256, 4);
  std::vector<float> all(9 * 96), one(96);
  ASSERT_TRUE(matmul_cpu({x.data(), 0, w.view, nullptr, all.data(), 0, 9}).ok());
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE(matmul_cpu({x.data() + i * 256, 0, w.view, nullptr, one.data(), 0, 1}).ok());
    EXPECT_EQ(0, std::memcmp(one.data(), all.data() + i * 96, 96 * 4)) << "row " << i;
  }
}

TEST(CpuOpsTest, RmsNorm) {
  for (int64_t dim : {5, 64, 80, 4096}) {
    for (int64_t rows : {1, 3, 33}) {
      std::vector<float> x = RandomVector(rows * dim, dim + rows), w = RandomVector(dim, 9);
      GuardedBuffer ref(rows * dim), got(rows * dim);
      RmsNormParams p{x.data(), w.data(), ref.data(), rows, dim, 1e-5f};
      ASSERT_TRUE(rmsnorm_ref(p).ok());
      p.out = got.data();
      ASSERT_TRUE(rmsnorm_cpu(p).ok());
      EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), rows * dim, 1e-6);
      EXPECT_TRUE(got.GuardsIntact());
    }
  }
}

// A ragged batch over scattered blocks: each sequence has `prefix` cached tokens and `q` new.
struct AttnCase {
  int64_t n_heads, n_kv, head_dim;
  std::vector<std::pair<int, int>> seqs;  // (cached prefix, new tokens)
};

TEST(CpuOpsTest, AttentionRaggedPaged) {
  const int64_t bs = 16;
  std::vector<AttnCase> cases = {
      {8, 8, 64, {{0, 1}}},                         // MHA single-token decode
      {8, 2, 80, {{15, 1}, {0, 17}, {16, 16}}},     // GQA 4, straddling blocks, mixed
      {32, 4, 128, {{100, 1}, {33, 1}, {0, 5}}},    // GQA 8
      {4, 4, 96, {{7, 13}, {0, 7}}},                // odd lengths
      {2, 1, 8, {{1000, 1}, {5, 300}}},             // many blocks
  };
  for (const AttnCase& c : cases) {
    std::vector<int32_t> cu = {0}, lens, tables;
    int64_t max_blocks = 0;
    for (auto [pre, q] : c.seqs) max_blocks = std::max<int64_t>(max_blocks, (pre + q + bs - 1) / bs);
    int64_t next_block = 0;
    for (auto [pre, q] : c.seqs) {
      cu.push_back(cu.back() + q);
      lens.push_back(pre + q);
      int64_t nb = (pre + q + bs - 1) / bs;
      for (int64_t b = 0; b < max_blocks; ++b) {
        // Scattered: interleave sequences' blocks in reverse order.
        tables.push_back(b < nb ? static_cast<int32_t>(3 * (nb - b) + next_block) : -1);
      }
      next_block += 3 * nb + 1;
    }
    const int64_t num_blocks = next_block + 4;
    const int64_t T = cu.back();
    std::vector<float> kc = RandomVector(num_blocks * bs * c.n_kv * c.head_dim, 1);
    std::vector<float> vc = RandomVector(num_blocks * bs * c.n_kv * c.head_dim, 2);
    std::vector<float> q = RandomVector(T * c.n_heads * c.head_dim, 3);
    GuardedBuffer ref(T * c.n_heads * c.head_dim), got(T * c.n_heads * c.head_dim);
    AttentionParams p;
    p.q = q.data();
    p.k_cache = kc.data();
    p.v_cache = vc.data();
    p.out = ref.data();
    p.cu_seqlens_q = cu.data();
    p.seq_lens_k = lens.data();
    p.block_tables = tables.data();
    p.block_table_stride = max_blocks;
    p.n_seqs = static_cast<int64_t>(lens.size());
    p.n_tokens = T;
    p.n_heads = c.n_heads;
    p.n_kv_heads = c.n_kv;
    p.head_dim = c.head_dim;
    p.block_size = bs;
    p.num_blocks = num_blocks;
    p.scale = 1.0f / std::sqrt(float(c.head_dim));
    ASSERT_TRUE(attention_ref(p).ok());
    p.out = got.data();
    ASSERT_TRUE(attention_cpu(p).ok());
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), ref.size(), 1e-5) << "head_dim " << c.head_dim;
    EXPECT_TRUE(got.GuardsIntact());
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
  const int64_t bs = 16, H = 4, KV = 2, D = 64;
  for (int64_t len : {1, 15, 16, 17, 1000}) {
    const int64_t nb = (len + bs - 1) / bs;
    std::vector<float> keys = RandomVector(nb * bs * KV * D, len), vals = RandomVector(nb * bs * KV * D, len + 1);
    std::vector<float> q = RandomVector(H * D, 7);
    // Contiguous: blocks 0..nb-1. Paged: block b stored at slot 2*(nb-1-b)+1 of a bigger pool.
    std::vector<int32_t> t_contig(nb), t_paged(nb);
    std::iota(t_contig.begin(), t_contig.end(), 0);
    std::vector<float> kp(2 * nb * bs * KV * D + bs * KV * D), vp(kp.size());
    for (int64_t b = 0; b < nb; ++b) {
      t_paged[b] = static_cast<int32_t>(2 * (nb - 1 - b) + 1);
      std::memcpy(&kp[t_paged[b] * bs * KV * D], &keys[b * bs * KV * D], bs * KV * D * 4);
      std::memcpy(&vp[t_paged[b] * bs * KV * D], &vals[b * bs * KV * D], bs * KV * D * 4);
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

}  // namespace
}  // namespace forge

namespace forge {
namespace {

TEST(CpuOpsTest, FastDequantizeIsBitIdentical) {
  for (GgmlType type : SupportedTypes()) {
    const int64_t n = 4 * GetTypeTraits(type).block_elems * (GetTypeTraits(type).block_elems == 1 ? 33 : 1);
    QuantMatrix m = MakeMatrix(type, 1, n, 77);
    std::vector<float> a(n), b(n);
    ASSERT_TRUE(DequantizeRow(type, m.view.data, a.data(), n).ok());
    DequantizeRowFast(type, m.view.data, b.data(), n);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * 4)) << TypeName(type);
  }
}

}  // namespace
}  // namespace forge
