// ReasoningSplitter: a small state machine over the streamed text.
#include "server/reasoning.h"

#include <algorithm>

namespace forge::server {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// The length of the longest suffix of s that is a proper prefix of tag.
size_t PartialTag(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ReasoningSplitter::ReasoningSplitter(bool in_reasoning, std::string open, std::string close)
    : open_(std::move(open)),
      close_(std::move(close)),
      state_(in_reasoning ? State::kReasoning : State::kStart) {}

ReasoningPiece ReasoningSplitter::Feed(std::string_view text) {
  ReasoningPiece out;
  std::string buf = held_ + std::string(text);
  held_.clear();
  size_t at = 0;
  while (at < buf.size()) {
    const std::string_view rest = std::string_view(buf).substr(at);
    switch (state_) {
      case State::kStart: {
        // Leading whitespace, then either the open tag (reasoning) or anything else (content).
        size_t ws = 0;
        while (ws < rest.size() && IsSpace(rest[ws])) ++ws;
        const std::string_view after = rest.substr(ws);
        if (after.empty() || (after.size() < open_.size() && open_.rfind(after, 0) == 0)) {
          held_ = std::string(rest);  // not yet known
          return out;
        }
        if (after.rfind(open_, 0) == 0) {
          state_ = State::kReasoning;
          at += ws + open_.size();
        } else {
          state_ = State::kContent;
        }
        break;
      }
      case State::kReasoning: {
        const size_t end = rest.find(close_);
        if (end == std::string_view::npos) {
          const size_t keep = PartialTag(rest, close_);
          out.reasoning.append(rest.substr(0, rest.size() - keep));
          held_ = std::string(rest.substr(rest.size() - keep));
          return out;
        }
        out.reasoning.append(rest.substr(0, end));
        at += end + close_.size();
        state_ = State::kContent;
        after_close_ = true;
        break;
      }
      case State::kContent: {
        if (after_close_) {  // the blank lines between the block and the answer
          size_t ws = 0;
          while (ws < rest.size() && IsSpace(rest[ws])) ++ws;
          at += ws;
          if (at < buf.size()) after_close_ = false;
          break;
        }
        out.content.append(rest);
        at = buf.size();
        break;
      }
    }
  }
  return out;
}

ReasoningPiece ReasoningSplitter::Finish() {
  ReasoningPiece out;
  if (state_ == State::kReasoning) {
    out.reasoning = std::move(held_);
  } else if (!(state_ == State::kContent && after_close_)) {
    out.content = std::move(held_);
  }
  held_.clear();
  return out;
}

bool PromptOpensReasoning(std::string_view prompt_tail, std::string_view open,
                          std::string_view close) {
  const size_t o = prompt_tail.rfind(open);
  if (o == std::string_view::npos) return false;
  return prompt_tail.find(close, o) == std::string_view::npos;
}

}  // namespace forge::server
