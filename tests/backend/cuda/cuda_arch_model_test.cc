// Gemma 2 / 3 and the mixtures of experts on the GPU: teacher-forced logits of synthetic files
// (head dim 64, sliding windows of 8 keys, soft-caps; 8 experts of which 3 a token) on the CUDA
// backend in F32 against the CPU backend, and in prefill chunks against one prefill; the dense
// ones also in F16 (a half type's bound; the experts' choice may flip on a near-tie in F16, so
// the mixtures are compared in F32 only); decode steps as graphs against op by op, and batched
// against alone.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_backend.h"
#include "modelgen/model_maker.h"
#include "runtime/model_runner.h"
#include "runtime/teacher_forced.h"
#include "support/decode_steps.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

struct Arch {
  const char* arch;
  int64_t window = 0, n_expert = 0, n_ff_shexp = 0;
  float attn_cap = 0, final_cap = 0;
};

std::string Make(const Arch& a, const std::string& dir) {
  ModelSpec s;
  s.arch = a.arch;
  s.n_vocab = 300;
  s.n_embd = 256;
  s.n_layer = 3;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.n_ff = 256;
  s.sliding_window = a.window;
  s.attn_softcap = a.attn_cap;
  s.final_softcap = a.final_cap;
  s.n_expert = a.n_expert;
  s.n_expert_used = a.n_expert > 0 ? 3 : 0;
  s.n_ff_exp = a.n_expert > 0 ? 128 : 0;
  s.n_ff_shexp = a.n_ff_shexp;
  s.qkv_bias = std::string(a.arch) == "qwen2moe";
  s.threads = 2;
  const std::string path = dir + "/" + a.arch + ".gguf";
  auto made = MakeModel(s, path);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return path;
}

class CudaArchModelTest : public ::testing::TestWithParam<Arch> {};

TEST_P(CudaArchModelTest, GpuEqualsCpuAndChunkedEqualsOneShot) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const Arch& a = GetParam();
  const std::string path = Make(a, testing::TempDir());
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok());
  auto cpu = MakeCpuBackend();
  auto mc = ModelRunner::Load(path, cpu.get());
  ASSERT_TRUE(mc.ok()) << mc.status().ToString();
  std::vector<int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back((i * 97 + 13) % 300);
  auto ref = TeacherForcedLogits(**mc, ids);
  ASSERT_TRUE(ref.ok());
  std::vector<DType> dtypes = {DType::kF32};
  if (a.n_expert == 0) dtypes.push_back(DType::kF16);
  for (DType dt : dtypes) {
    auto mg = ModelRunner::Load(path, gpu->get(), {}, {dt});
    ASSERT_TRUE(mg.ok()) << mg.status().ToString();
    auto one = TeacherForcedLogits(**mg, ids);
    auto chunked = TeacherForcedLogits(**mg, ids, 17);
    ASSERT_TRUE(one.ok() && chunked.ok()) << one.status().ToString();
    const double bound = dt == DType::kF32 ? 1e-5 : 1e-2;
    EXPECT_NORMALIZED_NEAR(ref->data(), one->data(), ref->size(), bound)
        << a.arch << " GPU vs CPU, " << DTypeName(dt);
    EXPECT_NORMALIZED_NEAR(one->data(), chunked->data(), one->size(), bound)
        << a.arch << " chunked vs one-shot, " << DTypeName(dt);
  }
}

// Decode steps in F16 recorded as graphs equal the same steps run op by op, and batched equal
// each sequence alone (the windows move with every step); the mixtures run op by op (their steps
// read the routing back), so they record no graph.
TEST_P(CudaArchModelTest, GraphReplayEqualsEagerAndBatchedEqualsAlone) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const Arch& a = GetParam();
  const std::string path = Make(a, testing::TempDir());
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok());
  auto m = ModelRunner::Load(path, gpu->get(), {}, {DType::kF16});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ModelRunner& model = **m;
  const int n = 4, steps = 10;
  auto run = [&](bool batched) {
    auto cache = KvCache::Create(model.backend(), model.CacheShape(16 * n, 16));
    EXPECT_TRUE(cache.ok());
    return testing::DecodeSteps(model, **cache, n, steps, batched);
  };
  model.set_graphs_enabled(false);
  const auto eager = run(true);
  model.set_graphs_enabled(true);
  const int64_t replays0 = model.stats().graph_replays;
  const auto graphed = run(true);
  const auto alone = run(false);
  if (a.n_expert == 0) {
    EXPECT_GE(model.stats().graph_replays - replays0, steps) << "decode steps replayed";
  } else {
    EXPECT_EQ(model.stats().graph_replays, replays0) << "a mixture's steps run op by op";
  }
  for (int s = 0; s < n; ++s) {
    const int64_t size = static_cast<int64_t>(eager[s].size());
    EXPECT_NORMALIZED_NEAR(eager[s].data(), graphed[s].data(), size, 1e-2)
        << a.arch << " sequence " << s << ": graph vs eager";
    EXPECT_NORMALIZED_NEAR(alone[s].data(), graphed[s].data(), size, 1e-2)
        << a.arch << " sequence " << s << ": batched vs alone";
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, CudaArchModelTest,
                         ::testing::Values(Arch{"gemma2", 8, 0, 0, 4.0f, 5.0f}, Arch{"gemma3", 8},
                                           Arch{"qwen3moe", 0, 8}, Arch{"qwen2moe", 0, 8, 96},
                                           Arch{"llama", 0, 8}),
                         [](const ::testing::TestParamInfo<Arch>& info) {
                           return std::string(info.param.arch) +
                                  (info.param.n_expert ? "_experts" : "");
                         });

}  // namespace
}  // namespace forge
