// BpeModel: the array scan used for short pieces and the heap used for long ones merge alike,
// on real pieces and on long runs that only the heap sees by default.
#include "tokenizer/bpe_model.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer_test_util.h"

namespace forge {
namespace {

TEST(BpeModelTest, ScanAndHeapMergeAlike) {
  for (const char* name : {"gpt-2", "deepseek-llm", "falcon"}) {
    auto file =
        GgufFile::Open(testing::TestDataPath(std::string("vocab/ggml-vocab-") + name + ".gguf"));
    ASSERT_TRUE(file.ok());
    auto vocab = Vocab::FromGguf(**file);
    ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
    auto scan = BpeModel::Build(*vocab, true, false);
    auto heap = BpeModel::Build(*vocab, true, false);
    ASSERT_TRUE(scan.ok() && heap.ok());
    scan->set_small_piece_limit(1 << 20);
    heap->set_small_piece_limit(0);
    EXPECT_GT(scan->num_merges(), 40000u);

    std::vector<std::string> pieces = testing::ReadVocabCases("vocab/ggml-vocab-qwen35.gguf.inp");
    std::mt19937 rng(3);
    const std::string letters = "etaoinshrdlucmfwypvbgkjqxz   ..,,''0123";
    for (int i = 0; i < 300; ++i) {  // long "words", 1 to 120 bytes
      std::string w;
      const int n = 1 + static_cast<int>(rng() % 120);
      for (int k = 0; k < n; ++k) w.push_back(letters[rng() % letters.size()]);
      pieces.push_back(w);
    }
    pieces.push_back(std::string(300, ' '));
    pieces.push_back(std::string(200, '='));
    size_t long_pieces = 0;
    for (const std::string& p : pieces) {
      std::vector<TokenId> a, b;
      scan->EncodePiece(p, &a);
      heap->EncodePiece(p, &b);
      EXPECT_EQ(a, b) << name << " '" << p << "'";
      long_pieces += p.size() > 32;
    }
    EXPECT_GT(long_pieces, 100u);
  }
}

}  // namespace
}  // namespace forge
