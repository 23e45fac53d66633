// Pre-tokenizer splits equal Debian's python3-regex running the same patterns (an independent
// regex engine) on a corpus of mixed scripts, digits, emoji and whitespace runs, for every preset.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "base/utf8.h"
#include "support/test_env.h"
#include "tokenizer/bpe_presets.h"
#include "tokenizer/pre_tokenizer.h"

namespace forge {
namespace {

// Hand-picked texts; the llama.cpp vectors and random strings are added in Corpus().
const char* const kTexts[] = {
    "Hello world",
    " Hello World!",
    "I've been 'told he's there, 'RE you sure? 'M not sure I'll",
    "We'Ve a'lL 'D 'S 'T 'Ll don't",
    "Ünïcödé façade naïve Äpfel Straße",
    "Привет, мир! Ёлка",
    "Καλημέρα κόσμε",
    "مرحبا بالعالم ١٢٣٤٥ ٦٧",
    "שלום עולם",
    "नमस्ते दुनिया १२३",
    "สวัสดีชาวโลก",
    "កាន់តែពិសេសអាចខលចេញ",
    "你好，世界！我想在apple工作1314151天～",
    "こんにちは、世界。カタカナ ｶﾀｶﾅ",
    "안녕하세요 세계 한국어",
    "3 33 333 3333 33333 333333 3.14 1,000,000",
    "１２３ ² ³ ½ ¾ Ⅻ ⅷ ① 🄁",
    "🚀 (normal) 😶‍🌫️ (multiple emojis concatenated) ✅ 🦙🦙",
    "👍🏽 👨‍👩‍👧‍👦 🇩🇪🇫🇷 ❤️ ☺︎",
    "   leading",
    "trailing   ",
    "a  b   c    d",
    "tab\there\t\tand\t\t\tmore",
    "line\nbreak\n\nand\r\nwindows\r\n\r\n",
    "\n \n\n \n\n\n \t \t\t \t\n",
    "  \n   \n    \n     \n",
    "nbsp\u00a0here\u00a0\u00a0x",
    "ideo\u3000space\u3000\u3000x",
    "sep\u2028line\u2029para",
    "vt\x0b ff\x0c x",
    "nel\u0085x \u0085 y",
    "int main() { return a[i] + b->c; } // comment",
    "x = {'a': 1, \"b\": [2, 3]}; y=x**2",
    "!!!!!! ?????? ...... ------======= ''''''``````\"\"\"\"",
    "$100 + 5% < 3^2 | ~x @home #tag",
    "e\u0301 combining a\u0308 o\u0302",
    "Cửa Việt",
    "ied 4 ½ months",
    "w048 7tuijk dsdfhu",
    "«guillemets» „quotes“ ‘single’ — dash – en",
    "mixedCASE CamelCase HTTPServer iPhone",
    "ABC'S DEF'LL ghi'd",
    "\t\n",
    "",
    " ",
    "  ",
    "...",
    "a",
    "\u200b zero\u200bwidth",
};

// Characters for random strings: every script and class above plus separators and emoji parts.
const char* const kPool[] = {
    "a",      "Z",    "é",      "Ä",      "ß",      "я",      "Ж",    "λ",  "Σ",  "ع",
    "ש",      "न",    "्",       "ि",      "ก",      "ั",       "ក",    "ា",  "中", "文",
    "あ",     "カ",   "한",     "국",     "0",      "7",      "٣",    "१",  "１", "²",
    "½",      "Ⅻ",    "!",      "?",      ".",      ",",      "'",    "\"", "-",  "_",
    "(",      ")",    "$",      "+",      "<",      "=",      ">",    "^",  "~",  "|",
    "`",      "@",    "#",      "%",      "&",      "*",      "/",    "\\", "…",  "。",
    "，",     "、",   "«",      "—",      " ",      " ",      " ",    "  ", "\t", "\n",
    "\r",     "\r\n", "\u00a0", "\u3000", "\u2028", "\u0085", "\x0b", "🚀",  "😶",  "\u200d",
    "\ufe0f", "🏽", "🇩",      "✅",      "s",      "t",      "re",   "ve", "m",  "ll",
    "d",      "S",    "RE",     "\u0301", "\u0308",
};

std::vector<std::string> Corpus() {
  std::vector<std::string> corpus(std::begin(kTexts), std::end(kTexts));
  // llama.cpp's own tokenizer vectors (the 50 of qwen35 cover the others).
  std::ifstream in(testing::TestDataPath("vocab/ggml-vocab-qwen35.gguf.inp"), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str(), sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0, next; (next = data.find(sep, pos)) != std::string::npos;
       pos = next + sep.size()) {
    corpus.push_back(data.substr(pos, next - pos));
  }
  std::mt19937 rng(20240611);
  for (int i = 0; i < 400; ++i) {
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) s += kPool[rng() % std::size(kPool)];
    corpus.push_back(s);
  }
  return corpus;
}

std::string Python() {
  return testing::FileExists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

TEST(PreTokenizerTest, SplitsLikePythonRegex) {
  const std::vector<std::string> corpus = Corpus();
  for (const std::string& s : corpus) ASSERT_TRUE(utf8::IsValid(s));
  nlohmann::json job;
  job["corpus"] = corpus;
  for (const BpePreset& p : AllBpePresets()) {
    nlohmann::json patterns = nlohmann::json::array();
    for (std::string_view pat : p.patterns) patterns.push_back(std::string(pat));
    job["presets"].push_back({{"name", std::string(p.names[0])}, {"patterns", patterns}});
  }
  const std::string dir = testing::TempDir();
  const std::string in_path = dir + "/job.json", out_path = dir + "/splits.json";
  std::ofstream(in_path) << job.dump();
  const std::string cmd = Python() +
                          " " FORGE_SOURCE_DIR "/tests/tokenizer/pretokenizer_oracle.py " +
                          in_path + " " + out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << " failed: python3 with Debian's python3-regex "
                                         << "is needed (apt install python3-regex)";
  nlohmann::json result;
  std::ifstream(out_path) >> result;
  std::printf("[ oracle   ] python3-regex %s, %zu texts\n",
              result["regex_version"].get<std::string>().c_str(), corpus.size());
  for (const BpePreset& p : AllBpePresets()) {
    const std::string name(p.names[0]);
    auto pre = PreTokenizer::Create(p.patterns);
    ASSERT_TRUE(pre.ok()) << name << ": " << pre.status().ToString();
    const nlohmann::json& expected = result["splits"][name];
    ASSERT_EQ(expected.size(), corpus.size()) << name;
    size_t same = 0;
    for (size_t i = 0; i < corpus.size(); ++i) {
      std::vector<std::string_view> pieces;
      (*pre)->Split(corpus[i], &pieces);
      const std::vector<std::string> got(pieces.begin(), pieces.end());
      const auto want = expected[i].get<std::vector<std::string>>();
      if (got == want) {
        ++same;
        continue;
      }
      std::string g, w;
      for (const auto& s : got) g += "[" + s + "]";
      for (const auto& s : want) w += "[" + s + "]";
      ADD_FAILURE() << "preset " << name << " text " << i << " '" << corpus[i] << "'\n  forge  "
                    << g << "\n  python " << w;
    }
    std::printf("[ oracle   ] %-14s %zu/%zu texts split alike\n", name.c_str(), same,
                corpus.size());
  }
}

}  // namespace
}  // namespace forge
