// ReasoningSplitter: the text of a model that thinks before it answers (Qwen3's and DeepSeek-R1's
// "<think> ... </think>" blocks) split, as it streams, into the reasoning and the answer, so the
// API returns the reasoning as reasoning_content and never mixes it into content. A tag split
// across pieces is held back until it is whole (or proves not to be the tag).
#pragma once

#include <string>
#include <string_view>

namespace forge::server {

struct ReasoningPiece {
  std::string reasoning;
  std::string content;
};

class ReasoningSplitter {
 public:
  // in_reasoning: the prompt already opened the block (its generation prompt ends in "<think>"),
  // so the text starts as reasoning. Otherwise a block is reasoning only when the text starts
  // with it (after whitespace).
  explicit ReasoningSplitter(bool in_reasoning, std::string open = "<think>",
                             std::string close = "</think>");
  // The next piece of text, split; held-back bytes come out with a later call or Finish().
  ReasoningPiece Feed(std::string_view text);
  // What is held back, at the end of the text.
  ReasoningPiece Finish();

 private:
  enum class State { kStart, kReasoning, kContent };
  std::string open_, close_;
  State state_;
  std::string held_;          // bytes that may begin the tag being looked for
  bool after_close_ = false;  // the whitespace right after "</think>" is dropped
};

// Whether a prompt's text leaves the model inside a reasoning block: its last "<think>" is not
// closed after it.
bool PromptOpensReasoning(std::string_view prompt_tail, std::string_view open = "<think>",
                          std::string_view close = "</think>");

}  // namespace forge::server
