// TextOutput: one sample's generated text as it streams: tokens are detokenized (UTF-8 held back
// until complete), stop strings are searched, and only text that can no longer change is released.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sampling/stop.h"
#include "tokenizer/detokenizer.h"

namespace forge {

class TextOutput {
 public:
  TextOutput(const Tokenizer& tokenizer, std::vector<std::string> stops);

  // Adds the newest token; *finish is the token-level verdict after it (CheckTokenStop, max
  // length) and becomes kStop when a stop string completes. Returns the text now final (a
  // stopping token adds none; at the end everything held back is released).
  std::string Push(int32_t token, FinishReason* finish);

  const std::string& text() const { return text_; }

 private:
  StreamingDetokenizer detok_;
  StopStringMatcher stops_;
  std::string text_;  // everything generated so far (cut at a stop string)
  size_t emitted_ = 0, scanned_ = 0;
};

}  // namespace forge
