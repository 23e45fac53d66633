// Loading errors name what is wrong: a missing tensor, a wrong shape, an unknown architecture, a
// mixture-of-experts model, unsupported rope scaling. Files are stories260K rewritten with one fault.
#include <gtest/gtest.h>

#include <functional>

#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "support/test_env.h"

namespace forge {
namespace {

struct Fault {
  std::function<void(GgufWriter&)> metadata = nullptr;  // extra/overridden keys
  std::string drop_tensor = "";     // tensor left out
  std::string reshape_tensor = "";  // tensor written with its dims swapped
};

std::string Rewrite(const Fault& fault, const std::string& name) {
  auto src = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  EXPECT_TRUE(src.ok());
  GgufWriter w;
  for (const auto& [key, value] : (*src)->metadata()) w.Set(key, value);
  if (fault.metadata) fault.metadata(w);
  for (const auto& t : (*src)->tensors()) {
    if (t.name == fault.drop_tensor) continue;
    std::vector<int64_t> dims = t.dims;
    if (t.name == fault.reshape_tensor) std::swap(dims[0], dims[1]);
    EXPECT_TRUE(w.AddTensor(t.name, t.type, dims,
                            std::vector<uint8_t>(t.data, t.data + t.n_bytes)).ok());
  }
  std::string path = testing::TempDir() + "/" + name + ".gguf";
  EXPECT_TRUE(w.WriteFile(path).ok());
  return path;
}

Status LoadError(const Fault& fault, const std::string& name) {
  auto backend = MakeCpuBackend();
  auto m = Model::Load(Rewrite(fault, name), backend.get());
  return m.ok() ? Status::Ok() : m.status();
}

TEST(ModelErrorsTest, CleanRewriteLoads) { EXPECT_TRUE(LoadError({}, "clean").ok()); }

TEST(ModelErrorsTest, MissingTensor) {
  Status st = LoadError({nullptr, "blk.2.ffn_up.weight", ""}, "missing");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("blk.2.ffn_up.weight"), std::string::npos) << st.message();
}

TEST(ModelErrorsTest, WrongShape) {
  Status st = LoadError({nullptr, "", "blk.1.attn_k.weight"}, "shape");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("blk.1.attn_k.weight: shape [32, 64], expected [64, 32]"),
            std::string::npos)
      << st.message();
}

TEST(ModelErrorsTest, UnknownArchitecture) {
  Fault f{[](GgufWriter& w) { w.Set("general.architecture", GgufValue::String("mamba9")); }};
  Status st = LoadError(f, "arch");
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("unknown architecture 'mamba9'"), std::string::npos) << st.message();
}

TEST(ModelErrorsTest, MixtureOfExpertsRefused) {
  Fault f{[](GgufWriter& w) { w.Set("llama.expert_count", GgufValue::U32(8)); }};
  Status st = LoadError(f, "moe");
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("mixture-of-experts"), std::string::npos) << st.message();
}

TEST(ModelErrorsTest, YarnRefusedLinearApplied) {
  Fault yarn{[](GgufWriter& w) { w.Set("llama.rope.scaling.type", GgufValue::String("yarn")); }};
  Status st = LoadError(yarn, "yarn");
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("yarn"), std::string::npos);
  Fault linear{[](GgufWriter& w) {
    w.Set("llama.rope.scaling.type", GgufValue::String("linear"));
    w.Set("llama.rope.scaling.factor", GgufValue::F32(4.0f));
  }};
  auto backend = MakeCpuBackend();
  auto m = Model::Load(Rewrite(linear, "linear"), backend.get());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FLOAT_EQ((*m)->config().rope_freq_scale, 0.25f);
}

TEST(ModelErrorsTest, WrongTypedOptionalKeysAreErrorsNotCrashes) {
  for (const char* key : {"general.name", "llama.rope.scaling.type"}) {
    Fault f{[key](GgufWriter& w) { w.Set(key, GgufValue::U8(7)); }};
    Status st = LoadError(f, "typed");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(st.message().find(std::string(key) + "' has type u8, expected string"),
              std::string::npos)
        << st.message();
  }
}

TEST(ModelErrorsTest, StoriesConfig) {
  auto backend = MakeCpuBackend();
  auto m = Model::Load(testing::TestDataPath("models/stories260K.gguf"), backend.get());
  ASSERT_TRUE(m.ok());
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.n_layer, 5);
  EXPECT_EQ(c.n_head, 8);
  EXPECT_EQ(c.n_head_kv, 4);
  EXPECT_EQ(c.n_ff, 172);
  EXPECT_EQ(c.rope_dims, 8);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.rope_style, RopeStyle::kAdjacent);
  EXPECT_FALSE(c.tied_embeddings);
}

}  // namespace
}  // namespace forge
