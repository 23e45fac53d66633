// Per-layer hyperparameters: llama.cpp writes attention.head_count, attention.head_count_kv and
// feed_forward_length either once for every layer or as an array of one value per layer. Arrays
// of one value throughout load as the scalars do and give bit-identical logits (stories260K, and a
// synthetic qwen2 with QKV biases; on one rank and on two); arrays whose values differ are refused
// at load naming the key and the layer, as are arrays of the wrong length or with a bad value.
#include <gtest/gtest.h>

#include <utility>

#include "gguf/gguf_writer.h"
#include "modelgen/model_maker.h"
#include "runtime/model_runner.h"
#include "runtime/teacher_forced.h"
#include "support/gguf_rewrite.h"
#include "support/test_env.h"

namespace forge {
namespace {

using Keys = std::vector<std::pair<std::string, GgufValue>>;

const char* const kLayerKeys[] = {"attention.head_count", "attention.head_count_kv",
                                  "feed_forward_length"};

// The file at src with `keys` set (added or replaced), written as dir/name.gguf. (dir: the test's
// testing::TempDir(), taken once: each call of it empties the folder.)
std::string Rewrite(const std::string& src, const std::string& dir, const std::string& name,
                    const Keys& keys) {
  return testing::RewriteGguf(src, dir + "/" + name + ".gguf", keys);
}

// The per-layer keys of the file at src as arrays of one I32 per layer (gguf-py writes Python
// lists of ints so), each holding the file's scalar.
Keys UniformArrays(const std::string& src) {
  auto f = GgufFile::Open(src);
  EXPECT_TRUE(f.ok());
  const std::string a = *(*f)->GetString("general.architecture") + ".";
  const uint32_t n_layer = *(*f)->GetU32(a + "block_count");
  Keys keys;
  for (const char* key : kLayerKeys) {
    const uint32_t v = *(*f)->GetU32(a + key);
    keys.emplace_back(a + key, GgufValue::I32Array(std::vector<int32_t>(n_layer, v)));
  }
  return keys;
}

std::string Stories() { return testing::TestDataPath("models/stories260K.gguf"); }

// stories260K: 5 layers, 8 heads, 4 KV heads, FFN 172.
std::string StoriesWith(const std::string& dir, const std::string& key, const GgufValue& value) {
  return Rewrite(Stories(), dir, "stories-layers", {{"llama." + key, value}});
}

// Loading the file over `ranks` CPU ranks: the runner or the error.
struct Loaded {
  std::vector<std::unique_ptr<Backend>> backends;
  std::unique_ptr<Collective> collective;
  StatusOr<std::unique_ptr<ModelRunner>> runner = InternalError("not loaded");
};

std::unique_ptr<Loaded> LoadOn(const std::string& path, int ranks) {
  auto l = std::make_unique<Loaded>();
  std::vector<Backend*> rank_backends;
  for (int r = 0; r < ranks; ++r) {
    rank_backends.push_back(l->backends.emplace_back(MakeCpuBackend()).get());
  }
  if (ranks > 1) l->collective = MakeHostCollective(ranks);
  l->runner = ModelRunner::LoadParallel(path, rank_backends, l->collective.get());
  return l;
}

std::vector<float> Logits(const std::string& path, int ranks) {
  auto l = LoadOn(path, ranks);
  EXPECT_TRUE(l->runner.ok()) << l->runner.status().ToString();
  if (!l->runner.ok()) return {};
  const int64_t n_vocab = (*l->runner)->config().n_vocab;
  std::vector<int32_t> ids;
  for (int i = 0; i < 21; ++i) ids.push_back(static_cast<int32_t>((i * 89 + 5) % n_vocab));
  auto logits = TeacherForcedLogits(**l->runner, ids, /*chunk=*/8);
  EXPECT_TRUE(logits.ok()) << logits.status().ToString();
  return logits.ok() ? *logits : std::vector<float>{};
}

std::string SyntheticQwen2(const std::string& dir) {
  ModelSpec spec;
  spec.arch = "qwen2";
  spec.qkv_bias = true;
  spec.name = "layers-qwen2";
  spec.n_layer = 3;
  const std::string path = dir + "/" + spec.name + ".gguf";
  auto made = MakeModel(spec, path);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return path;
}

TEST(LayerConfigTest, UniformArraysGiveTheScalarsLogitsBitForBit) {
  const std::string dir = testing::TempDir();
  for (const std::string& src : {Stories(), SyntheticQwen2(dir)}) {
    const std::string arrays = Rewrite(src, dir, "uniform-arrays", UniformArrays(src));
    auto l = LoadOn(arrays, 1);
    ASSERT_TRUE(l->runner.ok()) << l->runner.status().ToString();
    const ModelConfig& c = (*l->runner)->config();
    ASSERT_EQ(static_cast<int64_t>(c.layers.size()), c.n_layer);
    for (const LayerConfig& layer : c.layers) {
      EXPECT_EQ(layer.n_head, c.n_head);
      EXPECT_EQ(layer.n_head_kv, c.n_head_kv);
      EXPECT_EQ(layer.n_ff, c.n_ff);
      EXPECT_EQ(layer.rope_theta, c.rope_theta);
      EXPECT_EQ(layer.sliding_window, 0);
    }
    for (int ranks : {1, 2}) {
      const std::vector<float> want = Logits(src, ranks);
      ASSERT_FALSE(want.empty());
      EXPECT_EQ(Logits(arrays, ranks), want) << src << " over " << ranks << " ranks";
    }
  }
}

TEST(LayerConfigTest, LayersThatDifferAreRefusedNamingTheKeyAndTheLayer) {
  struct Case {
    std::string key;
    std::vector<int32_t> values;
    int layer;
  };
  const Case cases[] = {
      {"attention.head_count", {8, 8, 8, 4, 8}, 3},
      {"attention.head_count_kv", {4, 4, 2, 4, 4}, 2},
      {"feed_forward_length", {172, 172, 172, 172, 344}, 4},
  };
  const std::string dir = testing::TempDir();
  for (const Case& c : cases) {
    auto l = LoadOn(StoriesWith(dir, c.key, GgufValue::I32Array(c.values)), 1);
    ASSERT_FALSE(l->runner.ok()) << c.key;
    const Status& st = l->runner.status();
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.ToString();
    EXPECT_NE(st.message().find("llama." + c.key + " differs between layers"), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("layer " + std::to_string(c.layer) + ": " +
                                std::to_string(c.values[c.layer])),
              std::string::npos)
        << st.message();
  }
}

TEST(LayerConfigTest, BadArraysAreRefusedNamingTheKey) {
  struct Case {
    std::string key;
    GgufValue value;
    std::string message;
  };
  const Case cases[] = {
      {"attention.head_count", GgufValue::I32Array({8, 8, 8}),
       "llama.attention.head_count has 3 values for 5 layers"},
      {"feed_forward_length", GgufValue::I32Array({172, 172, 0, 172, 172}),
       "llama.feed_forward_length[2] is 0"},
      {"attention.head_count_kv", GgufValue::I32Array({4, -4, 4, 4, 4}),
       "llama.attention.head_count_kv[1] = -4 is negative"},
      {"attention.head_count", GgufValue::I32Array({8, 8, 8, 8, 1 << 20}),
       "llama.attention.head_count[4] = 1048576 is past any real model"},
      {"attention.head_count_kv", GgufValue::I32Array({4, 4, 4, 3, 4}),
       "llama.attention.head_count 8 is not a multiple of llama.attention.head_count_kv[3] 3"},
      {"attention.head_count", GgufValue::F32Array({8, 8, 8, 8, 8}),
       "llama.attention.head_count is an array of f32, expected integers"},
  };
  const std::string dir = testing::TempDir();
  for (const Case& c : cases) {
    auto l = LoadOn(StoriesWith(dir, c.key, c.value), 1);
    ASSERT_FALSE(l->runner.ok()) << c.message;
    const Status& st = l->runner.status();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace forge
