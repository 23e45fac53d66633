// Whole models on the CUDA backend with F32 activations against the CPU backend: stories260K's
// expected greedy text, teacher-forced logits within the F32 bound, chunked prefill equal to
// one-shot.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cuda/cuda_backend.h"
#include "runtime/teacher_forced.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

std::vector<int32_t> Ids(const nlohmann::json& v) {
  return (v.is_string() ? nlohmann::json::parse(v.get<std::string>()) : v)
      .get<std::vector<int32_t>>();
}

class CudaStoriesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaStoriesTest, GreedyPathsMatchExpected) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  // F32 activations: the expected greedy paths hold exactly.
  auto model = ModelRunner::Load(testing::TestDataPath("models/" + GetParam()), gpu->get(), {},
                                 {DType::kF32});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::ifstream in(testing::TestDataPath("models/stories260K.expected.json"));
  auto expected = nlohmann::json::parse(in)["models"][GetParam()];
  for (const auto& cs : expected["cases"]) {
    const std::vector<int32_t> prompt = Ids(cs["prompt_ids"]), want = Ids(cs["ids_after_bos"]);
    const int steps = cs["steps"].is_string() ? std::stoi(cs["steps"].get<std::string>())
                                              : cs["steps"].get<int>();
    auto cache = KvCache::Create(**gpu, (*model)->CacheShape(16, 16));
    ASSERT_TRUE(cache.ok());
    std::vector<int32_t> table(16);
    for (int i = 0; i < 16; ++i) table[i] = 15 - i;  // scattered
    std::vector<int32_t> tokens = {prompt[0]};
    std::vector<float> logits;
    for (int pos = 0; pos < steps; ++pos) {
      ForwardBatch b;
      ASSERT_TRUE(b.AddSequence({tokens[pos]}, pos, table).ok());
      b.Finish();
      ASSERT_TRUE((*model)->Forward(b, **cache, &logits).ok());
      int32_t next = pos + 1 < static_cast<int>(prompt.size())
                         ? prompt[pos + 1]
                         : static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) -
                                                logits.begin());
      if (next == 1) break;
      tokens.push_back(next);
    }
    EXPECT_EQ(std::vector<int32_t>(tokens.begin() + 1, tokens.end()), want) << cs["id"];
  }
}

INSTANTIATE_TEST_SUITE_P(Files, CudaStoriesTest,
                         ::testing::Values("stories260K.gguf", "stories260K-f16.gguf",
                                           "stories260K-q8_0.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(CudaModelTest, TeacherForcedEqualsCpuAndChunkedEqualsOneShot) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok());
  auto cpu = MakeCpuBackend();
  const std::string path = testing::TestDataPath("models/stories260K.gguf");
  auto mg = ModelRunner::Load(path, gpu->get(), {}, {DType::kF32});
  auto mc = ModelRunner::Load(path, cpu.get());
  ASSERT_TRUE(mg.ok() && mc.ok());
  std::vector<int32_t> ids;
  for (int i = 0; i < 100; ++i) ids.push_back((i * 97 + 13) % 512);
  auto ref = TeacherForcedLogits(**mc, ids);
  auto one = TeacherForcedLogits(**mg, ids);
  auto chunked = TeacherForcedLogits(**mg, ids, 17);
  ASSERT_TRUE(ref.ok() && one.ok() && chunked.ok());
  EXPECT_NORMALIZED_NEAR(ref->data(), one->data(), ref->size(), 1e-5) << "GPU vs CPU";
  EXPECT_NORMALIZED_NEAR(one->data(), chunked->data(), one->size(), 1e-5) << "chunked vs one-shot";
}

}  // namespace
}  // namespace forge
