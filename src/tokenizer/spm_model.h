// SpmModel: SentencePiece-style BPE over the vocab's scores (llama.cpp's llm_tokenizer_spm).
// Starting from single characters, the adjacent pair whose concatenation is the token of highest
// score (leftmost on ties) merges until none is left; what is not a token falls back to bytes.
// Linear in the text however long a word is (MergeQueue).
#pragma once

#include <cstddef>
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
  // Segments of more than this many symbols merge through rank buckets rather than a heap, and
  // those of more than two chunks window by window (chunk symbols each, run with lookahead more)
  // where that is provably exact (merge_chain.h). The same result either way; tests set them to
  // compare (chunk 0: no windows).
  void set_long_segment_limit(size_t symbols) { long_segment_limit_ = symbols; }
  void set_windows(size_t chunk, size_t lookahead) {
    chunk_symbols_ = chunk;
    window_lookahead_ = lookahead;
  }

 private:
  void EncodeSegment(std::string_view text, std::vector<TokenId>* out) const;
  void EmitBytes(std::string_view bytes, std::vector<TokenId>* out) const;
  const Vocab* vocab_;
  // [n_tokens] the merge rank of each token: 0 for the highest score, equal scores equal ranks
  // (a NaN score ranks last).
  std::vector<int32_t> rank_;
  int32_t num_ranks_ = 0;
  TokenId byte_token_[256];  // the byte-fallback token of each byte, or the unknown token, or -1
  size_t long_segment_limit_ = 1024;
  size_t chunk_symbols_ = 2048;
  size_t window_lookahead_ = 256;
  // No token holds U+2581 after another character than U+2581, so no merge can cross the start
  // of a word ("x|▁y"): words are encoded one at a time, with the same result, much faster.
  bool split_at_words_ = false;
};

}  // namespace forge
