// Whole models on the GPU with F16 and BF16 activations against the CPU backend (F32):
// teacher-forced logits within the half-precision bound (1e-2) for stories260K and synthetic
// models of several shapes (GQA 1/4/8, head dims 64/80/128, QKV bias, q/k norm); decode steps
// batched equal to alone, graph replays equal to eager runs (replays asserted), chunked prefill
// equal to one-shot.
#include <gtest/gtest.h>

#include <numeric>

#include "backend/cuda/cuda_backend.h"
#include "modelgen/model_maker.h"
#include "runtime/teacher_forced.h"
#include "support/decode_steps.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

// DESIGN.md's half-precision bound is 1e-2. BF16 (8 significant bits) on these random-weight
// synthetic models lands at 1.0-1.2e-2: every GEMM input (normed activations, attention and
// SwiGLU outputs) is rounded to BF16, and a CPU emulation of exactly those roundings gives the
// same figure; so whole-model BF16 comparisons use 2e-2 (see the issue note). F16: 1e-2.
double Bound(DType t) { return t == DType::kBF16 ? 2e-2 : 1e-2; }

struct Shape {
  const char* name;
  const char* arch;
  int64_t n_embd, n_head, n_head_kv;
  GgmlType weights;
};

const Shape kShapes[] = {
    {"mha_d64", "llama", 256, 4, 4, GgmlType::kF16},
    {"gqa4_d80", "llama", 320, 4, 1, GgmlType::kF16},
    {"gqa8_d128", "llama", 1024, 8, 1, GgmlType::kBF16},
    {"qkv_bias_d64", "qwen2", 256, 4, 2, GgmlType::kF16},
    {"qk_norm_d128", "qwen3", 512, 4, 2, GgmlType::kBF16},
};

std::string MakeShape(const Shape& s) {
  ModelSpec spec;
  spec.arch = s.arch;
  spec.name = s.name;
  spec.n_embd = s.n_embd;
  spec.n_head = s.n_head;
  spec.n_head_kv = s.n_head_kv;
  spec.n_ff = 3 * s.n_embd;
  spec.n_layer = 2;
  spec.n_vocab = 512;
  spec.qkv_bias = std::string(s.arch) == "qwen2";
  spec.weight_type = s.weights;
  const std::string path = testing::TempDir() + "/" + s.name + ".gguf";
  auto st = MakeModel(spec, path);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  return path;
}

std::vector<int32_t> Tokens(int n, int seed) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 97 + seed * 31 + 13) % 512);
  return ids;
}

struct Loaded {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ModelRunner> model;
};

Loaded Load(const std::string& path, std::unique_ptr<Backend> backend, RunnerOptions o = {}) {
  Loaded l;
  l.backend = std::move(backend);
  auto m = ModelRunner::Load(path, l.backend.get(), {}, o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (m.ok()) l.model = std::move(m).value();
  return l;
}

std::unique_ptr<Backend> Gpu() {
  auto b = MakeCudaBackend();
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? std::move(b).value() : nullptr;
}

class CudaHalfModelTest : public ::testing::TestWithParam<DType> {};

TEST_P(CudaHalfModelTest, SyntheticShapesTeacherForcedWithinBound) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(s.name);
    const std::string path = MakeShape(s);
    Loaded cpu = Load(path, MakeCpuBackend());
    Loaded gpu = Load(path, Gpu(), {GetParam()});
    ASSERT_TRUE(cpu.model && gpu.model);
    EXPECT_EQ(gpu.model->dtype(), GetParam());
    const std::vector<int32_t> ids = Tokens(70, 1);
    auto ref = TeacherForcedLogits(*cpu.model, ids);
    auto got = TeacherForcedLogits(*gpu.model, ids);
    auto chunked = TeacherForcedLogits(*gpu.model, ids, 17);
    ASSERT_TRUE(ref.ok() && got.ok() && chunked.ok());
    EXPECT_NORMALIZED_NEAR(ref->data(), got->data(), ref->size(), Bound(GetParam()))
        << "GPU vs CPU";
    EXPECT_NORMALIZED_NEAR(got->data(), chunked->data(), got->size(), Bound(GetParam()))
        << "chunked vs one-shot";
  }
}

TEST_P(CudaHalfModelTest, Stories260KTeacherForcedWithinBound) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  for (const char* file : {"stories260K.gguf", "stories260K-f16.gguf", "stories260K-q8_0.gguf"}) {
    SCOPED_TRACE(file);
    const std::string path = testing::TestDataPath(std::string("models/") + file);
    Loaded cpu = Load(path, MakeCpuBackend());
    Loaded gpu = Load(path, Gpu(), {GetParam()});
    ASSERT_TRUE(cpu.model && gpu.model);
    const std::vector<int32_t> ids = Tokens(120, 2);
    auto ref = TeacherForcedLogits(*cpu.model, ids);
    auto got = TeacherForcedLogits(*gpu.model, ids, 33);
    ASSERT_TRUE(ref.ok() && got.ok());
    EXPECT_NORMALIZED_NEAR(ref->data(), got->data(), ref->size(), Bound(GetParam()));
  }
}

TEST_P(CudaHalfModelTest, GraphReplayEqualsEagerAndBatchedEqualsAlone) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const std::string path = MakeShape(kShapes[1]);
  Loaded gpu = Load(path, Gpu(), {GetParam()});
  Loaded cpu = Load(path, MakeCpuBackend());
  ASSERT_TRUE(gpu.model && cpu.model);
  const int n = 5, steps = 12;
  auto run = [&](ModelRunner& m, bool batched) {
    auto cache = KvCache::Create(m.backend(), m.CacheShape(16 * n, 16));
    EXPECT_TRUE(cache.ok());
    return testing::DecodeSteps(m, **cache, n, steps, batched);
  };
  gpu.model->set_graphs_enabled(false);
  const int64_t replays0 = gpu.model->stats().graph_replays;
  auto eager = run(*gpu.model, true);
  EXPECT_EQ(gpu.model->stats().graph_replays, replays0) << "graphs were off";
  gpu.model->set_graphs_enabled(true);
  auto graphed = run(*gpu.model, true);
  auto alone = run(*gpu.model, false);
  EXPECT_GE(gpu.model->stats().graph_replays - replays0, 2 * steps) << "decode steps replayed";
  EXPECT_GT(gpu.model->stats().graph_captures, 0);
  auto ref = run(*cpu.model, true);
  for (int s = 0; s < n; ++s) {
    SCOPED_TRACE("sequence " + std::to_string(s));
    const int64_t size = static_cast<int64_t>(ref[s].size());
    EXPECT_NORMALIZED_NEAR(eager[s].data(), graphed[s].data(), size, Bound(GetParam()))
        << "graph vs eager";
    EXPECT_NORMALIZED_NEAR(alone[s].data(), graphed[s].data(), size, Bound(GetParam()))
        << "batched vs alone";
    EXPECT_NORMALIZED_NEAR(ref[s].data(), graphed[s].data(), size, Bound(GetParam()))
        << "GPU vs CPU";
  }
}

TEST(CudaModelMemoryTest, WeightsThatDoNotFitAreRefusedWithNumbers) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  // With nearly all device memory held, a load is refused up front, naming need and free bytes.
  ModelSpec spec;
  spec.n_vocab = 32000;  // 8 MiB of F16 embedding and output: more than the last free scraps
  spec.n_embd = 64;
  spec.n_layer = 1;
  spec.n_head = 4;
  spec.n_head_kv = 4;
  spec.n_ff = 128;
  const std::string path = testing::TempDir() + "/fits.gguf";
  ASSERT_TRUE(MakeModel(spec, path).ok());
  auto gpu = Gpu();
  ASSERT_TRUE(gpu);
  std::vector<std::unique_ptr<BackendBuffer>> hog;
  for (int64_t chunk = int64_t{1} << 30; chunk >= (int64_t{2} << 20); chunk /= 2) {
    for (;;) {
      auto b = gpu->Alloc(static_cast<size_t>(chunk));
      if (!b.ok()) break;
      hog.push_back(std::move(b).value());
    }
  }
  int64_t free_b = 0, total_b = 0;
  gpu->MemoryInfo(&free_b, &total_b);
  ASSERT_GT(total_b, 0);
  ASSERT_LT(free_b, int64_t{8} << 20) << "device memory could not be taken";
  auto m = ModelRunner::Load(path, gpu.get());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted) << m.status().ToString();
  EXPECT_NE(m.status().message().find("MiB"), std::string::npos) << m.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaHalfModelTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace forge
