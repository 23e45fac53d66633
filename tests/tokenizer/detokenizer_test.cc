// Streaming decode: characters cut by token boundaries are held back until complete, an
// unfinished one becomes U+FFFD at the end, and every chunk is valid UTF-8.
#include "tokenizer/detokenizer.h"

#include <gtest/gtest.h>

#include "base/utf8.h"
#include "tokenizer_test_util.h"

namespace forge {
namespace {

using ::forge::testing::LoadVocab;

// Streams ids one by one; checks each chunk is valid UTF-8; returns the text and how many pushes
// held bytes back.
std::string Stream(const Tokenizer& tok, const std::vector<TokenId>& ids, int* holds,
                   DecodeOptions options = {}) {
  StreamingDetokenizer detok(tok, options);
  std::string text;
  *holds = 0;
  for (TokenId id : ids) {
    const std::string chunk = detok.Push(id);
    EXPECT_TRUE(utf8::IsValid(chunk)) << "token " << id;
    if (detok.pending_bytes() > 0) ++*holds;
    text += chunk;
  }
  const std::string tail = detok.Finish();
  EXPECT_TRUE(utf8::IsValid(tail));
  return text + tail;
}

TEST(DetokenizerTest, SpmByteFallbackIsHeldUntilComplete) {
  auto tok = LoadVocab("vocab/ggml-vocab-llama-spm.gguf");
  const std::string text =
      "llama \xF0\x9F\xA6\x99 and \xF0\x9F\x9A\x80!";  // 🦙 🚀: byte tokens
  const auto ids = tok->Encode(text, true, false);
  int holds = 0;
  EXPECT_EQ(Stream(*tok, ids, &holds), text);
  EXPECT_EQ(holds, 3 + 3);  // each 4-byte emoji is held back for 3 tokens
  EXPECT_EQ(Stream(*tok, ids, &holds), tok->Decode(ids));
}

TEST(DetokenizerTest, BpeTokensSplittingCharacters) {
  auto tok = LoadVocab("vocab/ggml-vocab-gpt-2.gguf");
  const std::string text =
      "🚀 (normal) 😶‍🌫️ 我想在apple工作1314151天～ кириллица";
  const auto ids = tok->Encode(text, false, false);
  int holds = 0;
  EXPECT_EQ(Stream(*tok, ids, &holds), text);
  EXPECT_GT(holds, 0);  // gpt-2 cuts many of these characters between tokens
}

TEST(DetokenizerTest, UnfinishedSequenceBecomesReplacementAtEnd) {
  auto tok = LoadVocab("vocab/ggml-vocab-llama-spm.gguf");
  const TokenId f0 = tok->vocab().ByteToken(0xF0), x9f = tok->vocab().ByteToken(0x9F);
  const TokenId a = tok->vocab().ByteToken('A');
  StreamingDetokenizer detok(*tok, {.strip_leading_space = false});
  EXPECT_EQ(detok.Push(f0), "");
  EXPECT_EQ(detok.Push(x9f), "");
  EXPECT_EQ(detok.pending_bytes(), 2u);
  EXPECT_EQ(detok.Finish(), "\uFFFD");
  // A byte that cannot continue the sequence: the prefix is replaced at once, the byte kept.
  EXPECT_EQ(detok.Push(f0), "");
  EXPECT_EQ(detok.Push(a),
            "\uFFFD"
            "A");
  // Bytes that can never start a sequence are replaced immediately.
  EXPECT_EQ(detok.Push(tok->vocab().ByteToken(0xFF)), "\uFFFD");
  EXPECT_EQ(detok.pending_bytes(), 0u);
}

TEST(DetokenizerTest, LeadingSpaceOfSentencePiece) {
  auto tok = LoadVocab("vocab/ggml-vocab-llama-spm.gguf");
  const auto ids = tok->Encode("Hello world", true, false);  // BOS ▁Hello ▁world
  EXPECT_EQ(tok->Decode(ids), "Hello world");
  EXPECT_EQ(tok->Decode(ids, {.strip_leading_space = false}), " Hello world");
  EXPECT_EQ(tok->Decode(ids, {.special = true}), "<s>Hello world");
  // Without BOS the first piece is stripped the same way.
  EXPECT_EQ(tok->Decode(std::vector<TokenId>(ids.begin() + 1, ids.end())), "Hello world");
  // A stream that continues text keeps the space.
  int holds = 0;
  EXPECT_EQ(Stream(*tok, {ids[2]}, &holds, {.strip_leading_space = false}), " world");
}

TEST(DetokenizerTest, ControlTokensAreSilentUnlessSpecial) {
  auto tok = LoadVocab("vocab/ggml-vocab-phi-3.gguf");
  const TokenId end = tok->vocab().Find("<|end|>");
  EXPECT_EQ(tok->TokenToPiece(end, false), "");
  EXPECT_EQ(tok->TokenToPiece(end, true), "<|end|>");
  EXPECT_EQ(tok->TokenToPiece(-1, true), "");
  EXPECT_EQ(tok->TokenToPiece(tok->vocab().size(), true), "");
}

}  // namespace
}  // namespace forge
