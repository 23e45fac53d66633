// BpeModel: every merge path (the array scan for short pieces, the heap, the rank buckets, and
// windows over long pieces) gives the ids of a naive reference BPE (merge_reference.h), on real
// pieces, long random words, long runs, and a vocab whose merges are not in rank order.
#include "tokenizer/bpe_model.h"

#include <gtest/gtest.h>

#include <random>

#include "merge_reference.h"
#include "tokenizer/encode_work.h"
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

// Random pieces for the long-piece paths: words over a small alphabet (many merges), runs of one
// character, digits, mixed bytes.
std::vector<std::string> LongPieces(uint32_t seed, int count, int max_len) {
  return testing::RandomWords(seed, count, max_len,
                              {"etaoinshrdlucmfwypvbgkjqxz", "0123456789", "=", " ", "ab", "!?.,-",
                               "e\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99\xFF"});
}

StatusOr<Vocab> LoadTestVocab(const std::string& name) {
  auto file = GgufFile::Open(testing::TestDataPath("vocab/ggml-vocab-" + name + ".gguf"));
  if (!file.ok()) return file.status();
  return Vocab::FromGguf(**file);
}

TEST(BpeModelTest, EveryMergePathMatchesTheNaiveReference) {
  for (const char* name : {"gpt-2", "starcoder"}) {
    auto vocab = LoadTestVocab(name);
    ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
    const testing::NaiveBpe naive(*vocab);
    // Paths: heap only; buckets only; tiny windows (many edges, some failing their proof, so
    // both outcomes run); the defaults.
    auto heap = BpeModel::Build(*vocab, true, false);
    auto buckets = BpeModel::Build(*vocab, true, false);
    auto windows = BpeModel::Build(*vocab, true, false);
    auto defaults = BpeModel::Build(*vocab, true, false);
    ASSERT_TRUE(heap.ok() && buckets.ok() && windows.ok() && defaults.ok());
    heap->set_small_piece_limit(0);
    heap->set_long_piece_limit(1 << 30);
    heap->set_windows(0, 0);
    buckets->set_small_piece_limit(0);
    buckets->set_long_piece_limit(0);
    buckets->set_windows(0, 0);
    windows->set_windows(6, 3);
    const EncodeWork before = ThisThreadEncodeWork();
    for (const std::string& p : LongPieces(11, 150, 600)) {
      const std::vector<TokenId> want = naive.Encode(p);
      for (const auto* m : {&*heap, &*buckets, &*windows, &*defaults}) {
        std::vector<TokenId> got;
        m->EncodePiece(p, &got);
        ASSERT_EQ(got, want) << name << " '" << p << "'";
      }
    }
    testing::ExpectWindowsAndFallbacks(before, name);
  }
}

TEST(BpeModelTest, DefaultWindowsOnAHugeWordMatchTheWholePieceRun) {
  auto vocab = LoadTestVocab("gpt-2");
  ASSERT_TRUE(vocab.ok());
  auto whole = BpeModel::Build(*vocab, true, false);
  auto windows = BpeModel::Build(*vocab, true, false);
  ASSERT_TRUE(whole.ok() && windows.ok());
  whole->set_windows(0, 0);
  for (const std::string& p : LongPieces(5, 12, 40000)) {
    std::vector<TokenId> a, b;
    const EncodeWork before = ThisThreadEncodeWork();
    windows->EncodePiece(p, &a);
    const bool windowed = ThisThreadEncodeWork().windows > before.windows;
    EXPECT_EQ(ThisThreadEncodeWork().window_fallbacks, before.window_fallbacks);
    whole->EncodePiece(p, &b);
    ASSERT_EQ(a, b) << p.size() << " bytes";
    if (p.size() > 5000) {
      EXPECT_TRUE(windowed) << p.size() << " bytes";
    }
  }
}

// Merges out of rank order ("a bc" ranked before "b c", which makes "bc"): a merge can make a
// pair ranked before itself. The queue's overflow heap takes it; windows cannot prove such runs
// and fall back.
TEST(BpeModelTest, MergesOutOfRankOrder) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_unicode::ByteToText(static_cast<uint8_t>(b)));
  for (const char* t : {"abc", "bc", "ab", "abcab"}) tokens.push_back(t);
  GgufWriter w;
  w.Set("general.architecture", GgufValue::String("gpt2"));
  w.Set("tokenizer.ggml.model", GgufValue::String("gpt2"));
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(tokens));
  w.Set("tokenizer.ggml.merges", GgufValue::StringArray({"a bc", "abc ab", "b c", "a b"}));
  const std::string path = testing::TempDir() + "/unordered-merges.gguf";
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok());
  auto vocab = Vocab::FromGguf(**file);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  const testing::NaiveBpe naive(*vocab);
  auto buckets = BpeModel::Build(*vocab, true, false);
  auto windows = BpeModel::Build(*vocab, true, false);
  ASSERT_TRUE(buckets.ok() && windows.ok());
  buckets->set_small_piece_limit(0);
  buckets->set_long_piece_limit(0);
  buckets->set_windows(0, 0);
  windows->set_windows(5, 3);
  std::mt19937 rng(2);
  const EncodeWork before = ThisThreadEncodeWork();
  for (int i = 0; i < 200; ++i) {
    std::string p;
    const int n = 1 + static_cast<int>(rng() % 300);
    for (int k = 0; k < n; ++k) p.push_back("abc"[rng() % 3]);
    if (i % 4 == 0) p = std::string(n / 3 + 1, 'x') + "abcabcab";
    const std::vector<TokenId> want = naive.Encode(p);
    for (const auto* m : {&*buckets, &*windows}) {
      std::vector<TokenId> got;
      m->EncodePiece(p, &got);
      ASSERT_EQ(got, want) << "'" << p << "'";
    }
  }
  EXPECT_GT(ThisThreadEncodeWork().window_fallbacks, before.window_fallbacks);
}

}  // namespace
}  // namespace forge
