// Tensor parallelism on CPU backends (one per rank, a host collective): stories260K over 2 and 4
// ranks follows llama.cpp's greedy paths and recorded logits (../shared/testdata); synthetic
// models of every kind of split (GQA heads divided and replicated, an uneven vocabulary, tied
// embeddings, QKV biases, block formats) give TP=1's teacher-forced logits within the F32 bound;
// every rank holds about 1/N of the weight bytes; splits that cannot be made are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "modelgen/model_maker.h"
#include "runtime/model_runner.h"
#include "runtime/teacher_forced.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

constexpr double kF32Bound = 1e-5;  // DESIGN.md

// A model over n CPU ranks (n == 1: no collective).
struct Parallel {
  std::vector<std::unique_ptr<Backend>> backends;
  std::unique_ptr<Collective> collective;
  std::unique_ptr<ModelRunner> model;
  Status status;
};

std::unique_ptr<Parallel> LoadOn(const std::string& path, int n) {
  auto p = std::make_unique<Parallel>();
  std::vector<Backend*> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(p->backends.emplace_back(MakeCpuBackend()).get());
  if (n > 1) p->collective = MakeHostCollective(n);
  auto m = ModelRunner::LoadParallel(path, ranks, p->collective.get());
  p->status = m.status();
  if (m.ok()) p->model = std::move(m).value();
  return p;
}

std::vector<int32_t> Tokens(int n, int64_t vocab, int seed) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 89 + seed * 37 + 5) % vocab));
  return ids;
}

std::vector<int32_t> Ids(const nlohmann::json& v) {
  nlohmann::json j = v.is_string() ? nlohmann::json::parse(v.get<std::string>()) : v;
  return j.get<std::vector<int32_t>>();
}

using StoriesCase = std::tuple<std::string, int>;  // file, ranks
class Stories260KParallelTest : public ::testing::TestWithParam<StoriesCase> {};

TEST_P(Stories260KParallelTest, GreedyPathsAndLogitsOfLlamaCpp) {
  const auto& [file, n] = GetParam();
  const std::string path = testing::TestDataPath("models/" + file);
  auto tp = LoadOn(path, n);
  ASSERT_TRUE(tp->status.ok()) << tp->status.ToString();
  ASSERT_EQ(tp->model->tensor_parallel(), n);
  auto one = LoadOn(path, 1);
  ASSERT_TRUE(one->status.ok());
  std::ifstream in(testing::TestDataPath("models/stories260K.expected.json"));
  const nlohmann::json expected = nlohmann::json::parse(in)["models"][file];
  ASSERT_FALSE(expected.is_null()) << file;
  for (const auto& cs : expected["cases"]) {
    const std::string id = cs["id"];
    const std::vector<int32_t> prompt = Ids(cs["prompt_ids"]);
    std::vector<int32_t> full = {prompt[0]};
    for (int32_t t : Ids(cs["ids_after_bos"])) full.push_back(t);
    auto got = TeacherForcedLogits(*tp->model, full);
    auto ref = TeacherForcedLogits(*one->model, full);
    ASSERT_TRUE(got.ok() && ref.ok()) << got.status().ToString();
    EXPECT_NORMALIZED_NEAR(ref->data(), got->data(), ref->size(), kF32Bound) << id;
    const int64_t V = 512;
    for (size_t pos = prompt.size() - 1; pos + 1 < full.size(); ++pos) {
      const float* row = got->data() + pos * V;
      EXPECT_EQ(std::max_element(row, row + V) - row, full[pos + 1])
          << id << ": greedy token at position " << pos;
    }
    if (cs.contains("logits")) {
      auto lj = cs["logits"].is_string() ? nlohmann::json::parse(cs["logits"].get<std::string>())
                                         : cs["logits"];
      const auto want = lj.get<std::vector<std::vector<float>>>();
      double max_err = 0;
      for (size_t pos = 0; pos < want.size() && pos < full.size(); ++pos) {
        for (int64_t v = 0; v < V; ++v) {
          max_err = std::max(max_err, std::fabs(double((*got)[pos * V + v]) - want[pos][v]));
        }
      }
      EXPECT_LT(max_err, 1e-4) << id << ": logits against the recorded float64 ones";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, Stories260KParallelTest,
                         ::testing::Values(StoriesCase{"stories260K.gguf", 2},
                                           StoriesCase{"stories260K.gguf", 4},
                                           StoriesCase{"stories260K-f16.gguf", 4},
                                           StoriesCase{"stories260K-q8_0.gguf", 2}),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + "_tp" +
                                           std::to_string(std::get<1>(info.param));
                           for (char& c : n) {
                             if (c == '.' || c == '-') c = '_';
                           }
                           return n;
                         });

// Q8_0 attn_output of stories260K has 64 columns: 4 ranks would cut its 32-element blocks.
TEST(ModelParallelTest, RefusesASplitInsideAQuantBlock) {
  auto tp = LoadOn(testing::TestDataPath("models/stories260K-q8_0.gguf"), 4);
  ASSERT_FALSE(tp->status.ok());
  EXPECT_EQ(tp->status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tp->status.message().find("attn_output"), std::string::npos) << tp->status.ToString();
  EXPECT_NE(tp->status.message().find("block boundary"), std::string::npos);
}

TEST(ModelParallelTest, RefusesHeadsThatDoNotDivide) {
  auto tp = LoadOn(testing::TestDataPath("models/stories260K.gguf"), 3);  // 8 heads
  ASSERT_FALSE(tp->status.ok());
  EXPECT_EQ(tp->status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tp->status.message().find("8 attention heads do not divide by 3"), std::string::npos)
      << tp->status.ToString();
}

TEST(ModelParallelTest, NeedsACollectiveOfAsManyRanks) {
  auto a = MakeCpuBackend(), b = MakeCpuBackend();
  auto m = ModelRunner::LoadParallel(testing::TestDataPath("models/stories260K.gguf"),
                                     {a.get(), b.get()}, nullptr);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  auto three = MakeHostCollective(3);
  m = ModelRunner::LoadParallel(testing::TestDataPath("models/stories260K.gguf"),
                                {a.get(), b.get()}, three.get());
  EXPECT_FALSE(m.ok());
}

struct SynthCase {
  std::string name, format, arch;
  int n;
  int64_t n_head_kv, n_vocab;
  bool tied;
};

void PrintTo(const SynthCase& c, std::ostream* os) { *os << c.name; }

class ModelParallelSynthTest : public ::testing::TestWithParam<SynthCase> {};

TEST_P(ModelParallelSynthTest, TeacherForcedEqualsOneRankAndWeightsAreSplit) {
  const SynthCase& c = GetParam();
  ModelSpec spec;
  spec.arch = c.arch;
  spec.name = "tp-" + c.name;
  spec.n_embd = 256 * c.n;  // attn_output's split: 256 columns per rank, a K-quant super-block
  spec.n_head = 8;
  spec.n_head_kv = c.n_head_kv;
  spec.n_ff = 256 * c.n;
  spec.n_layer = 2;
  spec.n_vocab = c.n_vocab;
  spec.tied_embeddings = c.tied;
  spec.qkv_bias = c.arch == "qwen2";
  ASSERT_TRUE(SetWeightFormat(c.format, &spec).ok()) << c.format;
  const std::string path = testing::TempDir() + "/" + spec.name + ".gguf";
  auto made = MakeModel(spec, path);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  auto one = LoadOn(path, 1);
  auto tp = LoadOn(path, c.n);
  ASSERT_TRUE(one->status.ok()) << one->status.ToString();
  ASSERT_TRUE(tp->status.ok()) << tp->status.ToString();

  // Every rank holds its share of the weight bytes: 1/N of each matrix (the vocabulary may split
  // unevenly by a row), but a replicated KV head's k/v rows are held by N / n_head_kv ranks.
  const ModelWeights& hw = one->model->host_weights();
  const int64_t total = WeightMatrixBytes(hw, /*with_token_embd=*/true);
  int64_t kv = 0;
  for (const LayerWeights& l : hw.layers) kv += l.wk.bytes() + l.wv.bytes();
  const double kv_share = c.n_head_kv >= c.n ? 1.0 / c.n : 1.0 / c.n_head_kv;
  const double want = static_cast<double>(total - kv) / c.n + kv * kv_share;
  int64_t sum = 0;
  for (int r = 0; r < c.n; ++r) {
    const int64_t bytes = WeightMatrixBytes(tp->model->host_weights(r), true);
    sum += bytes;
    EXPECT_NEAR(static_cast<double>(bytes), want, 0.01 * want) << "rank " << r;
  }
  if (c.n_head_kv >= c.n) {
    EXPECT_EQ(sum, total);  // nothing replicated
  }
  EXPECT_EQ(tp->model->CacheShape(1).n_kv_heads, std::max<int64_t>(1, c.n_head_kv / c.n));

  const std::vector<int32_t> ids = Tokens(29, c.n_vocab, 4);
  auto ref = TeacherForcedLogits(*one->model, ids);
  auto got = TeacherForcedLogits(*tp->model, ids);
  auto chunked = TeacherForcedLogits(*tp->model, ids, 5);
  ASSERT_TRUE(ref.ok() && got.ok() && chunked.ok()) << got.status().ToString();
  EXPECT_NORMALIZED_NEAR(ref->data(), got->data(), ref->size(), kF32Bound) << "one forward";
  EXPECT_NORMALIZED_NEAR(ref->data(), chunked->data(), ref->size(), kF32Bound) << "chunks of 5";
  EXPECT_EQ(tp->model->stats().eager_forwards, 1 + (29 + 4) / 5);
}

INSTANTIATE_TEST_SUITE_P(
    Splits, ModelParallelSynthTest,
    ::testing::Values(SynthCase{"f32_tp2", "f32", "llama", 2, 2, 1003, false},
                      SynthCase{"f32_tp4_kv_replicated", "f32", "llama", 4, 2, 1003, true},
                      SynthCase{"qwen2_f16_tp2", "f16", "qwen2", 2, 4, 1000, false},
                      SynthCase{"q8_0_tp4", "q8_0", "llama", 4, 4, 1001, false},
                      SynthCase{"q4_k_tp2", "q4_k", "llama", 2, 2, 1024, false},
                      SynthCase{"q6_k_tp4", "q6_k", "llama", 4, 8, 999, true},
                      SynthCase{"q4_k_m_tp2", "q4_k_m", "llama", 2, 2, 1003, false}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace forge
