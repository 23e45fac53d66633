// PreTokenizer: splits text into the pieces BPE merges within, by a sequence of regexes. Each
// regex splits every piece left by the one before it; both the matches and the text between them
// become pieces (Hugging Face's Split with "isolated" behaviour, as llama.cpp does).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/unicode_regex.h"

namespace forge {

class PreTokenizer {
 public:
  static StatusOr<std::unique_ptr<PreTokenizer>> Create(
      const std::vector<std::string_view>& patterns);

  // Appends the pieces of text (views into it, in order; they concatenate back to text).
  void Split(std::string_view text, std::vector<std::string_view>* pieces) const;
  size_t num_patterns() const { return regexes_.size(); }

 private:
  std::vector<std::unique_ptr<UnicodeRegex>> regexes_;
};

}  // namespace forge
