// Gemma 2 and Gemma 3 against a forward pass written apart from Forge's (support/dense_forward.h:
// embeddings times sqrt(n_embd), pre- and post-norms, GeGLU with tanh GELU, q/k norms, NeoX rope
// with each layer's base and scale, soft-capped scores and logits, causal sliding windows) over
// the F32 weights of synthetic files. The expected layer kinds, rope bases and scales are
// llama.cpp's rules for each family, written out per layer here.
// Also: the keys' defaults when a file leaves them out, and bad keys refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "modelgen/model_maker.h"
#include "runtime/model_runner.h"
#include "runtime/teacher_forced.h"
#include "support/dense_forward.h"
#include "support/gguf_rewrite.h"
#include "support/test_env.h"

namespace forge {
namespace {

using Keys = std::vector<std::pair<std::string, GgufValue>>;

GgufValue Flags(std::initializer_list<bool> flags) {
  std::vector<GgufValue> items;
  for (bool f : flags) items.push_back(GgufValue::Bool(f));
  return GgufValue::Array(GgufType::kBool, std::move(items));
}

// The file at src with `keys` set (added or replaced), written as dir/name.gguf.
std::string Rewrite(const std::string& src, const std::string& dir, const std::string& name,
                    const Keys& keys) {
  return testing::RewriteGguf(src, dir + "/" + name + ".gguf", keys);
}

std::string MakeGemma(const std::string& dir, const std::string& arch, int64_t window,
                      float attn_cap, float final_cap) {
  ModelSpec spec = testing::SmallSpec(arch, 3);
  spec.sliding_window = window;
  spec.attn_softcap = attn_cap;
  spec.final_softcap = final_cap;
  spec.tied_embeddings = true;
  const std::string path = dir + "/" + arch + "-made.gguf";
  auto made = MakeModel(spec, path);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return path;
}

using testing::DenseSpec;

// Gemma's layer with the given layer kinds (window, rope base, rope scale) and caps.
DenseSpec Gemma(std::vector<DenseSpec::Layer> layers, double attn_cap, double final_cap,
                bool qk_norm) {
  return {.layers = std::move(layers),
          .qk_norm = qk_norm,
          .embd_scale = true,
          .post_norms = true,
          .gelu = true,
          .attn_cap = attn_cap,
          .final_cap = final_cap};
}

void Compare(const std::string& path, const DenseSpec& e, std::unique_ptr<Backend> backend,
             double bound) {
  testing::ExpectMatchesDenseForward(path, e, *backend, testing::SmallPrompt(40), bound);
}

TEST(GemmaTest, Gemma2MatchesTheDenseForward) {
  const std::string dir = testing::TempDir();
  // Window 8 on layers 0 and 2 (every other layer); caps low enough to bend the values.
  const std::string path = MakeGemma(dir, "gemma2", 8, 2.0f, 3.0f);
  const DenseSpec e = Gemma({{8, 10000, 1}, {0, 10000, 1}, {8, 10000, 1}}, 2.0, 3.0, false);
  Compare(path, e, MakeReferenceBackend(), 1e-6);
  Compare(path, e, MakeCpuBackend(), 1e-4);
}

TEST(GemmaTest, Gemma3MatchesTheDenseForward) {
  const std::string dir = testing::TempDir();
  const std::string made = MakeGemma(dir, "gemma3", 6, 0, 0);
  // Period 3: layers 0 and 1 windowed at base 500 unscaled, layer 2 global at the file's base
  // with linear scaling 1/4.
  const std::string path = Rewrite(made, dir, "gemma3",
                                   {{"gemma3.attention.sliding_window_pattern", GgufValue::U32(3)},
                                    {"gemma3.rope.freq_base_swa", GgufValue::F32(500.0f)},
                                    {"gemma3.rope.freq_base", GgufValue::F32(20000.0f)},
                                    {"gemma3.rope.scaling.type", GgufValue::String("linear")},
                                    {"gemma3.rope.scaling.factor", GgufValue::F32(4.0f)}});
  const DenseSpec e = Gemma({{6, 500, 1}, {6, 500, 1}, {0, 20000, 0.25}}, 0, 0, true);
  Compare(path, e, MakeReferenceBackend(), 1e-6);
  Compare(path, e, MakeCpuBackend(), 1e-4);
  // A final cap from the file applies to Gemma 3 too; a pattern as one flag per layer.
  const std::string capped =
      Rewrite(made, dir, "gemma3-capped",
              {{"gemma3.final_logit_softcapping", GgufValue::F32(2.5f)},
               {"gemma3.attention.sliding_window_pattern", Flags({false, true, false})}});
  Compare(capped, Gemma({{0, 10000, 1}, {6, 10000, 1}, {0, 10000, 1}}, 0, 2.5, true),
          MakeReferenceBackend(), 1e-6);
}

// What a file leaves out takes llama.cpp's default for the family.
TEST(GemmaTest, DefaultsOfEachFamily) {
  const std::string dir = testing::TempDir();
  auto config = [](const std::string& path) {
    auto f = GgufFile::Open(path);
    EXPECT_TRUE(f.ok());
    auto c = LoadModelConfig(**f);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return *c;
  };
  const ModelConfig g2 = config(MakeGemma(dir, "gemma2", 0, 0, 0));
  EXPECT_FLOAT_EQ(g2.attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(g2.final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(g2.embd_scale, 8.0f);
  EXPECT_FLOAT_EQ(g2.AttentionScale(), 0.25f);  // 1 / sqrt(head_dim 16)
  EXPECT_EQ(g2.layers[0].sliding_window, 4096);
  EXPECT_EQ(g2.layers[1].sliding_window, 0);
  EXPECT_EQ(g2.layers[2].sliding_window, 4096);
  const ModelConfig g3 = config(MakeGemma(dir, "gemma3", 0, 0, 0));
  EXPECT_EQ(g3.attn_softcap, 0.0f);
  EXPECT_EQ(g3.final_softcap, 0.0f);
  for (const LayerConfig& lc : g3.layers) EXPECT_EQ(lc.sliding_window, 0);
  // Gemma 3 with a window: five layers of six, local base 10,000.
  const ModelConfig g3w = config(MakeGemma(dir, "gemma3", 512, 0, 0));
  EXPECT_EQ(g3w.layers[0].sliding_window, 512);
  EXPECT_FLOAT_EQ(g3w.layers[0].rope_theta, 10000.0f);
  EXPECT_EQ(g3w.layers[2].sliding_window, 512);  // 2 % 6 < 5
  // Head dim 8 (not n_embd / n_head = 16): 1 / sqrt(8), except in the 27B shapes (46 layers for
  // Gemma 2), which take 1 / sqrt(n_embd / n_head).
  const std::string made = MakeGemma(dir, "gemma2", 0, 0, 0);
  const Keys head8 = {{"gemma2.attention.key_length", GgufValue::U32(8)},
                      {"gemma2.attention.value_length", GgufValue::U32(8)},
                      {"gemma2.rope.dimension_count", GgufValue::U32(8)}};
  EXPECT_FLOAT_EQ(config(Rewrite(made, dir, "gemma2-d8", head8)).AttentionScale(),
                  1.0f / std::sqrt(8.0f));
  Keys layers46 = head8;
  layers46.emplace_back("gemma2.block_count", GgufValue::U32(46));
  EXPECT_FLOAT_EQ(config(Rewrite(made, dir, "gemma2-27b", layers46)).AttentionScale(), 0.25f);
}

TEST(GemmaTest, BadKeysAreRefusedNamingThem) {
  const std::string dir = testing::TempDir();
  const std::string made = MakeGemma(dir, "gemma2", 8, 0, 0);
  auto load = [&](const Keys& keys) {
    auto f = GgufFile::Open(Rewrite(made, dir, "bad", keys));
    EXPECT_TRUE(f.ok());
    return LoadModelConfig(**f).status();
  };
  Status s = load({{"gemma2.attn_logit_softcapping", GgufValue::F32(-1.0f)}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gemma2.attn_logit_softcapping"), std::string::npos) << s.ToString();
  s = load({{"gemma2.final_logit_softcapping", GgufValue::F32(NAN)}});
  EXPECT_NE(s.message().find("gemma2.final_logit_softcapping"), std::string::npos) << s.ToString();
  s = load({{"gemma2.attention.sliding_window_pattern", Flags({true, false})}});
  EXPECT_NE(s.message().find("has 2 values for 3 layers"), std::string::npos) << s.ToString();
  s = load({{"gemma2.rope.freq_base_swa", GgufValue::F32(0.0f)}});
  EXPECT_NE(s.message().find("gemma2.rope.freq_base_swa"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace forge
