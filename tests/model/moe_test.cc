// Mixture-of-experts models (Mixtral as llama with experts, Qwen2-MoE with its shared expert,
// Qwen3-MoE) against the dense forward of support/dense_forward.h, on the reference and CPU
// backends, in one prefill, in chunks and token by token; a router that sends every token to one
// expert; and the files Forge refuses, by name.
#include <gtest/gtest.h>

#include <cmath>

#include "modelgen/model_maker.h"
#include "runtime/model_runner.h"
#include "runtime/teacher_forced.h"
#include "support/dense_forward.h"
#include "support/gguf_rewrite.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::DenseSpec;

struct Made {
  std::string path;
  DenseSpec dense;
};

// A small synthetic file of `arch` with 8 experts of 48 features, 3 used a token.
Made MakeMoe(const std::string& dir, const std::string& arch, int64_t shared = 0) {
  ModelSpec spec = testing::SmallSpec(arch, 2);
  spec.n_expert = 8;
  spec.n_expert_used = 3;
  spec.n_ff_exp = 48;
  spec.n_ff_shexp = shared;
  spec.qkv_bias = arch == "qwen2moe";
  const std::string path = dir + "/" + arch + ".gguf";
  auto made = MakeModel(spec, path);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  DenseSpec d{.layers = {{}, {}},
              .neox = arch != "llama",
              .qkv_bias = arch == "qwen2moe",
              .qk_norm = arch == "qwen3moe",
              .k = 3,
              .norm_topk = arch != "qwen2moe"};  // Mixtral and Qwen3-MoE renormalize
  return {path, d};
}

void Compare(const std::string& path, const DenseSpec& d, std::unique_ptr<Backend> backend,
             double bound) {
  testing::ExpectMatchesDenseForward(path, d, *backend, testing::SmallPrompt(33), bound);
}

TEST(MoeTest, Qwen3MoeMatchesTheDenseForward) {
  const Made m = MakeMoe(testing::TempDir(), "qwen3moe");
  Compare(m.path, m.dense, MakeReferenceBackend(), 1e-6);
  Compare(m.path, m.dense, MakeCpuBackend(), 1e-4);
}

TEST(MoeTest, Qwen2MoeWithASharedExpertMatchesTheDenseForward) {
  const Made m = MakeMoe(testing::TempDir(), "qwen2moe", 80);
  Compare(m.path, m.dense, MakeReferenceBackend(), 1e-6);
  Compare(m.path, m.dense, MakeCpuBackend(), 1e-4);
}

TEST(MoeTest, MixtralMatchesTheDenseForward) {
  const Made m = MakeMoe(testing::TempDir(), "llama");
  Compare(m.path, m.dense, MakeReferenceBackend(), 1e-6);
  Compare(m.path, m.dense, MakeCpuBackend(), 1e-4);
}

// A router whose rows for experts 1 to 7 are zero: their logits tie at 0 and go by index, so every
// token takes experts 1 and 2 (and 0 or 3, by the sign of expert 0's logit) and experts 4 to 7
// receive no token.
TEST(MoeTest, OneExpertTakingEveryTokenMatchesTheDenseForward) {
  const std::string dir = testing::TempDir();
  const Made m = MakeMoe(dir, "qwen3moe");
  const std::string path = testing::RewriteGguf(
      m.path, dir + "/one.gguf", {}, "", [](const std::string& name, std::vector<uint8_t>& b) {
        if (name.find("ffn_gate_inp.weight") == std::string::npos) {
          return;
        }
        float* w = reinterpret_cast<float*>(b.data());
        for (int64_t i = 64; i < 8 * 64; ++i) w[i] = 0.0f;
      });
  Compare(path, m.dense, MakeReferenceBackend(), 1e-6);
  Compare(path, m.dense, MakeCpuBackend(), 1e-4);
}

TEST(MoeTest, BadFilesAreRefusedNamingWhy) {
  const std::string dir = testing::TempDir();
  const Made m = MakeMoe(dir, "qwen3moe");
  std::unique_ptr<Backend> cpu = MakeCpuBackend();
  auto load = [&](const std::string& path) { return ModelRunner::Load(path, cpu.get()).status(); };
  Status s = load(testing::RewriteGguf(m.path, dir + "/g.gguf",
                                       {{"qwen3moe.expert_gating_func", GgufValue::U32(7)}}));
  EXPECT_NE(s.message().find("expert_gating_func 7"), std::string::npos) << s.ToString();
  s = load(testing::RewriteGguf(m.path, dir + "/u.gguf",
                                {{"qwen3moe.expert_used_count", GgufValue::U32(9)}}));
  EXPECT_NE(s.message().find("qwen3moe.expert_used_count"), std::string::npos) << s.ToString();
  s = load(testing::RewriteGguf(m.path, dir + "/n.gguf",
                                {{"qwen3moe.expert_count", GgufValue::U32(0)}}));
  EXPECT_NE(s.message().find("qwen3moe.expert_count"), std::string::npos) << s.ToString();
  s = load(testing::RewriteGguf(m.path, dir + "/d.gguf", {}, "blk.1.ffn_up_exps.weight"));
  EXPECT_NE(s.message().find("blk.1.ffn_up_exps.weight"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace forge
