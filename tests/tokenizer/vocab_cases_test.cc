// llama.cpp's tokenizer vectors (../shared/testdata/vocab): every case of every vocab with a .gguf
// encodes (no BOS/EOS, parse_special off) to exactly the ids Hugging Face gave. One test per file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf/gguf_file.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"

namespace forge {
namespace {

std::string Escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// Every vocab that has .inp/.out upstream; those without a .gguf here are skipped with the reason.
const char* const kVocabs[] = {"bert-bge",  "command-r", "deepseek-coder", "deepseek-llm",
                               "falcon",    "gemma-4",   "gpt-2",          "llama-bpe",
                               "llama-spm", "mpt",       "phi-3",          "qwen2",
                               "qwen35",    "refact",    "starcoder"};

class VocabCasesTest : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabCasesTest, EncodesEveryCase) {
  const std::string relative = std::string("vocab/ggml-vocab-") + GetParam() + ".gguf";
  const std::string base = testing::TestDataDir() + "/" + relative;
  ASSERT_TRUE(testing::FileExists(base + ".inp")) << base << ".inp";
  if (!testing::FileExists(base)) {
    GTEST_SKIP() << base << " is not in the test data (upstream file over 4 MB)";
  }
  auto file = GgufFile::Open(base);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto tok = Tokenizer::FromGguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::vector<std::string> cases = testing::ReadVocabCases(relative + ".inp");
  const std::vector<std::vector<TokenId>> expected = testing::ReadVocabExpected(relative + ".out");
  ASSERT_EQ(cases.size(), expected.size()) << "cases in .inp vs lines in .out";
  ASSERT_GT(cases.size(), 0u);
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<TokenId> got = (*tok)->Encode(cases[i], /*add_special=*/false,
                                                    /*parse_special=*/false);
    if (got == expected[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " case " << i << " '" << Escape(cases[i]) << "'\n  expected"
                    << testing::JoinIds(expected[i]) << "\n  got     " << testing::JoinIds(got);
    }
  }
  std::printf("[ vocab    ] %-15s %zu/%zu cases match\n", GetParam(), passed, cases.size());
  EXPECT_EQ(passed, cases.size());
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, VocabCasesTest, ::testing::ValuesIn(kVocabs),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// Every .inp file in the folder is one of kVocabs, so a new upstream file is not left out.
TEST(VocabCasesListTest, CoversEveryInpFile) {
  const std::string dir = testing::TestDataDir() + "/vocab";
  ASSERT_TRUE(testing::FileExists(dir)) << dir;
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "ggml-vocab-", suffix = ".gguf.inp";
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string vocab =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    bool listed = false;
    for (const char* v : kVocabs) listed |= vocab == v;
    EXPECT_TRUE(listed) << name << " is not in kVocabs";
    ++n;
  }
  EXPECT_EQ(n, std::size(kVocabs));
}

}  // namespace
}  // namespace forge
