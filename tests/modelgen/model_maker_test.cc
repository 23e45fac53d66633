// Written synthetic models: they open with GgufFile with the planned tensors, types and
// metadata; values are deterministic whatever the thread count; vocabularies, tied embeddings,
// biases and peaked outputs are what they claim to be.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "modelgen/model_maker.h"
#include "modelgen/synthetic_vocab.h"
#include "modelgen/weight_init.h"
#include "quant/dequantize.h"
#include "support/test_env.h"

namespace forge {
namespace {

ModelSpec Preset(const std::string& name, const std::string& format = "f32") {
  auto s = ModelPreset(name);
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(SetWeightFormat(format, &*s).ok());
  return *s;
}

std::unique_ptr<GgufFile> Make(const ModelSpec& s, const std::string& path) {
  auto stats = MakeModel(s, path);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return nullptr;
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

std::vector<float> Values(const GgufTensorInfo& t) {
  std::vector<float> v(t.n_elements);
  EXPECT_TRUE(DequantizeRow(t.type, t.data, v.data(), t.n_elements).ok()) << t.name;
  return v;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every small preset in a few formats: the file holds exactly the plan, with sane values.
TEST(ModelMakerTest, WritesEveryTinyPreset) {
  const std::string dir = testing::TempDir();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tiny", "f32"},      {"tiny-mha", "f16"},   {"tiny-gqa", "q8_0"},    {"tiny-mqa", "q4_0"},
      {"tiny-k", "q4_k_m"}, {"tiny-tied", "q5_1"}, {"tiny-llama3", "bf16"}, {"tiny-qwen2", "q6_k"},
      {"tiny-k", "q2_k"},   {"tiny-k", "q3_k_l"},  {"tiny-k", "q8_k"},      {"tiny-k", "q5_k_s"}};
  for (const auto& [preset, format] : cases) {
    SCOPED_TRACE(preset + " " + format);
    const ModelSpec s = Preset(preset, format);
    auto f = Make(s, dir + "/" + preset + "-" + format + ".gguf");
    ASSERT_NE(f, nullptr);
    auto plan = PlanModel(s);
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(f->tensors().size(), plan->tensors.size());
    for (size_t i = 0; i < plan->tensors.size(); ++i) {
      const TensorPlan& want = plan->tensors[i];
      const GgufTensorInfo& got = f->tensors()[i];
      EXPECT_EQ(got.name, want.name);
      EXPECT_EQ(got.dims, want.dims);
      EXPECT_EQ(got.type, want.type) << got.name;
      std::vector<float> v = Values(got);
      double sum = 0, sumsq = 0;
      for (float x : v) {
        ASSERT_TRUE(std::isfinite(x)) << got.name;
        sum += x;
        sumsq += static_cast<double>(x) * x;
      }
      const double mean = sum / v.size(), sd = std::sqrt(sumsq / v.size() - mean * mean);
      if (want.role == TensorRole::kNorm) {
        EXPECT_NEAR(mean, 1.0, 0.05) << got.name;
      } else if (want.role != TensorRole::kBias) {
        // z / sqrt(row length): sd within quantization noise (Q2_K is coarse) of the target.
        const double target = 1.0 / std::sqrt(static_cast<double>(want.dims[0]));
        EXPECT_NEAR(sd / target, 1.0, format == "q2_k" ? 0.35 : 0.12) << got.name;
        EXPECT_LT(std::fabs(mean), 0.2 * target) << got.name;
      }
    }
    const std::string a = s.arch + ".";
    EXPECT_EQ(*f->GetString("general.architecture"), s.arch);
    EXPECT_EQ(*f->GetU32(a + "embedding_length"), s.n_embd);
    EXPECT_EQ(*f->GetU32(a + "block_count"), s.n_layer);
    EXPECT_EQ(*f->GetU32(a + "feed_forward_length"), s.n_ff);
    EXPECT_EQ(*f->GetU32(a + "attention.head_count"), s.n_head);
    EXPECT_EQ(*f->GetU32(a + "attention.head_count_kv"), s.n_head_kv);
    EXPECT_EQ(*f->GetU32(a + "rope.dimension_count"), s.n_embd / s.n_head);
    EXPECT_EQ(*f->GetF32(a + "rope.freq_base"), s.rope_theta);
    EXPECT_EQ(*f->GetF32(a + "attention.layer_norm_rms_epsilon"), s.rms_eps);
    EXPECT_EQ(f->GetStringArray("tokenizer.ggml.tokens")->size(), static_cast<size_t>(s.n_vocab));
    EXPECT_EQ(f->Has("general.file_type"), FileTypeOf(s) >= 0);
    if (FileTypeOf(s) >= 0) {
      EXPECT_EQ(*f->GetU32("general.file_type"), static_cast<uint32_t>(FileTypeOf(s)));
    }
  }
}

// The weights depend on the seed only: any thread count gives the same bytes.
TEST(ModelMakerTest, DeterministicAcrossThreadCounts) {
  const std::string dir = testing::TempDir();
  ModelSpec s = Preset("tiny-k", "q4_k_m");
  s.n_vocab = 1000;  // rows of token_embd split unevenly between threads
  std::string first;
  for (int threads : {1, 2, 3, 8}) {
    s.threads = threads;
    const std::string path = dir + "/t" + std::to_string(threads) + ".gguf";
    auto stats = MakeModel(s, path);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(stats->threads, threads);
    const std::string bytes = ReadAll(path);
    ASSERT_GT(bytes.size(), 1000u);
    if (first.empty()) first = bytes;
    EXPECT_TRUE(bytes == first) << "threads=" << threads << " differ from threads=1";
  }
  s.seed = 2;
  ASSERT_TRUE(MakeModel(s, dir + "/seed2.gguf").ok());
  EXPECT_FALSE(ReadAll(dir + "/seed2.gguf") == first);
}

// A quantized model holds the F32 model's values, quantized (same seed -> same values).
TEST(ModelMakerTest, QuantizedModelIsTheF32ModelQuantized) {
  const std::string dir = testing::TempDir();
  auto f32 = Make(Preset("tiny-k", "f32"), dir + "/f32.gguf");
  auto q8 = Make(Preset("tiny-k", "q8_0"), dir + "/q8.gguf");
  ASSERT_TRUE(f32 && q8);
  for (const GgufTensorInfo& t : q8->tensors()) {
    std::vector<float> a = Values(*f32->FindTensor(t.name)), b = Values(t);
    for (size_t blk = 0; blk < a.size() / 32; ++blk) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(a[32 * blk + j]));
      for (int j = 0; j < 32; ++j) {
        ASSERT_LE(std::fabs(a[32 * blk + j] - b[32 * blk + j]), amax * (1 / 254.0 + 0x1p-11) + 1e-7)
            << t.name;
      }
    }
  }
}

TEST(ModelMakerTest, TiedEmbeddingsAndBiases) {
  const std::string dir = testing::TempDir();
  ModelSpec s = Preset("tiny-qwen2", "q8_0");
  s.tied_embeddings = true;
  auto f = Make(s, dir + "/qwen2-tied.gguf");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->FindTensor("output.weight"), nullptr);
  EXPECT_EQ(*f->GetString("general.architecture"), "qwen2");
  const int64_t kv_dim = s.n_embd / s.n_head * s.n_head_kv;
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const GgufTensorInfo* q = f->FindTensor(p + "attn_q.bias");
    const GgufTensorInfo* k = f->FindTensor(p + "attn_k.bias");
    const GgufTensorInfo* v = f->FindTensor(p + "attn_v.bias");
    ASSERT_TRUE(q && k && v) << p;
    EXPECT_EQ(q->dims, std::vector<int64_t>{s.n_embd});
    EXPECT_EQ(k->dims, std::vector<int64_t>{kv_dim});
    EXPECT_EQ(v->dims, std::vector<int64_t>{kv_dim});
    EXPECT_EQ(q->type, GgmlType::kF32);
    std::vector<float> b = Values(*k);
    EXPECT_GT(*std::max_element(b.begin(), b.end()), 0.1f);  // not zeros
  }
  EXPECT_EQ(f->FindTensor("blk.0.attn_output.bias"), nullptr);
  auto llama = Make(Preset("tiny", "f32"), dir + "/llama.gguf");
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->FindTensor("blk.0.attn_q.bias"), nullptr);
  EXPECT_NE(llama->FindTensor("output.weight"), nullptr);
}

TEST(ModelMakerTest, VocabFromAnotherFile) {
  const std::string src = testing::TestDataPath("models/stories260K.gguf");
  auto orig = GgufFile::Open(src);
  ASSERT_TRUE(orig.ok());
  ModelSpec s = Preset("tiny-gqa", "q8_0");
  s.n_vocab = 77;  // replaced by the file's 512
  s.vocab_from = src;
  auto f = Make(s, testing::TempDir() + "/vocab.gguf");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->FindTensor("token_embd.weight")->dims, (std::vector<int64_t>{128, 512}));
  EXPECT_EQ(*f->GetU32("llama.vocab_size"), 512u);
  int copied = 0;
  for (const auto& [key, value] : (*orig)->metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    const GgufValue* mine = f->Find(key);
    ASSERT_NE(mine, nullptr) << key;
    EXPECT_TRUE(*mine == value) << key;
    ++copied;
  }
  EXPECT_GE(copied, 5);
  s.vocab_from = "/nonexistent/model.gguf";
  auto bad = MakeModel(s, testing::TempDir() + "/bad.gguf");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("vocab-from"), std::string::npos);
}

TEST(SyntheticVocabTest, SpmAndBpeAreConsistent) {
  for (int64_t n : {300, 1000, 40000}) {
    MetadataList spm = SyntheticVocab(VocabKind::kSpm, n);
    const auto& tokens = spm[1].second.items();
    ASSERT_EQ(spm[1].first, "tokenizer.ggml.tokens");
    ASSERT_EQ(static_cast<int64_t>(tokens.size()), n);
    std::set<std::string> unique;
    for (const GgufValue& t : tokens) unique.insert(t.str());
    EXPECT_EQ(static_cast<int64_t>(unique.size()), n);
    EXPECT_EQ(tokens[1].str(), "<s>");
    EXPECT_EQ(tokens[3 + 0x41].str(), "<0x41>");
  }
  for (VocabKind kind : {VocabKind::kBpeLlama3, VocabKind::kBpeQwen2}) {
    for (int64_t n : {300, 5000, kind == VocabKind::kBpeLlama3 ? 128256 : 152064}) {
      SCOPED_TRACE(n);
      MetadataList keys = SyntheticVocab(kind, n);
      std::map<std::string, GgufValue> m(keys.begin(), keys.end());
      const auto& tokens = m["tokenizer.ggml.tokens"].items();
      ASSERT_EQ(static_cast<int64_t>(tokens.size()), n);
      EXPECT_EQ(m["tokenizer.ggml.token_type"].items().size(), tokens.size());
      std::set<std::string> vocab;
      for (const GgufValue& t : tokens) vocab.insert(t.str());
      EXPECT_EQ(static_cast<int64_t>(vocab.size()), n);
      // Each merge joins two existing tokens into a third.
      for (const GgufValue& merge : m["tokenizer.ggml.merges"].items()) {
        const std::string& s = merge.str();
        const size_t sp = s.find(' ');
        ASSERT_NE(sp, std::string::npos);
        const std::string l = s.substr(0, sp), r = s.substr(sp + 1);
        ASSERT_TRUE(vocab.count(l) && vocab.count(r) && vocab.count(l + r)) << s;
      }
      const std::string bos = tokens[m["tokenizer.ggml.bos_token_id"].u64()].str();
      const std::string eot = tokens[m["tokenizer.ggml.eot_token_id"].u64()].str();
      if (kind == VocabKind::kBpeLlama3) {
        EXPECT_EQ(bos, "<|begin_of_text|>");
        EXPECT_EQ(eot, "<|eot_id|>");
        if (n == 128256) {
          EXPECT_EQ(m["tokenizer.ggml.bos_token_id"].u64(), 128000u);
          EXPECT_EQ(m["tokenizer.ggml.eot_token_id"].u64(), 128009u);
        }
      } else {
        EXPECT_EQ(bos, "<|endoftext|>");
        EXPECT_EQ(eot, "<|im_end|>");
        if (n == 152064) {
          EXPECT_EQ(m["tokenizer.ggml.bos_token_id"].u64(), 151643u);
        }
      }
      EXPECT_EQ(tokens[0].str(), "!");  // GPT-2 byte order: printable bytes first
    }
  }
}

// RMSNorm of v times g (the final norm's weight).
std::vector<double> RmsNorm(const float* v, const std::vector<float>& g) {
  double ss = 0;
  for (size_t i = 0; i < g.size(); ++i) ss += static_cast<double>(v[i]) * v[i];
  const double r = 1.0 / std::sqrt(ss / g.size() + 1e-5);
  std::vector<double> out(g.size());
  for (size_t i = 0; i < g.size(); ++i) out[i] = v[i] * r * g[i];
  return out;
}

// Logits of output.weight at the normalized embedding of each token (the residual stream of a
// model whose blocks add nothing): top-1 and its margin over the runner-up.
struct Top {
  int64_t token;
  double margin, max_abs;
};
std::vector<Top> EmbeddingLogits(const GgufFile& f, int n_tokens) {
  const GgufTensorInfo* embd = f.FindTensor("token_embd.weight");
  const GgufTensorInfo* out = f.FindTensor("output.weight");
  if (out == nullptr) out = embd;
  const std::vector<float> e = Values(*embd), w = Values(*out);
  const std::vector<float> g = Values(*f.FindTensor("output_norm.weight"));
  const int64_t d = embd->dims[0], v = out->dims[1];
  std::vector<Top> tops;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const std::vector<double> h = RmsNorm(&e[t * d], g);
    double best = -1e30, second = -1e30, max_abs = 0;
    int64_t arg = -1;
    for (int64_t j = 0; j < v; ++j) {
      double z = 0;
      for (int64_t i = 0; i < d; ++i) z += h[i] * w[j * d + i];
      max_abs = std::max(max_abs, std::fabs(z));
      if (z > best)
        second = best, best = z, arg = j;
      else if (z > second)
        second = z;
    }
    tops.push_back({arg, best - second, max_abs});
  }
  return tops;
}

TEST(ModelMakerTest, PeakedOutputsFollowTheSuccessorMap) {
  const std::string dir = testing::TempDir();
  ModelSpec s = Preset("tiny-k", "q4_k_m");
  s.peak = 20.0f;
  auto f = Make(s, dir + "/peaked.gguf");
  ASSERT_NE(f, nullptr);
  const uint64_t mul = *f->GetU64("forge.peaked.successor_mul");
  const uint64_t add = *f->GetU64("forge.peaked.successor_add");
  const WeightInit init(s);
  std::vector<Top> tops = EmbeddingLogits(*f, 64);
  double min_margin = 1e9;
  for (int64_t t = 0; t < 64; ++t) {
    const int64_t succ = static_cast<int64_t>((mul * t + add) % s.n_vocab);
    EXPECT_EQ(init.Successor(t), succ);
    EXPECT_EQ(init.Predecessor(succ), t);
    EXPECT_EQ(tops[t].token, succ) << "token " << t;
    min_margin = std::min(min_margin, tops[t].margin / tops[t].max_abs);
    EXPECT_GT(tops[t].margin, 8.0) << "token " << t;
  }
  std::printf("[ peaked   ] smallest top-1 margin / max |logit| over 64 tokens: %.3f\n",
              min_margin);
  EXPECT_GT(min_margin, 0.3);
  // Without --peaked the same construction gives small, arbitrary margins.
  s.peak = 0;
  auto plain = Make(s, dir + "/plain.gguf");
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->Has("forge.peaked.successor_mul"));
  tops = EmbeddingLogits(*plain, 64);
  int hits = 0;
  std::vector<double> margins;
  for (int64_t t = 0; t < 64; ++t) {
    hits += tops[t].token == init.Successor(t);
    margins.push_back(tops[t].margin / tops[t].max_abs);
  }
  std::sort(margins.begin(), margins.end());
  std::printf("[ peaked   ] without --peaked: %d of 64 hit the successor, median margin %.3f\n",
              hits, margins[32]);
  EXPECT_LT(hits, 4);
  EXPECT_LT(margins[32], 0.2);
}

TEST(ModelMakerTest, PeakedTiedEmbeddingsRepeatTheToken) {
  ModelSpec s = Preset("tiny-tied", "q8_0");
  s.peak = 20.0f;
  auto f = Make(s, testing::TempDir() + "/tied-peaked.gguf");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->GetU64("forge.peaked.successor_mul"), 1u);
  EXPECT_EQ(*f->GetU64("forge.peaked.successor_add"), 0u);
  std::vector<Top> tops = EmbeddingLogits(*f, 32);
  for (int64_t t = 0; t < 32; ++t) EXPECT_EQ(tops[t].token, t);
}

TEST(ModelMakerTest, ErrorsLeaveNoFile) {
  ModelSpec s = Preset("tiny");
  s.n_embd = 60;  // not a multiple of n_head = 8
  const std::string path = testing::TempDir() + "/bad.gguf";
  auto st = MakeModel(s, path);
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(testing::FileExists(path));
  s = Preset("tiny");
  EXPECT_FALSE(MakeModel(s, "/nonexistent-dir/x.gguf").ok());
}

}  // namespace
}  // namespace forge
