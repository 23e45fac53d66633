// The attention benchmark's harness on the CPU backend (F32, tiny shapes): every case runs, its
// floor quantities follow DESIGN.md (decode: K and V bytes; prefill: causal 4·B·H·S²·D / 2), and
// decode K/V copies are rotated until a round reads the asked bytes. No timing assertions.
#include <gtest/gtest.h>

#include <cmath>

#include "model/attention_bench.h"

namespace forge {
namespace {

TEST(AttentionBenchTest, RunsTinyCasesOnTheCpu) {
  auto be = MakeCpuBackend();
  AttentionBenchOptions o;
  o.cases = {{false, 3, 40, 4, 2, 16}, {true, 2, 33, 4, 4, 8}};
  o.dtype = DType::kF32;
  o.q_type = DType::kF32;
  o.trials = 2;
  o.calls_per_trial = 2;
  o.rotate_bytes = 3 * (2 * 3 * 40 * 2 * 16 * 4);  // three calls' K/V: 3 copies
  auto rows = RunAttentionBench(*be, o);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  const AttentionBenchRow& d = (*rows)[0];
  EXPECT_FALSE(d.c.prefill);
  EXPECT_EQ(d.kv_bytes, 2.0 * 3 * 40 * 2 * 16 * 4);
  EXPECT_EQ(d.flops, 0.0);
  EXPECT_EQ(d.copies, 3);
  EXPECT_FALSE(d.graphs);
  const AttentionBenchRow& p = (*rows)[1];
  EXPECT_TRUE(p.c.prefill);
  EXPECT_EQ(p.flops, 4.0 * 2 * 4 * 33 * 33 * 8 / 2);
  EXPECT_EQ(p.copies, 1);
  for (const AttentionBenchRow& r : *rows) {
    EXPECT_TRUE(std::isfinite(r.seconds) && r.seconds > 0) << AttentionBenchCaseName(r.c);
  }
  EXPECT_EQ(AttentionBenchCaseName(p.c), "prefill 2 x 33 causal, 4/4 heads, d8");
}

TEST(AttentionBenchTest, RefusesBadCasesByName) {
  auto be = MakeCpuBackend();
  AttentionBenchOptions o;
  o.cases = {{false, 1, 8, 6, 4, 16}};  // 6 heads over 4 KV heads
  o.dtype = o.q_type = DType::kF32;
  auto rows = RunAttentionBench(*be, o);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("decode 1 x 8, 6/4 heads, d16"), std::string::npos)
      << rows.status().ToString();
}

}  // namespace
}  // namespace forge
