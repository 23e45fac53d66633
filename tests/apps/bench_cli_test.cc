// `forge bench --batched`, `--embed` and the model flags as users run them on the CPU: the
// sweeps' tables and JSON (one row per n_seqs, token counts as asked), --threads sizing the host
// pool, --dtype and --threads refused where out of range, and --gpu-memory-fraction checked by
// `forge run`.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::RunForge;

class BenchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir();
    model_ = dir_ + "/tiny.gguf";
    auto r = RunForge("make-model --preset tiny --threads 1 '" + model_ + "'", dir_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string dir_, model_;
};

TEST_F(BenchCliTest, BatchedSweepPrintsATableAndWritesJson) {
  const std::string json = dir_ + "/b.json";
  auto r = RunForge("bench -m '" + model_ +
                        "' --batched --seqs 1,3 --pp 8 --tg 4 --device cpu "
                        "--no-graphs --json '" +
                        json + "'",
                    dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| n_seqs |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("activations/KV f32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("graphs:"), std::string::npos) << r.out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["dtype"], "f32");
  EXPECT_EQ(j["graphs"], false);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["n_seqs"], 1);
  EXPECT_EQ(j["rows"][1]["n_seqs"], 3);
  EXPECT_EQ(j["rows"][1]["prompt_tokens"], 24);
  EXPECT_EQ(j["rows"][1]["generated_tokens"], 12);
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["s"].get<double>(), 0);
    EXPECT_GT(row["s_tg_floor"].get<double>(), 0);
    EXPECT_GT(row["s_pp_floor"].get<double>(), 0);
  }
}

// --embed on a one-layer BERT (width 64, 8 heads of 8, 4 KV heads, FFN 192): one row per count,
// the engine's steps as the budget allows (5 inputs of 16 tokens in steps of <= 32 tokens: 3), the
// FLOPs of a sequence as the shape gives them; a model that does not embed is refused.
TEST_F(BenchCliTest, EmbedSweepCountsStepsAndFlops) {
  const std::string bert = dir_ + "/bert.gguf";
  auto r = RunForge("make-model --arch bert --n-layer 1 --threads 1 '" + bert + "'", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = dir_ + "/e.json";
  r = RunForge("bench -m '" + bert +
                   "' --embed --seqs 1,5 -p 16 --prefill-chunk 32 -r 1 --device cpu --json '" +
                   json + "'",
               dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| n_seqs |  steps |"), std::string::npos) << r.out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded());
  // q, k, v, o: 64x64, 32x64 twice, 64x64; up and down 192x64: 36864 parameters a layer.
  // 2 * 36864 * 16 for the matrices, 4 * 16^2 * 64 for the bidirectional attention.
  EXPECT_EQ(j["seq_flops"].get<double>(), 2.0 * 36864 * 16 + 4.0 * 16 * 16 * 64);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["steps"], 1);
  EXPECT_EQ(j["rows"][1]["n_seqs"], 5);
  EXPECT_EQ(j["rows"][1]["steps"], 3);
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["seq_per_s"].get<double>(), 0);
    EXPECT_GT(row["seq_per_s_floor"].get<double>(), 0);
  }
  r = RunForge("bench -m '" + model_ + "' --embed --device cpu", dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("does not embed"), std::string::npos) << r.err;
}

// --threads sizes the pool the CPU ops run on and the floors are measured on; the CPU run prints
// its read-bandwidth floor beside the copy floor.
TEST_F(BenchCliTest, ThreadsOptionSizesThePool) {
  const std::string json = dir_ + "/t.json";
  auto r = RunForge("bench -m '" + model_ + "' --device cpu --threads 3 -p 8 -n 4 -r 1 --json '" +
                        json + "'",
                    dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(3 host threads)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu read bandwidth"), std::string::npos) << r.out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["threads"], 3);
  EXPECT_GT(j["read_bytes_per_s"].get<double>(), 0);
  EXPECT_GT(j["tg_read_floor_tokens_per_s"].get<double>(), 0);
}

TEST_F(BenchCliTest, FlagErrors) {
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"bench -m '" + model_ + "' --batched --device cpu --dtype f16",
       "cpu backend does not run f16 activations"},
      {"bench -m '" + model_ + "' --batched --device cpu --dtype f64", "--dtype"},
      {"bench -m '" + model_ + "' --batched --seqs 0 --device cpu", "n_seqs=0"},
      {"bench -m '" + model_ + "' --device cpu --threads 0", "--threads"},
      {"run -m '" + model_ + "' --device cpu -t 0 -n 1 --prompt hi", "--threads"},
      {"logits -m '" + model_ + "' --ids 1,2 --device cpu --dtype bf16",
       "cpu backend does not run bf16 activations"},
      {"run -m '" + testing::TestDataPath("models/stories260K.gguf") + "' --prompts-file '" + dir_ +
           "/prompts.txt' -n 4 --device cpu --gpu-memory-fraction 0",
       "gpu_memory_fraction=0: must be in (0, 1]"},
  };
  std::ofstream(dir_ + "/prompts.txt") << "Once upon a time\n";
  for (const Case& c : cases) {
    auto r = RunForge(c.args, dir_);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace forge
