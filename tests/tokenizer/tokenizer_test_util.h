// Helpers for the tokenizer tests (header-only: only *_test.cc files are built): loading a
// test-data vocab, reading llama.cpp's .inp cases, and a small synthetic BPE vocab.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/encode_work.h"
#include "tokenizer/tokenizer.h"

namespace forge::testing {

// The tokenizer of TestDataDir()/relative, loaded once per path; null (and a failure) on error.
inline const Tokenizer* LoadVocab(const std::string& relative) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>>* cache =
      new std::map<std::string, std::unique_ptr<Tokenizer>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(relative);
  if (it != cache->end()) return it->second.get();
  auto file = GgufFile::Open(TestDataPath(relative));
  if (!file.ok()) {
    ADD_FAILURE() << file.status().ToString();
    return nullptr;
  }
  auto tok = Tokenizer::FromGguf(**file);
  if (!tok.ok()) {
    ADD_FAILURE() << tok.status().ToString();
    return nullptr;
  }
  std::unique_ptr<Tokenizer>& slot = (*cache)[relative];
  slot = std::move(tok).value();
  return slot.get();
}

inline std::string ReadTestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The cases of a .inp file (SOURCE.md: split on "\n__ggml_vocab_test__\n"; text after the last
// separator is a case only when non-empty).
inline std::vector<std::string> ReadVocabCases(const std::string& relative) {
  const std::string data = ReadTestFile(TestDataPath(relative));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  while (true) {
    const size_t next = data.find(sep, pos);
    if (next == std::string::npos) {
      if (pos < data.size()) cases.push_back(data.substr(pos));
      return cases;
    }
    cases.push_back(data.substr(pos, next - pos));
    pos = next + sep.size();
  }
}

// The expected ids of a .out file: a line per case, each id after a space (an empty line: none).
inline std::vector<std::vector<TokenId>> ReadVocabExpected(const std::string& relative) {
  std::vector<std::vector<TokenId>> out;
  std::istringstream in(ReadTestFile(TestDataPath(relative)));
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<TokenId> ids;
    for (long v; ls >> v;) ids.push_back(static_cast<TokenId>(v));
    out.push_back(std::move(ids));
  }
  return out;
}

// Ids as a .out line writes them (" 15043 3186"), for messages.
inline std::string JoinIds(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) {
    s.push_back(' ');
    s += std::to_string(id);
  }
  return s;
}

// A vocab-only GGUF in TempDir(): the 256 GPT-2 byte symbols, then "he", "ll", "hell", "hello"
// from four merges; tokenizer.ggml.pre = pre (absent when nullopt).
inline std::unique_ptr<GgufFile> SyntheticBpeVocab(std::optional<std::string> pre,
                                                   const std::string& model = "gpt2") {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_unicode::ByteToText(static_cast<uint8_t>(b)));
  for (const char* t : {"he", "ll", "hell", "hello"}) tokens.push_back(t);
  GgufWriter w;
  w.Set("general.architecture", GgufValue::String("gpt2"));
  w.Set("tokenizer.ggml.model", GgufValue::String(model));
  if (pre) w.Set("tokenizer.ggml.pre", GgufValue::String(*pre));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  w.Set("tokenizer.ggml.merges", GgufValue::StringArray({"h e", "l l", "he ll", "hell o"}));
  const std::string path = TempDir() + "/synthetic-vocab.gguf";
  Status st = w.WriteFile(path);
  EXPECT_TRUE(st.ok()) << st.ToString();
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? std::move(file).value() : nullptr;
}

// After a merge test on this thread since `before`: the windows ran (over 100 of them) and kept
// their tokens, and some edge failed its proof (the piece was then merged whole), so both
// outcomes were checked against the reference.
inline void ExpectWindowsAndFallbacks(const EncodeWork& before, const std::string& label) {
  EXPECT_GT(ThisThreadEncodeWork().windows, before.windows + 100) << label;
  EXPECT_GT(ThisThreadEncodeWork().window_fallbacks, before.window_fallbacks) << label;
}

// Random words for the merge tests: each from one of the alphabets, picked at random, 1 to
// max_len of its characters at random; a ' ' becomes space (the SentencePiece tests' U+2581).
inline std::vector<std::string> RandomWords(uint32_t seed, int count, int max_len,
                                            const std::vector<std::string>& alphabets,
                                            std::string_view space = " ") {
  std::mt19937 rng(seed);
  std::vector<std::string> words;
  for (int i = 0; i < count; ++i) {
    const std::string& a = alphabets[rng() % alphabets.size()];
    std::string w;
    const int n = 1 + static_cast<int>(rng() % max_len);
    for (int k = 0; k < n; ++k) {
      const char c = a[rng() % a.size()];
      if (c == ' ') {
        w += space;
      } else {
        w.push_back(c);
      }
    }
    words.push_back(w);
  }
  return words;
}

}  // namespace forge::testing
