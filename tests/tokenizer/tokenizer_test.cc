// Tokenizer behaviour beyond the vocab vectors: stories260K's recorded prompts, special tokens
// (only parsed when asked), BOS/EOS flags, decode(encode(text)) == text, and load errors.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/utf8.h"
#include "gguf/gguf_file.h"
#include "support/test_env.h"
#include "tokenizer_test_util.h"

namespace forge {
namespace {

using ::forge::testing::LoadVocab;

TEST(TokenizerTest, Stories260KPromptsAndTexts) {
  std::ifstream in(testing::TestDataPath("models/stories260K.expected.json"));
  const nlohmann::json expected = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& [model, entry] : expected["models"].items()) {
    auto tok = LoadVocab("models/" + model);
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->vocab().kind, TokenizerKind::kSpm);
    for (const auto& c : entry["cases"]) {
      const std::string prompt = c["prompt"];
      const auto ids = c["prompt_ids"].get<std::vector<TokenId>>();
      EXPECT_EQ(tok->Encode(prompt, /*add_special=*/true, /*parse_special=*/false), ids)
          << model << " " << c["id"];
      const auto after_bos = c["ids_after_bos"].get<std::vector<TokenId>>();
      EXPECT_EQ(tok->Decode(after_bos), c["text"].get<std::string>()) << model << " " << c["id"];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9);
  auto tok = LoadVocab("models/stories260K.gguf");
  EXPECT_EQ(tok->Encode("Once upon a time", true, false),
            (std::vector<TokenId>{1, 403, 407, 261, 378}));
}

TEST(TokenizerTest, SpecialTokensOnlyWhenAsked) {
  auto gpt2 = LoadVocab("vocab/ggml-vocab-gpt-2.gguf");
  const TokenId eot = gpt2->vocab().Find("<|endoftext|>");
  ASSERT_EQ(eot, 50256);
  const std::string text = "Hello<|endoftext|> world";
  const auto plain = gpt2->Encode(text, false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
  EXPECT_GT(plain.size(), 5u);
  EXPECT_EQ(gpt2->Decode(plain), text);
  const auto parsed = gpt2->Encode(text, false, true);
  EXPECT_EQ(parsed, (std::vector<TokenId>{15496, eot, 995}));  // "Hello", eot, " world"
  EXPECT_EQ(gpt2->Decode(parsed), "Hello world");
  EXPECT_EQ(gpt2->Decode(parsed, {.special = true}), text);

  auto spm = LoadVocab("vocab/ggml-vocab-llama-spm.gguf");
  // SentencePiece: text after a special token gets the space prefix again (llama.cpp).
  const auto ids = spm->Encode("<s>Hello</s>", false, true);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(spm->vocab().tokens[ids[1]], "\xE2\x96\x81Hello");
  EXPECT_EQ(ids[2], 2);
  const auto no_parse = spm->Encode("<s>Hello</s>", false, false);
  EXPECT_EQ(std::count(no_parse.begin(), no_parse.end(), 1), 0);
  EXPECT_EQ(std::count(no_parse.begin(), no_parse.end(), 2), 0);
}

TEST(TokenizerTest, AddSpecialFollowsVocabFlags) {
  auto spm = LoadVocab("vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_TRUE(spm->vocab().add_bos);
  EXPECT_FALSE(spm->vocab().add_eos);
  auto with = spm->Encode("Hi", true, false);
  auto without = spm->Encode("Hi", false, false);
  ASSERT_EQ(with.size(), without.size() + 1);
  EXPECT_EQ(with[0], 1);
  EXPECT_EQ(spm->Encode("", true, false), std::vector<TokenId>{1});
  EXPECT_TRUE(spm->Encode("", false, false).empty());

  auto gpt2 = LoadVocab("vocab/ggml-vocab-gpt-2.gguf");  // gpt-2: no BOS by default
  EXPECT_FALSE(gpt2->vocab().add_bos);
  EXPECT_EQ(gpt2->Encode("Hi", true, false), gpt2->Encode("Hi", false, false));

  auto coder = LoadVocab("vocab/ggml-vocab-deepseek-coder.gguf");  // add_bos_token = true
  EXPECT_EQ(coder->Encode("Hi", true, false)[0], 32013);

  auto bert = LoadVocab("vocab/ggml-vocab-bert-bge.gguf");  // [CLS] ... [SEP]
  auto ids = bert->Encode("Hello world", true, false);
  EXPECT_EQ(ids, (std::vector<TokenId>{101, 7592, 2088, 102}));
}

TEST(TokenizerTest, EndOfGenerationTokens) {
  auto gpt2 = LoadVocab("vocab/ggml-vocab-gpt-2.gguf");
  EXPECT_TRUE(gpt2->vocab().IsEog(50256));
  auto phi3 = LoadVocab("vocab/ggml-vocab-phi-3.gguf");
  EXPECT_TRUE(phi3->vocab().IsEog(phi3->vocab().Find("<|end|>")));
  EXPECT_EQ(phi3->vocab().eot, phi3->vocab().Find("<|end|>"));
  EXPECT_TRUE(phi3->vocab().IsEog(32000));  // eos <|endoftext|>
  EXPECT_FALSE(phi3->vocab().IsEog(phi3->vocab().Find("<|user|>")));
}

// decode(encode(text)) == text for every lossless vocab on the llama.cpp texts and more.
TEST(TokenizerTest, DecodeEncodeRoundTrip) {
  std::vector<std::string> texts = testing::ReadVocabCases("vocab/ggml-vocab-qwen35.gguf.inp");
  texts.insert(texts.end(), {" leading space", "  two", "<|endoftext|> is text", "a\u00a0b",
                             "\xF0\x9F\xA6\x99 llama \xF0\x9F\xA6\x99", "tab\tnew\nline\r\n",
                             "e\u0301 \u00e9 \u1100\u1161", "\u200d\ufe0f"});
  const char* const kLossless[] = {"llama-spm", "phi-3", "gpt-2",  "deepseek-coder", "deepseek-llm",
                                   "falcon",    "mpt",   "refact", "starcoder"};
  for (const char* name : kLossless) {
    auto tok = LoadVocab(std::string("vocab/ggml-vocab-") + name + ".gguf");
    ASSERT_NE(tok, nullptr) << name;
    int n = 0;
    for (const std::string& text : texts) {
      const auto ids = tok->Encode(text, /*add_special=*/true, /*parse_special=*/false);
      EXPECT_EQ(tok->Decode(ids), text) << name << ": '" << text << "'";
      ++n;
    }
    EXPECT_GT(n, 50) << name;
  }
}

TEST(TokenizerTest, InvalidUtf8InputEncodesAndDecodesToValidText) {
  const std::string bad = std::string("ok \xFF\xFE x \xE2\x82 y \xC0\xAF", 15);
  for (const char* name : {"llama-spm", "gpt-2", "bert-bge", "deepseek-llm"}) {
    auto tok = LoadVocab(std::string("vocab/ggml-vocab-") + name + ".gguf");
    const auto ids = tok->Encode(bad, true, true);
    EXPECT_FALSE(ids.empty()) << name;
    const std::string text = tok->Decode(ids);
    EXPECT_TRUE(utf8::IsValid(text)) << name;
  }
  // Byte-level BPE keeps every byte: the invalid ones come back as U+FFFD.
  auto gpt2 = LoadVocab("vocab/ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(gpt2->Decode(gpt2->Encode(bad, false, false)),
            "ok \uFFFD\uFFFD x \uFFFD y \uFFFD\uFFFD");
}

TEST(TokenizerTest, UnknownPreIsAnErrorNamingIt) {
  auto file = testing::SyntheticBpeVocab("not-a-real-pre");
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("'not-a-real-pre'"), std::string::npos)
      << tok.status().ToString();
  EXPECT_NE(tok.status().message().find("tokenizer.ggml.pre"), std::string::npos);
}

TEST(TokenizerTest, MissingPreUsesDefaultRules) {
  auto file = testing::SyntheticBpeVocab(std::nullopt);
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab().pre, "default");
  EXPECT_EQ((*tok)->pre_patterns().size(), 4u);  // llama.cpp's default sequence
  // Default rules split punctuation and digits apart: "hello,123" -> hello | , | 123.
  EXPECT_EQ((*tok)->PreTokenize("hello,123"), (std::vector<std::string>{"hello", ",", "123"}));
  // Merges apply by rank: "hello" -> h e l l o -> he ll o -> hell o -> hello.
  const TokenId hello = (*tok)->vocab().Find("hello");
  ASSERT_NE(hello, kNoToken);
  EXPECT_EQ((*tok)->Encode("hello", false, false), std::vector<TokenId>{hello});
  EXPECT_EQ((*tok)->Decode((*tok)->Encode("hello, hell!", false, false)), "hello, hell!");
}

TEST(TokenizerTest, ConcurrentEncodesAgree) {
  auto tok = LoadVocab("vocab/ggml-vocab-deepseek-llm.gguf");
  std::string text;
  for (const std::string& c : testing::ReadVocabCases("vocab/ggml-vocab-qwen35.gguf.inp"))
    text += c;
  const auto want = tok->Encode(text, true, false);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) mismatches += tok->Encode(text, true, false) != want;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// A NaN score has no order, so SentencePiece merges by score would be undefined: refused, naming
// the key and the token.
TEST(TokenizerTest, NanScoreIsAnErrorNamingTheKey) {
  auto src = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_TRUE(src.ok());
  auto scores = (*src)->GetF32Array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.ok());
  GgufWriter w;
  for (const auto& [key, value] : (*src)->metadata()) w.Set(key, value);
  (*scores)[300] = std::numeric_limits<float>::quiet_NaN();
  w.Set("tokenizer.ggml.scores", GgufValue::F32Array(*scores));
  const std::string path = testing::TempDir() + "/nan-score.gguf";
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::FromGguf(**file);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("tokenizer.ggml.scores: NaN at token 300"),
            std::string::npos)
      << tok.status().ToString();
}

TEST(TokenizerTest, UnknownModelIsAnError) {
  auto file = testing::SyntheticBpeVocab("gpt-2", "t5");
  auto tok = Tokenizer::FromGguf(*file);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("'t5'"), std::string::npos) << tok.status().ToString();
}

}  // namespace
}  // namespace forge
