// SpmModel: SentencePiece-style BPE over the vocab's scores (llama.cpp's llm_tokenizer_spm).
// Starting from single characters, the adjacent pair whose concatenation is the token of highest
// score (leftmost on ties) merges until none is left; what is not a token falls back to bytes.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace forge {

class SpmModel {
 public:
  explicit SpmModel(const Vocab& vocab);
  // Appends the ids of text, which is already escaped (spaces written as U+2581).
  void Encode(std::string_view text, std::vector<TokenId>* out) const;
  // True when text is encoded word by word (see split_at_words_).
  bool splits_at_words() const { return split_at_words_; }

 private:
  void EncodeSegment(std::string_view text, std::vector<TokenId>* out) const;
  void EmitBytes(std::string_view bytes, std::vector<TokenId>* out) const;
  const Vocab* vocab_;
  // No token holds U+2581 after another character than U+2581, so no merge can cross the start
  // of a word ("x|▁y"): words are encoded one at a time, with the same result, much faster.
  bool split_at_words_ = false;
};

}  // namespace forge
