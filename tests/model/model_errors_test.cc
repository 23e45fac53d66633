// Loading errors name what is wrong: a missing tensor, a wrong shape, an unknown architecture, a
// mixture-of-experts model without its keys, unsupported rope scaling, values that make no sense
// (non-finite or non-positive epsilon, rope base and scaling, absurd dimensions, a vocabulary that
// does not match the embedding), each naming its GGUF key. Files are stories260K rewritten with
// one fault.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "gguf/gguf_writer.h"
#include "runtime/model_runner.h"
#include "support/test_env.h"

namespace forge {
namespace {

struct Fault {
  std::function<void(GgufWriter&)> metadata = nullptr;  // extra/overridden keys
  std::string drop_tensor = "";                         // tensor left out
  std::string reshape_tensor = "";                      // tensor written with its dims swapped
  std::function<void(GgufWriter&)> tensors = nullptr;   // extra tensors
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
    EXPECT_TRUE(
        w.AddTensor(t.name, t.type, dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes)).ok());
  }
  if (fault.tensors) fault.tensors(w);
  std::string path = testing::TempDir() + "/" + name + ".gguf";
  EXPECT_TRUE(w.WriteFile(path).ok());
  return path;
}

Status LoadError(const Fault& fault, const std::string& name) {
  auto backend = MakeCpuBackend();
  auto m = ModelRunner::Load(Rewrite(fault, name), backend.get());
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

// A dense file that says it has experts: the missing key is named.
TEST(ModelErrorsTest, ExpertsWithoutTheirKeysRefused) {
  Fault f{[](GgufWriter& w) { w.Set("llama.expert_count", GgufValue::U32(8)); }};
  Status st = LoadError(f, "moe");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("llama.expert_used_count"), std::string::npos) << st.message();
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
  auto m = ModelRunner::Load(Rewrite(linear, "linear"), backend.get());
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

// Loading with key = value fails with InvalidArgument naming the key.
void ExpectRefused(const std::string& key, const GgufValue& value, const std::string& also = "") {
  Fault f{[&](GgufWriter& w) { w.Set(key, value); }};
  Status st = LoadError(f, "bad");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument)
      << key << " = " << value.ToString() << ": " << st.ToString();
  EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  if (!also.empty()) {
    EXPECT_NE(st.message().find(also), std::string::npos) << st.message();
  }
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(ModelErrorsTest, NormEpsilonMustBeFinitePositiveAndSmall) {
  for (float v : {kNaN, kInf, -kInf, 0.0f, -1e-5f, 1.0f, 3e38f}) {
    ExpectRefused("llama.attention.layer_norm_rms_epsilon", GgufValue::F32(v), "must be finite");
    ExpectRefused("llama.attention.layer_norm_epsilon", GgufValue::F32(v));
  }
  // A double too large for a float is infinite once read.
  ExpectRefused("llama.attention.layer_norm_rms_epsilon", GgufValue::F64(1e300));
}

TEST(ModelErrorsTest, RopeBaseMustBeFinitePositive) {
  for (float v : {kNaN, kInf, 0.0f, -10000.0f}) {
    ExpectRefused("llama.rope.freq_base", GgufValue::F32(v), "finite and positive");
  }
}

TEST(ModelErrorsTest, RopeScalingFactorMustBeFinitePositive) {
  for (float v : {kNaN, kInf, 0.0f, -2.0f}) {
    Fault f{[v](GgufWriter& w) {
      w.Set("llama.rope.scaling.type", GgufValue::String("linear"));
      w.Set("llama.rope.scaling.factor", GgufValue::F32(v));
    }};
    Status st = LoadError(f, "scale");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << v;
    EXPECT_NE(st.message().find("llama.rope.scaling.factor"), std::string::npos) << st.message();
  }
  Fault missing{
      [](GgufWriter& w) { w.Set("llama.rope.scaling.type", GgufValue::String("linear")); }};
  Status st = LoadError(missing, "scale");
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("llama.rope.scaling.factor"), std::string::npos) << st.message();
}

TEST(ModelErrorsTest, RopeFrequencyFactorsMustBeFinitePositive) {
  // stories260K: rope over 8 dims, so 4 factors (Llama 3.1's rope_freqs.weight).
  for (float bad : {kNaN, kInf, 0.0f, -1.0f}) {
    Fault f{nullptr, "", "", [bad](GgufWriter& w) {
              std::vector<float> v = {1.0f, 2.0f, bad, 8.0f};
              std::vector<uint8_t> bytes(v.size() * 4);
              std::memcpy(bytes.data(), v.data(), bytes.size());
              EXPECT_TRUE(w.AddTensor("rope_freqs.weight", GgmlType::kF32, {4}, bytes).ok());
            }};
    Status st = LoadError(f, "freqs");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("rope_freqs.weight[2]"), std::string::npos) << st.message();
  }
  Fault good{nullptr, "", "", [](GgufWriter& w) {
               std::vector<float> v = {1.0f, 2.0f, 4.0f, 8.0f};
               std::vector<uint8_t> bytes(v.size() * 4);
               std::memcpy(bytes.data(), v.data(), bytes.size());
               EXPECT_TRUE(w.AddTensor("rope_freqs.weight", GgmlType::kF32, {4}, bytes).ok());
             }};
  EXPECT_TRUE(LoadError(good, "freqs").ok());
}

TEST(ModelErrorsTest, AbsurdDimensionsAreRefused) {
  ExpectRefused("llama.attention.head_count", GgufValue::U32(1u << 20), "past any real model");
  ExpectRefused("llama.attention.head_count_kv", GgufValue::U32(0), "is 0");
  ExpectRefused("llama.embedding_length", GgufValue::U32(0xFFFFFFFFu));
  ExpectRefused("llama.block_count", GgufValue::U32(1u << 30));
  ExpectRefused("llama.feed_forward_length", GgufValue::U32(0));
  ExpectRefused("llama.attention.key_length", GgufValue::U32(1u << 20));
  ExpectRefused("llama.context_length", GgufValue::U32(0), "is 0");
  ExpectRefused("llama.attention.head_count_kv", GgufValue::U32(3), "not a multiple");
  ExpectRefused("llama.rope.dimension_count", GgufValue::U32(9), "must be even");
  // Negative counts do not fit the unsigned field (OutOfRange, naming the key).
  Fault neg{[](GgufWriter& w) { w.Set("llama.attention.head_count", GgufValue::I32(-8)); }};
  Status st = LoadError(neg, "neg");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("llama.attention.head_count"), std::string::npos) << st.message();
}

// The vocabulary must match the embedding (llama.cpp requires it too; converters pad the token
// list with [PAD] tokens): fewer tokens leave rows no token stands for, more give ids past the
// embedding.
TEST(ModelErrorsTest, VocabularyMustMatchTheEmbedding) {
  auto src = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_TRUE(src.ok());
  auto tokens = (*src)->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 512u);
  for (size_t n : {size_t{500}, size_t{600}}) {
    std::vector<std::string> t = *tokens;
    t.resize(n);
    for (size_t i = tokens->size(); i < n; ++i) t[i] = "[PAD" + std::to_string(i) + "]";
    ExpectRefused("tokenizer.ggml.tokens", GgufValue::StringArray(t), "token_embd.weight has 512");
  }
  ExpectRefused("llama.vocab_size", GgufValue::U32(32000), "token_embd.weight has 512");
  Fault same{[](GgufWriter& w) { w.Set("llama.vocab_size", GgufValue::U32(512)); }};
  EXPECT_TRUE(LoadError(same, "vocab").ok());
}

TEST(ModelErrorsTest, StoriesConfig) {
  auto backend = MakeCpuBackend();
  auto m = ModelRunner::Load(testing::TestDataPath("models/stories260K.gguf"), backend.get());
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
