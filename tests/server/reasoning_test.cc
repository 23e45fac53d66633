// ReasoningSplitter: any chunking of a text gives the split of the whole text, which a reference
// computes with plain string searches; PromptOpensReasoning.
#include "server/reasoning.h"

#include <gtest/gtest.h>

#include <random>

namespace forge::server {
namespace {

// The split of a whole text, by another route: find the tags directly.
ReasoningPiece Reference(const std::string& text, bool in_reasoning) {
  const std::string open = "<think>", close = "</think>";
  ReasoningPiece out;
  std::string rest = text;
  if (!in_reasoning) {
    const size_t first = rest.find_first_not_of(" \n\t\r");
    if (first == std::string::npos || rest.compare(first, open.size(), open) != 0) {
      out.content = rest;
      return out;
    }
    rest = rest.substr(first + open.size());
  }
  const size_t end = rest.find(close);
  if (end == std::string::npos) {
    out.reasoning = rest;
    return out;
  }
  out.reasoning = rest.substr(0, end);
  rest = rest.substr(end + close.size());
  const size_t first = rest.find_first_not_of(" \n\t\r");
  out.content = first == std::string::npos ? "" : rest.substr(first);
  return out;
}

TEST(ReasoningSplitterTest, AnyChunkingEqualsTheWholeSplit) {
  const char* parts[] = {"<think>", "</think>", "<",    "</", "<th",    "think>", "</thi",
                         "abc",     " ",        "\n\n", "x",  "<tool>", "é"};
  std::mt19937 rng(11);
  int reasoning_seen = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    for (int k = 0, n = static_cast<int>(rng() % 10); k < n; ++k) text += parts[rng() % 13];
    const bool in_reasoning = rng() % 2;
    ReasoningSplitter split(in_reasoning);
    ReasoningPiece got;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 6, text.size() - at);
      ReasoningPiece p = split.Feed(std::string_view(text).substr(at, n));
      got.reasoning += p.reasoning;
      got.content += p.content;
      at += n;
    }
    ReasoningPiece last = split.Finish();
    got.reasoning += last.reasoning;
    got.content += last.content;
    const ReasoningPiece want = Reference(text, in_reasoning);
    EXPECT_EQ(got.reasoning, want.reasoning) << "text [" << text << "] in " << in_reasoning;
    EXPECT_EQ(got.content, want.content) << "text [" << text << "] in " << in_reasoning;
    reasoning_seen += !want.reasoning.empty();
  }
  EXPECT_GT(reasoning_seen, 500);
}

TEST(ReasoningSplitterTest, PromptOpensReasoning) {
  EXPECT_TRUE(PromptOpensReasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(PromptOpensReasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(PromptOpensReasoning("<|im_start|>assistant\n"));
}

}  // namespace
}  // namespace forge::server
