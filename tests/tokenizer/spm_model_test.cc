// SpmModel: every merge path (heap, rank buckets, windows over long segments) gives the ids of a
// naive reference SentencePiece merge (merge_reference.h), on two real vocabs, for short words,
// long words without spaces, runs, and invalid UTF-8.
#include "tokenizer/spm_model.h"

#include <gtest/gtest.h>

#include <random>

#include "merge_reference.h"
#include "tokenizer/encode_work.h"
#include "tokenizer_test_util.h"

namespace forge {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, as the tokenizer escapes ' '

// Random escaped texts: words over small alphabets (long ones too), runs, spaces, bytes.
std::vector<std::string> Texts(uint32_t seed, int count, int max_len) {
  return testing::RandomWords(seed, count, max_len,
                              {"etaoinshrdlucmfwypvbgkjqxz", "etaoin ", "0123456789", "=", " ",
                               "ab", "e\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99\xFF <"},
                              kSpace);
}

TEST(SpmModelTest, EveryMergePathMatchesTheNaiveReference) {
  for (const char* path : {"models/stories260K.gguf", "vocab/ggml-vocab-llama-spm.gguf"}) {
    const Tokenizer* tok = testing::LoadVocab(path);
    ASSERT_NE(tok, nullptr);
    const Vocab& vocab = tok->vocab();
    SpmModel heap(vocab), buckets(vocab), windows(vocab), defaults(vocab);
    heap.set_long_segment_limit(1 << 30);
    heap.set_windows(0, 0);
    buckets.set_long_segment_limit(0);
    buckets.set_windows(0, 0);
    windows.set_windows(4, 1);
    const EncodeWork before = ThisThreadEncodeWork();
    for (const std::string& text : Texts(3, 200, 500)) {
      const std::vector<TokenId> want = testing::NaiveSpm(vocab, text);
      for (const SpmModel* m : {&heap, &buckets, &windows, &defaults}) {
        std::vector<TokenId> got;
        m->Encode(text, &got);
        ASSERT_EQ(got, want) << path << " '" << text << "'";
      }
    }
    testing::ExpectWindowsAndFallbacks(before, path);
  }
}

TEST(SpmModelTest, DefaultWindowsOnAHugeWordMatchTheWholeSegmentRun) {
  const Tokenizer* tok = testing::LoadVocab("vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tok, nullptr);
  SpmModel whole(tok->vocab()), windows(tok->vocab());
  whole.set_windows(0, 0);
  std::mt19937 rng(9);
  for (int i = 0; i < 6; ++i) {
    std::string text;
    const int n = 20000 + static_cast<int>(rng() % 20000);
    const std::string letters = i % 2 ? "etaoinshrdlucmfwypvbgkjqxz" : "0123456789";
    for (int k = 0; k < n; ++k) text.push_back(letters[rng() % letters.size()]);
    std::vector<TokenId> a, b;
    const EncodeWork before = ThisThreadEncodeWork();
    windows.Encode(text, &a);
    EXPECT_GT(ThisThreadEncodeWork().windows, before.windows);
    EXPECT_EQ(ThisThreadEncodeWork().window_fallbacks, before.window_fallbacks);
    whole.Encode(text, &b);
    ASSERT_EQ(a, b) << n << " bytes";
  }
}

}  // namespace
}  // namespace forge
