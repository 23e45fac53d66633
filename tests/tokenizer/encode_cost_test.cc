// Encoding stays linear in the text for every input shape: the steps it counts (EncodeWork:
// merge-queue operations weighted by their cost, scans, trie steps) for 8x the text are at most
// ~8x, and per byte under a bound that a heap over one long piece (log2 n a step) would pass. No
// wall time is asserted. Long words and runs take the windows, proven exact (no fallbacks).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tokenizer/encode_work.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace forge {
namespace {

struct Shape {
  const char* name;
  bool one_piece;  // one long word or run: the windows must take it
};

constexpr Shape kShapes[] = {
    {"prose", false},  {"word", true},    {"run", true},       {"bytes", false},
    {"spaces", false}, {"digits", false}, {"newlines", false}, {"punct", false},
};

std::string MakeText(std::string_view shape, size_t n) {
  std::mt19937 rng(17);
  std::string s;
  s.reserve(n + 16);
  auto pick = [&](std::string_view from) { s.push_back(from[rng() % from.size()]); };
  static const char* const kWords[] = {"Once",   "upon",  "a",     "time",  "there", "was",
                                       "little", "girl",  "named", "Lily.", "She",   "liked",
                                       "to",     "play,", "in",    "the",   "park",  "with",
                                       "her",    "dog",   "123",   "it's"};
  while (s.size() < n) {
    if (shape == "prose") {
      s += kWords[rng() % std::size(kWords)];
      s += rng() % 10 == 0 ? '\n' : ' ';
    } else if (shape == "word") {
      pick("abcdefghijklmnopqrstuvwxyz");
    } else if (shape == "run") {
      s.push_back('a');
    } else if (shape == "bytes") {
      s.push_back(static_cast<char>(rng() & 0xFF));
    } else if (shape == "spaces") {
      pick(" \t ");
    } else if (shape == "digits") {
      pick("0123456789");
    } else if (shape == "newlines") {
      pick("\n\n\r ");
    } else {
      pick("!.,;:-?=<>");
    }
  }
  s.resize(n);
  return s;
}

TEST(EncodeCostTest, StepsGrowLinearlyForEveryShape) {
  constexpr size_t kSmall = 64 << 10, kLarge = 512 << 10;  // 8x
  for (const char* path : {"models/stories260K.gguf", "vocab/ggml-vocab-llama-spm.gguf",
                           "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-deepseek-llm.gguf"}) {
    const Tokenizer* tok = testing::LoadVocab(path);
    ASSERT_NE(tok, nullptr);
    for (const Shape& shape : kShapes) {
      uint64_t steps[2];
      for (int i = 0; i < 2; ++i) {
        const std::string text = MakeText(shape.name, i == 0 ? kSmall : kLarge);
        const EncodeWork before = ThisThreadEncodeWork();
        const std::vector<TokenId> ids = tok->Encode(text, true, false);
        const EncodeWork& after = ThisThreadEncodeWork();
        steps[i] = after.steps - before.steps;
        ASSERT_FALSE(ids.empty());
        EXPECT_EQ(after.window_fallbacks, before.window_fallbacks) << path << " " << shape.name;
        if (shape.one_piece && i == 1) {
          EXPECT_GT(after.windows, before.windows) << path << " " << shape.name;
        }
      }
      const double per_byte = static_cast<double>(steps[1]) / kLarge;
      EXPECT_LE(steps[1], 10 * steps[0] + kSmall) << path << " " << shape.name;
      EXPECT_LT(per_byte, 16.0) << path << " " << shape.name;
      std::printf("%-36s %-9s %6.2f steps/byte (64 KiB: %6.2f)\n", path, shape.name, per_byte,
                  static_cast<double>(steps[0]) / kSmall);
    }
  }
}

}  // namespace
}  // namespace forge
