// The benchmarks on the CPU backend with a tiny generated model: the batched sweep runs every
// configuration with the token counts asked for, chunks its prefill as documented, and reports
// finite positive throughputs and floors; the pp/tg bench counts K/V in the activation dtype.
// No timing assertions (DESIGN.md "Testing").
#include <gtest/gtest.h>

#include <cmath>

#include "model/model_bench.h"
#include "modelgen/model_maker.h"
#include "support/test_env.h"

namespace forge {
namespace {

class ModelBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec = ModelPreset("tiny");
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    spec->threads = 1;
    path_ = testing::TempDir() + "/tiny.gguf";
    auto made = MakeModel(*spec, path_);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    backend_ = MakeCpuBackend();
    auto model = ModelRunner::Load(path_, backend_.get());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = std::move(model).value();
  }

  std::string path_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ModelRunner> model_;
};

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }

TEST_F(ModelBenchTest, BatchedSweepCountsAndFloors) {
  BatchedBenchOptions o;
  o.n_seqs = {1, 3};
  o.pp_tokens = 8;
  o.tg_tokens = 4;
  o.prefill_chunk_tokens = 5;  // 3 prompts of 8 = 24 tokens: 5 calls, prompts split across them
  o.copy_bytes_per_s = 1e9;    // stand-in floors (measuring them is not under test)
  o.flops_per_s = 1e9;
  auto r = RunBatchedBench(*model_, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->backend, "cpu");
  EXPECT_EQ(r->dtype, DType::kF32);
  const ModelConfig& c = model_->config();
  EXPECT_EQ(r->kv_bytes_per_token, 2 * c.n_layer * c.kv_dim() * 4);
  EXPECT_EQ(r->kv_blocks, 3 * 1);  // 12 tokens per sequence: one block of 16 each
  EXPECT_GT(r->weight_bytes_per_step, 0);
  // The CPU uses the file's matrices in place: the same bytes but the 1-D norms.
  EXPECT_GT(r->backend_weight_bytes, 0);
  EXPECT_LE(r->backend_weight_bytes, r->weight_bytes_per_step);
  EXPECT_GT(r->backend_weight_bytes, r->weight_bytes_per_step * 9 / 10);
  ASSERT_EQ(r->rows.size(), 2u);
  const int expect_calls[] = {2, 5};
  for (size_t i = 0; i < r->rows.size(); ++i) {
    const BatchedBenchRow& w = r->rows[i];
    SCOPED_TRACE("n_seqs=" + std::to_string(w.n_seqs));
    EXPECT_EQ(w.n_seqs, o.n_seqs[i]);
    EXPECT_EQ(w.prompt_tokens, int64_t{w.n_seqs} * 8);
    EXPECT_EQ(w.generated_tokens, int64_t{w.n_seqs} * 4);
    EXPECT_EQ(w.prefill_calls, expect_calls[i]);
    for (double v : {w.prefill_seconds, w.decode_seconds, w.s_pp, w.s_tg, w.s, w.s_pp_floor,
                     w.s_tg_floor, w.s_floor, w.prefill_flops, w.decode_bytes}) {
      EXPECT_TRUE(PositiveFinite(v)) << v;
    }
    // S is all tokens over both times, so it lies between the two rates.
    EXPECT_LE(w.s, std::max(w.s_pp, w.s_tg) * (1 + 1e-9));
    EXPECT_GE(w.s, std::min(w.s_pp, w.s_tg) * (1 - 1e-9));
    // The decode floor: weights once per step plus K/V of contexts 9..12 for every sequence.
    const double want_bytes = 4.0 * r->weight_bytes_per_step +
                              w.n_seqs * double(r->kv_bytes_per_token) * (9 + 10 + 11 + 12);
    EXPECT_DOUBLE_EQ(w.decode_bytes, want_bytes);
    EXPECT_DOUBLE_EQ(w.s_tg_floor, w.generated_tokens / (want_bytes / o.copy_bytes_per_s));
    // The CPU has no graphs: every timed decode step ran eagerly.
    EXPECT_EQ(w.decode_eager_forwards, 4);
    EXPECT_EQ(w.decode_graph_replays, 0);
  }
  // More sequences per step share the weight reads: the decode floor rises with n_seqs.
  EXPECT_GT(r->rows[1].s_tg_floor, r->rows[0].s_tg_floor);
}

TEST_F(ModelBenchTest, BatchedSweepWithoutFloorsReportsZeroFloors) {
  BatchedBenchOptions o;
  o.n_seqs = {2};
  o.pp_tokens = 20;  // longer than a block and than the chunk: each prompt in pieces
  o.tg_tokens = 2;
  o.prefill_chunk_tokens = 16;
  auto r = RunBatchedBench(*model_, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].prefill_calls, 3);  // 40 tokens in calls of <= 16
  EXPECT_TRUE(PositiveFinite(r->rows[0].s));
  EXPECT_EQ(r->rows[0].s_pp_floor, 0);
  EXPECT_EQ(r->rows[0].s_tg_floor, 0);
  EXPECT_EQ(r->kv_blocks, 2 * 2);  // 22 tokens per sequence: two blocks each
}

TEST_F(ModelBenchTest, BatchedSweepRejectsBadOptions) {
  BatchedBenchOptions o;
  o.n_seqs = {1, 0};
  auto r = RunBatchedBench(*model_, o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("n_seqs=0"), std::string::npos) << r.status().message();
  o.n_seqs = {1};
  o.tg_tokens = 0;
  EXPECT_EQ(RunBatchedBench(*model_, o).status().code(), StatusCode::kInvalidArgument);
  o.tg_tokens = 1;
  o.n_seqs.clear();
  EXPECT_EQ(RunBatchedBench(*model_, o).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ModelBenchTest, PpTgCountsKvInTheActivationDtype) {
  ModelBenchOptions o;
  o.pp_tokens = 8;
  o.tg_tokens = 4;
  o.repetitions = 1;
  o.copy_bytes_per_s = 1e9;
  o.flops_per_s = 1e9;
  auto r = RunModelBench(*model_, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ModelConfig& c = model_->config();
  const double row = 2.0 * c.n_layer * c.kv_dim() * DTypeSize(model_->dtype());
  EXPECT_DOUBLE_EQ(r->kv_bytes_per_token, row * (4 + 1) / 2.0);
  EXPECT_TRUE(PositiveFinite(r->pp_tokens_per_s));
  EXPECT_TRUE(PositiveFinite(r->tg_tokens_per_s));
  EXPECT_TRUE(PositiveFinite(r->tg_floor_tokens_per_s));
  EXPECT_TRUE(PositiveFinite(r->pp_floor_tokens_per_s));
}

}  // namespace
}  // namespace forge
