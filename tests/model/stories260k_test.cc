// stories260K (a real trained llama model) on the CPU backend: the expected greedy token
// sequences of ../shared/testdata/models/stories260K.expected.json exactly, for the F32, F16 and
// Q8_0 files, and the recorded float64 logits within 1e-4.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/model_runner.h"
#include "sched/block_pool.h"
#include "support/test_env.h"

namespace forge {
namespace {

nlohmann::json LoadExpected() {
  std::ifstream in(testing::TestDataPath("models/stories260K.expected.json"));
  return nlohmann::json::parse(in);
}

std::vector<int32_t> Ids(const nlohmann::json& v) {
  // Some fields are stored as JSON text.
  nlohmann::json j = v.is_string() ? nlohmann::json::parse(v.get<std::string>()) : v;
  return j.get<std::vector<int32_t>>();
}

int32_t Argmax(const float* x, int64_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

class Stories260KTest : public ::testing::TestWithParam<std::string> {};

TEST_P(Stories260KTest, GreedyPathsAndLogits) {
  const std::string file = GetParam();
  auto backend = MakeCpuBackend();
  auto model = ModelRunner::Load(testing::TestDataPath("models/" + file), backend.get());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.n_vocab, 512);
  EXPECT_EQ(c.head_dim, 8);
  nlohmann::json expected = LoadExpected()["models"][file];
  ASSERT_FALSE(expected.is_null()) << file;
  for (const auto& cs : expected["cases"]) {
    const std::string id = cs["id"];
    const int steps = cs["steps"].is_string() ? std::stoi(cs["steps"].get<std::string>())
                                              : cs["steps"].get<int>();
    const std::vector<int32_t> prompt = Ids(cs["prompt_ids"]);
    const std::vector<int32_t> want = Ids(cs["ids_after_bos"]);
    std::vector<std::vector<float>> want_logits;
    if (cs.contains("logits")) {
      auto lj = cs["logits"].is_string() ? nlohmann::json::parse(cs["logits"].get<std::string>())
                                         : cs["logits"];
      want_logits = lj.get<std::vector<std::vector<float>>>();
    }
    const int block_size = 16;
    auto cache = KvCache::Create(*backend, (*model)->CacheShape(64, block_size));
    ASSERT_TRUE(cache.ok());
    BlockPool pool(64);
    SequenceBlocks seq;
    std::vector<int32_t> tokens = {prompt[0]};
    std::vector<float> logits;
    double max_err = 0;
    for (int pos = 0; pos < steps; ++pos) {
      ASSERT_TRUE(seq.Reserve(pool, pos + 1, block_size).ok());
      ForwardBatch b;
      b.block_size = block_size;
      ASSERT_TRUE(b.AddSequence({tokens[pos]}, pos, seq.blocks).ok());
      b.Finish();
      ASSERT_TRUE((*model)->Forward(b, **cache, &logits).ok());
      if (pos < static_cast<int>(want_logits.size())) {
        for (int v = 0; v < 512; ++v) {
          max_err = std::max(max_err, std::fabs(double(logits[v]) - want_logits[pos][v]));
        }
      }
      int32_t next = pos + 1 < static_cast<int>(prompt.size()) ? prompt[pos + 1]
                                                               : Argmax(logits.data(), 512);
      if (next == 1) break;
      tokens.push_back(next);
    }
    std::vector<int32_t> got(tokens.begin() + 1, tokens.end());
    EXPECT_EQ(got, want) << file << " case " << id;
    if (!want_logits.empty()) {
      EXPECT_LT(max_err, 1e-4) << file << " case " << id << ": logits max abs error";
      std::printf("%s %s: %zu tokens match, logits max abs err %.3g over %zu positions\n",
                  file.c_str(), id.c_str(), got.size(), max_err, want_logits.size());
    }
    seq.Release(pool);
    EXPECT_EQ(pool.num_used(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, Stories260KTest,
                         ::testing::Values("stories260K.gguf", "stories260K-f16.gguf",
                                           "stories260K-q8_0.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '.', '_');
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace forge
