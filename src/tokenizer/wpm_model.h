// WpmModel: WordPiece as BERT uses it. The text is normalized like Hugging Face's BertNormalizer
// (drop control characters, space around CJK ideographs, strip accents, lowercase), split on
// whitespace and punctuation, and each word is matched greedily, longest token first.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/unicode_regex.h"
#include "tokenizer/vocab.h"

namespace forge {

class WpmModel {
 public:
  static StatusOr<std::unique_ptr<WpmModel>> Create(const Vocab& vocab);
  void Encode(std::string_view text, std::vector<TokenId>* out) const;
  // The normalized words of text (exposed for tests).
  std::vector<std::string> Words(std::string_view text) const;

 private:
  enum class CharClass { kOther, kWhitespace, kControl, kMark, kPunct };
  CharClass Classify(uint32_t cp) const;
  void EncodeWord(const std::string& word, std::vector<TokenId>* out) const;

  const Vocab* vocab_ = nullptr;
  std::unique_ptr<UnicodeRegex> space_, control_, mark_, punct_;
};

}  // namespace forge
