// Planned tensors of the presets (real-model shapes checked without writing them), weight-format
// names, and llama.cpp's mixed recipes against counts from real files and llama.cpp's own output.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "gguf/gguf_file.h"
#include "modelgen/model_spec.h"
#include "modelgen/tensor_plan.h"
#include "support/test_env.h"

namespace forge {
namespace {

ModelSpec Preset(const std::string& name, const std::string& format = "f32") {
  auto s = ModelPreset(name);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(SetWeightFormat(format, &*s).ok()) << format;
  return *s;
}

ModelPlan Plan(const ModelSpec& s) {
  auto p = PlanModel(s);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : ModelPlan{};
}

const TensorPlan* Find(const ModelPlan& p, const std::string& name) {
  for (const TensorPlan& t : p.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::map<std::string, int> TypeCounts(const ModelPlan& p) {
  std::map<std::string, int> n;
  for (const TensorPlan& t : p.tensors) ++n[std::string(TypeName(t.type))];
  return n;
}

using Dims = std::vector<int64_t>;

// Parameter counts are the published ones (Meta's and Qwen's model cards / HF safetensors).
TEST(ModelPlanTest, RealModelShapes) {
  struct Case {
    const char* preset;
    int64_t params;
    size_t tensors;
    Dims embd, q, k, down;
    bool has_output, has_bias;
  };
  const Case cases[] = {
      {"llama-3-8b",
       8030261248,
       291,
       {4096, 128256},
       {4096, 4096},
       {4096, 1024},
       {14336, 4096},
       true,
       false},
      {"llama-2-7b",
       6738415616,
       291,
       {4096, 32000},
       {4096, 4096},
       {4096, 4096},
       {11008, 4096},
       true,
       false},
      {"llama-3.2-1b",
       1235814400,
       146,
       {2048, 128256},
       {2048, 2048},
       {2048, 512},
       {8192, 2048},
       false,
       false},
      {"qwen2.5-7b",
       7615616512,
       339,
       {3584, 152064},
       {3584, 3584},
       {3584, 512},
       {18944, 3584},
       true,
       true},
      // bge-large-en-v1.5: HF's 335,141,888 less its pooler (1024 x 1024 + 1024), which GGUF
      // files leave out.
      {"bge-large",
       335141888 - 1049600,
       389,
       {1024, 30522},
       {1024, 1024},
       {1024, 1024},
       {4096, 1024},
       false,
       true},
      // Qwen3-Embedding-0.6B: 16 query heads of 128 over a width of 1024.
      {"qwen3-embedding-0.6b",
       595776512,
       310,
       {1024, 151669},
       {1024, 2048},
       {1024, 1024},
       {3072, 1024},
       false,
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.preset);
    const ModelPlan p = Plan(Preset(c.preset));
    EXPECT_EQ(p.n_params, c.params);
    EXPECT_EQ(p.tensors.size(), c.tensors);
    ASSERT_NE(Find(p, "token_embd.weight"), nullptr);
    EXPECT_EQ(Find(p, "token_embd.weight")->dims, c.embd);
    EXPECT_EQ(Find(p, "blk.0.attn_q.weight")->dims, c.q);
    EXPECT_EQ(Find(p, "blk.0.attn_k.weight")->dims, c.k);
    EXPECT_EQ(Find(p, "blk.0.attn_v.weight")->dims, c.k);
    EXPECT_EQ(Find(p, "blk.0.ffn_down.weight")->dims, c.down);
    EXPECT_EQ(Find(p, "output.weight") != nullptr, c.has_output);
    EXPECT_EQ(Find(p, "blk.0.attn_q.bias") != nullptr, c.has_bias);
    if (c.has_bias) {
      EXPECT_EQ(Find(p, "blk.0.attn_q.bias")->dims, Dims{c.q[1]});
      EXPECT_EQ(Find(p, "blk.0.attn_k.bias")->dims, Dims{c.k[1]});
      EXPECT_EQ(Find(p, "blk.0.attn_v.bias")->type, GgmlType::kF32);
    }
  }
  const ModelSpec q = Preset("qwen2.5-7b");
  EXPECT_EQ(q.arch, "qwen2");
  EXPECT_EQ(q.rope_theta, 1000000.0f);
  EXPECT_EQ(q.rms_eps, 1e-6f);
  EXPECT_EQ(Preset("llama-3-8b").rope_theta, 500000.0f);
  EXPECT_EQ(Preset("llama-3.2-1b").n_head / Preset("llama-3.2-1b").n_head_kv, 4);
  EXPECT_EQ(Preset("llama-2-7b").n_head_kv, 32);
  const ModelPlan bge = Plan(Preset("bge-large"));
  EXPECT_EQ(Find(bge, "position_embd.weight")->dims, (Dims{1024, 512}));
  EXPECT_EQ(Find(bge, "blk.23.layer_output_norm.bias")->dims, Dims{1024});
  EXPECT_EQ(Preset("bge-large").pooling, 2);
  const ModelPlan qe = Plan(Preset("qwen3-embedding-0.6b"));
  EXPECT_EQ(Find(qe, "blk.0.attn_output.weight")->dims, (Dims{2048, 1024}));
  EXPECT_EQ(Find(qe, "blk.0.attn_q_norm.weight")->dims, Dims{128});
  EXPECT_EQ(Preset("qwen3-embedding-0.6b").pooling, 3);
}

// Type counts of llama.cpp's Q4_K_M files of these models: Llama-3-8B 193 q4_K, 33 q6_K, 65 f32;
// Qwen2.5-7B 169 q4_K, 29 q6_K, 141 f32.
TEST(ModelPlanTest, Q4_K_MCountsMatchLlamaCppFiles) {
  auto llama = TypeCounts(Plan(Preset("llama-3-8b", "q4_k_m")));
  EXPECT_EQ(llama["Q4_K"], 193);
  EXPECT_EQ(llama["Q6_K"], 33);
  EXPECT_EQ(llama["F32"], 65);
  EXPECT_EQ(llama.size(), 3u);
  auto qwen = TypeCounts(Plan(Preset("qwen2.5-7b", "Q4_K_M")));
  EXPECT_EQ(qwen["Q4_K"], 169);
  EXPECT_EQ(qwen["Q6_K"], 29);
  EXPECT_EQ(qwen["F32"], 141);
}

// use_more_bits(i, 32): i < 4, i >= 28 and (i - 4) % 3 == 2.
TEST(ModelPlanTest, Q4_K_MLayersWithMoreBits) {
  const ModelPlan p = Plan(Preset("llama-3-8b", "q4_k_m"));
  std::set<int> v6, down6;
  for (const TensorPlan& t : p.tensors) {
    if (t.type != GgmlType::kQ6_K) continue;
    if (t.role == TensorRole::kAttnV) v6.insert(t.layer);
    if (t.role == TensorRole::kFfnDown) down6.insert(t.layer);
  }
  const std::set<int> want = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  EXPECT_EQ(v6, want);
  EXPECT_EQ(down6, want);
  EXPECT_EQ(Find(p, "output.weight")->type, GgmlType::kQ6_K);
  EXPECT_EQ(Find(p, "token_embd.weight")->type, GgmlType::kQ4_K);
  EXPECT_EQ(Find(p, "blk.5.attn_output.weight")->type, GgmlType::kQ4_K);
  EXPECT_EQ(p.n_fallback, 0);
}

// Tied embeddings: token_embd takes the output rule.
TEST(ModelPlanTest, Q4_K_MTiedEmbeddingIsQ6_K) {
  const ModelPlan p = Plan(Preset("llama-3.2-1b", "q4_k_m"));
  EXPECT_EQ(Find(p, "output.weight"), nullptr);
  EXPECT_EQ(Find(p, "token_embd.weight")->type, GgmlType::kQ6_K);
}

TEST(ModelPlanTest, OtherMixes) {
  // Q3_K_M: attn_v Q5_K in blocks 0-1 then Q4_K; ffn_down Q5_K below n/16 then Q4_K;
  // attn_output Q4_K; the rest Q3_K.
  ModelPlan p = Plan(Preset("llama-3-8b", "q3_k_m"));
  EXPECT_EQ(Find(p, "blk.1.attn_v.weight")->type, GgmlType::kQ5_K);
  EXPECT_EQ(Find(p, "blk.2.attn_v.weight")->type, GgmlType::kQ4_K);
  EXPECT_EQ(Find(p, "blk.1.ffn_down.weight")->type, GgmlType::kQ5_K);
  EXPECT_EQ(Find(p, "blk.2.ffn_down.weight")->type, GgmlType::kQ4_K);
  EXPECT_EQ(Find(p, "blk.7.attn_output.weight")->type, GgmlType::kQ4_K);
  EXPECT_EQ(Find(p, "blk.7.ffn_up.weight")->type, GgmlType::kQ3_K);
  EXPECT_EQ(Find(p, "output.weight")->type, GgmlType::kQ6_K);
  // Q4_K_S: attn_v Q5_K in blocks 0-3, ffn_down Q5_K below n/8.
  p = Plan(Preset("llama-3-8b", "q4_k_s"));
  EXPECT_EQ(Find(p, "blk.3.attn_v.weight")->type, GgmlType::kQ5_K);
  EXPECT_EQ(Find(p, "blk.4.attn_v.weight")->type, GgmlType::kQ4_K);
  EXPECT_EQ(Find(p, "blk.3.ffn_down.weight")->type, GgmlType::kQ5_K);
  EXPECT_EQ(Find(p, "blk.4.ffn_down.weight")->type, GgmlType::kQ4_K);
  // Q5_K_M: Q6_K where Q4_K_M has it, Q5_K elsewhere.
  auto n = TypeCounts(Plan(Preset("llama-3-8b", "q5_k_m")));
  EXPECT_EQ(n["Q5_K"], 193);
  EXPECT_EQ(n["Q6_K"], 33);
  // Pure formats: every matrix in the type, output included.
  n = TypeCounts(Plan(Preset("llama-3-8b", "q4_0")));
  EXPECT_EQ(n["Q4_0"], 226);
  EXPECT_EQ(n["F32"], 65);
}

// The same recipe as llama.cpp's own quantization of the oracle model (1 block, width 256).
TEST(ModelPlanTest, Q4_K_MMatchesLlamaCppOnTheOracleModel) {
  auto f = GgufFile::Open(testing::TestDataPath("quant/quant-oracle-q4_k_m.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ModelSpec s = Preset("tiny-k", "q4_k_m");
  s.n_layer = 1;
  const ModelPlan p = Plan(s);
  ASSERT_EQ(p.tensors.size(), (*f)->tensors().size());
  for (const GgufTensorInfo& t : (*f)->tensors()) {
    const TensorPlan* mine = Find(p, t.name);
    ASSERT_NE(mine, nullptr) << t.name;
    EXPECT_EQ(mine->dims, t.dims) << t.name;
    EXPECT_EQ(mine->type, t.type) << t.name << ": " << TypeName(mine->type) << " vs llama.cpp "
                                  << TypeName(t.type);
    EXPECT_EQ(mine->n_bytes, t.n_bytes) << t.name;
  }
}

// Rows that do not fit a type's block fall back as in llama.cpp.
TEST(ModelPlanTest, FallbackForRowsThatDoNotFit) {
  ModelPlan p = Plan(Preset("tiny", "q4_k"));  // rows of 64 and 192
  EXPECT_EQ(Find(p, "blk.0.attn_q.weight")->type, GgmlType::kQ5_0);
  EXPECT_TRUE(Find(p, "blk.0.attn_q.weight")->fallback);
  EXPECT_EQ(p.n_fallback, 2 * 7 + 2);
  p = Plan(Preset("tiny", "q6_k"));
  EXPECT_EQ(Find(p, "blk.1.ffn_down.weight")->type, GgmlType::kQ8_0);
  p = Plan(Preset("tiny", "q4_k_m"));
  EXPECT_EQ(Find(p, "output.weight")->type, GgmlType::kQ8_0);  // output rule: Q8_0 when no fit
  ModelSpec odd = Preset("tiny", "q8_0");
  odd.n_ff = 172;  // like stories260K's ffn_down: not a multiple of 32
  p = Plan(odd);
  EXPECT_EQ(Find(p, "blk.0.ffn_down.weight")->type, GgmlType::kF16);
  EXPECT_EQ(Find(p, "blk.0.ffn_up.weight")->type, GgmlType::kQ8_0);
  EXPECT_EQ(Plan(Preset("tiny-k", "q2_k")).n_fallback, 0);
}

TEST(ModelPlanTest, EveryPresetPlansAndTinyPresetsDiffer) {
  std::set<std::string> shapes;
  for (const std::string& name : ModelPresetNames()) {
    SCOPED_TRACE(name);
    const ModelSpec s = Preset(name);
    ASSERT_TRUE(ValidateSpec(s).ok());
    const ModelPlan p = Plan(s);
    EXPECT_GT(p.n_params, 0);
    shapes.insert(std::to_string(s.n_embd) + "/" + std::to_string(s.n_head) + "/" +
                  std::to_string(s.n_head_kv) + "/" + s.arch + "/" +
                  std::to_string(s.tied_embeddings) + "/" + std::to_string(s.n_vocab));
  }
  EXPECT_EQ(shapes.size(), ModelPresetNames().size());
  EXPECT_EQ(Preset("tiny-gqa").n_head / Preset("tiny-gqa").n_head_kv, 4);
  EXPECT_EQ(Preset("tiny-mqa").n_head_kv, 1);
  EXPECT_EQ(Preset("tiny-mha").n_head, Preset("tiny-mha").n_head_kv);
}

TEST(ModelPlanTest, BadInputsNameWhatIsWrong) {
  auto p = ModelPreset("llama-9000");
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("tiny-gqa"), std::string::npos) << p.status().message();
  ModelSpec s;
  Status st = SetWeightFormat("q4_k_xl", &s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("Q4_K_M"), std::string::npos);
  s.n_head = 7;
  st = ValidateSpec(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("n_head=7"), std::string::npos) << st.message();
  s = ModelSpec();
  s.n_head_kv = 3;
  EXPECT_FALSE(PlanModel(s).ok());
  s = ModelSpec();
  s.arch = "gpt2";
  EXPECT_EQ(ValidateSpec(s).code(), StatusCode::kUnimplemented);
}

TEST(ModelPlanTest, FormatNamesAndFileTypes) {
  ModelSpec s;
  ASSERT_TRUE(SetWeightFormat("q4_k_m", &s).ok());
  EXPECT_EQ(s.weight_type, GgmlType::kQ4_K);
  EXPECT_EQ(s.mix, QuantMix::kQ4_K_M);
  EXPECT_EQ(WeightFormatName(s), "Q4_K_M");
  EXPECT_EQ(FileTypeOf(s), 15);
  ASSERT_TRUE(SetWeightFormat("Q4_K", &s).ok());
  EXPECT_EQ(s.mix, QuantMix::kPure);
  EXPECT_EQ(FileTypeOf(s), 14);  // as llama-quantize --pure Q4_K_S wrote quant-oracle-q4_k.gguf
  ASSERT_TRUE(SetWeightFormat("q8_0", &s).ok());
  EXPECT_EQ(FileTypeOf(s), 7);
  ASSERT_TRUE(SetWeightFormat("q8_k", &s).ok());
  EXPECT_EQ(FileTypeOf(s), -1);
}

}  // namespace
}  // namespace forge
