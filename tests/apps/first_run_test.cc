// scripts/first_run.sh (the end of scripts/setup.sh) on the built binary: its output says what
// was built, holds a readable generation (the words the model's successor map predicts, read from
// its metadata), the speed beside the floor, and the next two commands.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

std::string RunCapture(const std::string& cmd, int* status) {
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
  *status = pclose(p);
  return out;
}

std::vector<std::string> Split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST(FirstRunTest, OutputSaysWhatWasBuiltShowsWordsSpeedAndNextCommands) {
  namespace fs = std::filesystem;
  const fs::path build = fs::path(ForgeBinary()).parent_path().parent_path().parent_path();
  const std::string work = TempDir();
  int status = 0;
  const std::string out = RunCapture("FORGE_BIN='" + ForgeBinary() + "' " +
                                         std::string(FORGE_SOURCE_DIR) + "/scripts/first_run.sh " +
                                         build.string() + " " + work + " 2>&1",
                                     &status);
  ASSERT_EQ(status, 0) << out;
  std::printf("%s", out.c_str());

  EXPECT_NE(out.find("Built:      " + ForgeBinary()), std::string::npos);
  EXPECT_NE(out.find("Model:      " + work + "/first-run-words.gguf: llama Q8_0"),
            std::string::npos);

  // The generation: 24 words, each the model's greedy successor of the one before, by the map
  // make-model wrote into the file (Successor(t) = F + (mul (t - F) + add) mod (n - F)).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("\n            once upon a time -> ([^\n]*)\n")))
      << out;
  const std::vector<std::string> words = Split(m[1]);
  ASSERT_EQ(words.size(), 24u) << m[1];
  auto file = GgufFile::Open(work + "/first-run-words.gguf");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const uint64_t mul = *(*file)->GetU64("forge.peaked.successor_mul");
  const uint64_t add = *(*file)->GetU64("forge.peaked.successor_add");
  const uint64_t first = *(*file)->GetU64("forge.peaked.successor_first");
  const GgufValue* tokens = (*file)->Find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  std::vector<std::string> vocab;
  for (const GgufValue& t : tokens->items()) vocab.push_back(t.str());
  const uint64_t n = vocab.size(), w = n - first;
  const std::string space = "\xe2\x96\x81";
  auto id_of = [&](const std::string& word) -> int64_t {
    for (uint64_t i = first; i < n; ++i) {
      if (vocab[i] == space + word) return static_cast<int64_t>(i);
    }
    return -1;
  };
  uint64_t t = id_of("time");
  ASSERT_NE(t, uint64_t(-1));
  for (const std::string& word : words) {
    for (char c : word) ASSERT_TRUE(c >= 'a' && c <= 'z') << "not a plain word: " << word;
    t = first + ((mul * (t - first)) % w + add) % w;
    EXPECT_EQ(space + word, vocab[t]) << "after " << m[1];
  }

  // The speed beside the floor, both measured.
  ASSERT_TRUE(std::regex_search(
      out, m,
      std::regex(
          "Speed \\(([^)]*)\\): decode ([0-9.]+) tokens/s, floor ([0-9.]+) tokens/s \\(([0-9]+)% "
          "of the floor\\)")))
      << out;
  EXPECT_GT(std::stod(m[2]), 0);
  EXPECT_GT(std::stod(m[3]), 0);
  // The next two commands.
  EXPECT_NE(out.find("forge run -m MODEL.gguf -p"), std::string::npos);
  EXPECT_NE(out.find("forge serve -m MODEL.gguf --port 8080"), std::string::npos);
  EXPECT_NE(out.find("http://127.0.0.1:8080/"), std::string::npos);
}

}  // namespace
}  // namespace forge::testing
