// Embedding models on the GPU: BERT (mean pooling), nomic-bert (CLS) and a qwen3 decoder with
// last-token pooling, their vectors for inputs of 1 to 300 tokens embedded together through the
// Engine on the CUDA backend in F32 and F16, against the CPU backend's (support/dense_encoder.h
// and bert_test.cc check those against forward passes written apart).
#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.h"
#include "engine/engine.h"
#include "modelgen/model_maker.h"
#include "runtime/model_runner.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

struct Case {
  const char* arch;
  int pooling;
};

std::string Make(const Case& c, const std::string& dir) {
  ModelSpec s;
  s.arch = c.arch;
  s.pooling = c.pooling;
  s.n_vocab = 300;
  s.n_embd = 256;
  s.n_layer = 3;
  s.n_head = 4;
  s.n_head_kv = std::string(c.arch) == "qwen3" ? 2 : 4;
  s.n_ff = 384;
  s.n_ctx = 512;
  s.rms_eps = std::string(c.arch) == "qwen3" ? 1e-6f : 1e-12f;
  s.threads = 2;
  const std::string path = dir + "/" + c.arch + ".gguf";
  auto made = MakeModel(s, path);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return path;
}

// The vectors of `prompts`, submitted together.
std::vector<float> Embed(ModelRunner& model, const std::vector<std::vector<int32_t>>& prompts) {
  EngineOptions o;
  o.ctx_size = 512;
  o.num_kv_blocks = 128;
  o.max_num_seqs = 8;
  o.max_num_batched_tokens = 512;
  o.check_invariants = true;
  auto engine = Engine::Create(model, nullptr, o);
  EXPECT_TRUE(engine.ok()) << engine.status().ToString();
  std::vector<RequestHandle> handles;
  for (const auto& ids : prompts) {
    EngineRequest r;
    r.prompt_ids = ids;
    r.embed = true;
    auto h = (*engine)->Submit(r);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    handles.push_back(*h);
  }
  EXPECT_TRUE((*engine)->RunUntilIdle().ok());
  std::vector<float> all;
  for (RequestHandle& h : handles) {
    RequestEvent ev;
    while (h.events->Next(&ev)) {
      EXPECT_TRUE(ev.status.ok()) << ev.status.ToString();
      all.insert(all.end(), ev.embedding.begin(), ev.embedding.end());
    }
  }
  EXPECT_EQ((*engine)->stats().kv_blocks_used, 0);
  return all;
}

class CudaEmbeddingModelTest : public ::testing::TestWithParam<Case> {};

TEST_P(CudaEmbeddingModelTest, GpuEqualsCpu) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const Case& c = GetParam();
  const std::string path = Make(c, testing::TempDir());
  std::vector<std::vector<int32_t>> prompts;
  for (int n : {1, 7, 40, 100, 300}) {
    std::vector<int32_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back((i * 97 + 13 + n) % 300);
    prompts.push_back(ids);
  }
  auto cpu = MakeCpuBackend();
  auto mc = ModelRunner::Load(path, cpu.get());
  ASSERT_TRUE(mc.ok()) << mc.status().ToString();
  const std::vector<float> ref = Embed(**mc, prompts);
  ASSERT_EQ(ref.size(), prompts.size() * 256);
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok());
  for (DType dt : {DType::kF32, DType::kF16}) {
    auto mg = ModelRunner::Load(path, gpu->get(), {}, {dt});
    ASSERT_TRUE(mg.ok()) << mg.status().ToString();
    const std::vector<float> got = Embed(**mg, prompts);
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), ref.size(), dt == DType::kF32 ? 1e-5 : 1e-2)
        << c.arch << " GPU vs CPU, " << DTypeName(dt);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, CudaEmbeddingModelTest,
                         ::testing::Values(Case{"bert", 1}, Case{"nomic-bert", 2},
                                           Case{"qwen3", 3}),
                         [](const auto& info) {
                           std::string n = info.param.arch;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

}  // namespace
}  // namespace forge
