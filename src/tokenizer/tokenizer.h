// Tokenizer: text <-> token ids for a GGUF vocab (SentencePiece-style, byte-level BPE or
// WordPiece), matching llama.cpp and Hugging Face token for token. Thread-safe once built.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace forge {

class BpeModel;
class PreTokenizer;
class SpmModel;
class WpmModel;

struct DecodeOptions {
  bool special = false;  // render control tokens (BOS, <|im_end|>...) as their text
  // Drop the space a SentencePiece-style vocab puts before the first word (the first text piece
  // after an optional BOS). Off when streaming a continuation of earlier text.
  bool strip_leading_space = true;
};

class Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& file);
  static StatusOr<std::unique_ptr<Tokenizer>> FromVocab(Vocab vocab);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of text (any bytes; invalid UTF-8 is encoded byte-wise where the vocab can).
  // add_special: BOS/EOS/SEP as the vocab's add_* flags say. parse_special: the text of control
  // tokens in text becomes those tokens; otherwise it is encoded as plain text.
  std::vector<TokenId> Encode(std::string_view text, bool add_special, bool parse_special) const;

  // Encode(text, false, true), except that no control or unknown token is matched across a span
  // of `plain` (sorted, disjoint byte ranges of text): the text there is encoded as with
  // parse_special off, together with the text around it. For prompts that mix trusted and
  // untrusted text (EncodeChatPrompt).
  std::vector<TokenId> EncodeWithPlainSpans(std::string_view text,
                                            std::span<const TextSpan> plain) const;
  // The spans of text that parse_special makes control or unknown tokens (leftmost-longest, as
  // Encode finds them; user-defined tokens, matched either way, are left out).
  std::vector<TextSpan> FindControlText(std::string_view text) const;

  // Text of ids; always valid UTF-8 (incomplete or invalid sequences become U+FFFD).
  std::string Decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;

  // The raw bytes one token stands for (possibly part of a UTF-8 sequence). Control and unknown
  // tokens give "" unless special; ids outside the vocab give "".
  std::string TokenToPiece(TokenId id, bool special) const;

  const Vocab& vocab() const { return vocab_; }
  // The split patterns of a BPE vocab (empty for the others).
  const std::vector<std::string_view>& pre_patterns() const { return pre_patterns_; }
  // Pre-tokenizer pieces of text (BPE only; for tests and tools).
  std::vector<std::string> PreTokenize(std::string_view text) const;

 private:
  Tokenizer();
  Status Init();
  void EncodeText(std::string_view text, bool prefix_space, std::vector<TokenId>* out) const;
  std::vector<TokenId> EncodeImpl(std::string_view text, bool add_special, bool parse_special,
                                  std::span<const TextSpan> plain) const;

  Vocab vocab_;
  std::vector<std::string_view> pre_patterns_;
  bool byte_encode_ = true;
  std::unique_ptr<SpecialTokenSplitter> specials_;
  std::unique_ptr<SpmModel> spm_;
  std::unique_ptr<BpeModel> bpe_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unique_ptr<WpmModel> wpm_;
  std::vector<std::string> pieces_;  // [n_tokens] TokenToPiece(id, special=true)
};

}  // namespace forge
