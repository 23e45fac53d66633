// The CUDA matmul's dispatch rules (matmul_dispatch.h), checked without a GPU: the rules read
// shapes, types, strides and alignment only, so these run wherever the CUDA backend is built.
#include "backend/cuda/matmul/matmul_dispatch.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backend/cuda/quant_test_data.h"
#include "quant/type_table.h"

namespace forge {
namespace {

alignas(256) uint8_t g_mem[256];  // never dereferenced: the rules read addresses only

MatmulParams Params(GgmlType t, int64_t n, int64_t k, int64_t m, DType x = DType::kF16,
                    DType out = DType::kF32) {
  MatmulParams p;
  p.x = g_mem;
  p.w = WeightView{t, n, k, RowBytes(t, k).value(), g_mem};
  p.out = g_mem;
  p.m = m;
  p.x_type = x;
  p.out_type = out;
  return p;
}

cuda::MatmulResources Usual() { return cuda::UsualMatmulResources(); }

std::string Chosen(const MatmulParams& p, const cuda::MatmulResources& r = Usual()) {
  const cuda::MatmulChoice c = cuda::ChooseMatmul(p, r);
  return c.variant != nullptr ? c.variant->name : "none";
}

// docs/kernels.md's table: F16 activations, F32 out, k = 4096 (Q5_K at k = 4096, where the DP4A
// GEMV takes one row), the activations' form at one row.
TEST(MatmulDispatchTest, DefaultActivationsFollowTheDocumentedTable) {
  const std::string dp4a = "gemv_quant_dp4a", mma = "gemm_quant_mma", reg = "gemv_quant_reg",
                    gemv = "gemv_quant", fused = "gemm_quant", dq = "dequantize+cublas";
  struct Row {
    int64_t lo, hi;
    std::string q4k, q6k, q5k, q40, other;
  };
  const std::vector<Row> rows = {
      {1, 1, dp4a, dp4a, dp4a, dp4a, dp4a},     {2, 8, reg, mma, reg, gemv, gemv},
      {9, 16, mma, mma, reg, gemv, gemv},       {17, 32, mma, mma, reg, fused, dq},
      {33, 64, mma, mma, dq, fused, dq},        {65, 256, mma, mma, dq, dq, dq},
      {257, 1024, dq, dq, dq, dq, dq},
  };
  const std::map<GgmlType, std::string Row::*> column = {
      {GgmlType::kQ4_K, &Row::q4k}, {GgmlType::kQ6_K, &Row::q6k}, {GgmlType::kQ5_K, &Row::q5k},
      {GgmlType::kQ4_0, &Row::q40}, {GgmlType::kQ8_0, &Row::other}, {GgmlType::kQ4_1, &Row::other},
      {GgmlType::kQ5_0, &Row::other}, {GgmlType::kQ5_1, &Row::other}, {GgmlType::kQ2_K, &Row::other},
      {GgmlType::kQ3_K, &Row::other}};
  ASSERT_EQ(column.size(), testing::QuantFormats().size()) << "every format Forge keeps stored";
  for (const auto& [t, col] : column) {
    for (const Row& r : rows) {
      for (int64_t m : {r.lo, (r.lo + r.hi) / 2, r.hi}) {
        MatmulParams p = Params(t, 4096, 4096, m);
        if (m == 1) p.xq = g_mem;
        EXPECT_EQ(Chosen(p), r.*col) << TypeName(t) << " m=" << m;
      }
    }
  }
}

TEST(MatmulDispatchTest, EachRulesBoundary) {
  // Q5_K: the DP4A GEMV below k = 8192 only; the register GEMV from there.
  EXPECT_EQ(Chosen(Params(GgmlType::kQ5_K, 4096, 7936, 1)), "gemv_quant_dp4a");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ5_K, 4096, 8192, 1)), "gemv_quant_reg");
  // Q6_K / Q3_K rows that are not whole 2048-element chunks: neither the DP4A GEMV nor the MMA.
  EXPECT_EQ(Chosen(Params(GgmlType::kQ6_K, 4096, 4096 + 256, 1)), "gemv_quant");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ6_K, 4096, 4096 + 256, 2)), "gemv_quant");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ6_K, 4096, 4096 + 256, 17)), "dequantize+cublas");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ3_K, 4096, 4096 + 256, 1)), "gemv_quant");
  // Q2_K: whole groups of 4 super-blocks.
  EXPECT_EQ(Chosen(Params(GgmlType::kQ2_K, 4096, 1024 + 256, 1)), "gemv_quant");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ2_K, 4096, 2048, 1)), "gemv_quant_dp4a");
  // The MMA from 9 rows for Q4_K, from 2 for Q6_K, up to 256.
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_K, 4096, 4096, 8)), "gemv_quant_reg");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_K, 4096, 4096, 9)), "gemm_quant_mma");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ6_K, 4096, 4096, 2)), "gemm_quant_mma");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_K, 4096, 4096, 256)), "gemm_quant_mma");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_K, 4096, 4096, 257)), "dequantize+cublas");
  // The register GEMV up to 32 rows, the staged GEMV up to 16, the fused GEMM up to 64.
  EXPECT_EQ(Chosen(Params(GgmlType::kQ5_K, 4096, 4096, 32)), "gemv_quant_reg");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ5_K, 4096, 4096, 33)), "dequantize+cublas");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ8_0, 4096, 4096, 16)), "gemv_quant");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ8_0, 4096, 4096, 17)), "dequantize+cublas");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_0, 4096, 4096, 64)), "gemm_quant");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_0, 4096, 4096, 65)), "dequantize+cublas");
  // BF16 activations: the staged GEMV, the fused GEMM, or dequantize + cuBLAS.
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_K, 4096, 4096, 1, DType::kBF16)), "gemv_quant");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_K, 4096, 4096, 17, DType::kBF16)), "gemm_quant");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ6_K, 4096, 4096, 17, DType::kBF16)), "dequantize+cublas");
  // F32 activations: the staged GEMV or dequantize + cuBLAS.
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_0, 4096, 4096, 16, DType::kF32)), "gemv_quant");
  EXPECT_EQ(Chosen(Params(GgmlType::kQ4_0, 4096, 4096, 17, DType::kF32)), "dequantize+cublas");
  // Alignment: x off 16 bytes leaves the kernels that load it in 16-byte pieces.
  MatmulParams odd = Params(GgmlType::kQ4_K, 4096, 4096, 1);
  odd.x = g_mem + 2;
  EXPECT_EQ(Chosen(odd), "gemv_quant");
  odd.m = 17;
  EXPECT_EQ(Chosen(odd), "dequantize+cublas");
  // A row that does not fit the dequantization scratch: no variant.
  cuda::MatmulResources small = Usual();
  small.dequant_scratch_bytes = 4096 * 2 - 1;
  EXPECT_EQ(Chosen(Params(GgmlType::kQ8_0, 4096, 4096, 512), small), "none");
}

TEST(MatmulDispatchTest, DenseWeights) {
  for (GgmlType t : {GgmlType::kF16, GgmlType::kBF16}) {
    const DType dt = t == GgmlType::kF16 ? DType::kF16 : DType::kBF16;
    EXPECT_EQ(Chosen(Params(t, 4096, 4096, 1, dt)), "gemv") << TypeName(t);
    EXPECT_EQ(Chosen(Params(t, 4096, 4096, 8, dt)), "gemv") << TypeName(t);
    EXPECT_EQ(Chosen(Params(t, 4096, 4096, 9, dt)), "cublas") << TypeName(t);
    EXPECT_EQ(Chosen(Params(t, 4096, 4100, 1, dt)), "cublas") << "rows not whole 16-byte chunks";
  }
  EXPECT_EQ(Chosen(Params(GgmlType::kF32, 4096, 4096, 1, DType::kF32)), "cublas");
}

// The planner keeps one choice per row bucket: no rule may change inside a bucket.
TEST(MatmulDispatchTest, NoRuleChangesInsideARowBucket) {
  for (GgmlType t : testing::QuantFormats()) {
    for (int64_t k : {4096, 8192, 14336}) {
      for (DType x : {DType::kF16, DType::kBF16, DType::kF32}) {
        std::map<int, std::string> first;
        for (int64_t m = 1; m <= 1024; ++m) {
          const std::string v = Chosen(Params(t, 4096, k, m, x));
          auto [it, fresh] = first.emplace(cuda::MatmulRowBucket(m), v);
          EXPECT_EQ(it->second, v) << TypeName(t) << " k=" << k << " " << DTypeName(x)
                                   << " m=" << m << " bucket " << it->first;
        }
      }
    }
  }
}

TEST(MatmulDispatchTest, PlannerKeepsOneChoicePerBucketAndExplainsRefusals) {
  cuda::MatmulPlanner planner;
  for (int64_t m : {9, 12, 16}) {
    auto v = planner.Plan(Params(GgmlType::kQ4_K, 4096, 4096, m), Usual());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_STREQ((*v)->name, "gemm_quant_mma");
  }
  EXPECT_EQ(planner.size(), 1u);
  auto v = planner.Plan(Params(GgmlType::kQ4_K, 4096, 4096, 17), Usual());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(planner.size(), 2u);
  // Another layout is another plan.
  MatmulParams strided = Params(GgmlType::kQ4_K, 4096, 4096, 17);
  strided.out_stride = 8192;
  ASSERT_TRUE(planner.Plan(strided, Usual()).ok());
  EXPECT_EQ(planner.size(), 3u);
  // BF16 out from F16 activations: no variant takes it; the error names why for each.
  auto none = planner.Plan(Params(GgmlType::kQ8_0, 4096, 4096, 300, DType::kF16, DType::kBF16),
                           Usual());
  ASSERT_FALSE(none.ok());
  const std::string msg = none.status().ToString();
  EXPECT_NE(msg.find("dequantize+cublas: does not run: out not F32 or x's type"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("gemm_quant: does not run"), std::string::npos) << msg;
}

TEST(MatmulDispatchTest, ExplainNamesWhatWasPassedOver) {
  const cuda::MatmulChoice c = cuda::ChooseMatmul(Params(GgmlType::kQ4_K, 4096, 4096, 4), Usual());
  ASSERT_NE(c.variant, nullptr);
  EXPECT_EQ(c.Explain(),
            "gemv_quant_reg (passed over: gemv_quant_dp4a: does not run: m != 1; gemm_quant_mma: "
            "declined: Q4_K below 9 rows: gemv_quant_reg is faster)");
}

TEST(MatmulDispatchTest, EveryVariantIsNamedOnceAndFound) {
  std::map<std::string, int> seen;
  for (const cuda::MatmulVariant& v : cuda::MatmulVariants()) {
    EXPECT_EQ(++seen[v.name], 1) << v.name;
    EXPECT_EQ(cuda::FindMatmulVariant(v.name), &v);
  }
  EXPECT_EQ(cuda::FindMatmulVariant("no such kernel"), nullptr);
}

}  // namespace
}  // namespace forge
