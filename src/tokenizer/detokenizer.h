// StreamingDetokenizer: token ids -> text one token at a time. Bytes of a UTF-8 sequence that a
// token boundary cuts are held back until the sequence completes; what is still incomplete at
// Finish() becomes U+FFFD. Every returned string is valid UTF-8.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace forge {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options = {});

  // The text this token completes (may be empty while a character is unfinished).
  std::string Push(TokenId id);
  // Whatever is held back, an unfinished sequence as U+FFFD; then starts over.
  std::string Finish();
  // Bytes held back now (0-3 for valid input).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  bool strip_space_;  // the vocab puts a space before the first word
  bool at_start_ = true;
  std::string pending_;
};

}  // namespace forge
