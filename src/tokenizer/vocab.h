// Vocab: a tokenizer's tokens, scores, token types, special ids and flags, read from a GGUF's
// tokenizer.ggml.* metadata with llama.cpp's defaults for each tokenizer model.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace forge {

class GgufFile;

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// The tokenizer.ggml.model families Forge implements.
enum class TokenizerKind {
  kSpm,  // "llama": SentencePiece-style score-ordered merges with byte fallback
  kBpe,  // "gpt2" (byte-level) and "gemma4" (UTF-8 with <0xNN> fallback): ranked merges
  kWpm,  // "bert": WordPiece
};
std::string_view TokenizerKindName(TokenizerKind kind);

// tokenizer.ggml.token_type values, as GGUF stores them.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Per-token attributes (a token can be control and unused at once, like llama.cpp's).
enum TokenAttr : uint32_t {
  kAttrNormal = 1u << 0,
  kAttrUnknown = 1u << 1,
  kAttrControl = 1u << 2,
  kAttrUserDefined = 1u << 3,
  kAttrUnused = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 6,  // a matched special token swallows whitespace on its left
  kAttrRstrip = 1u << 7,  // ... and on its right
};

// Hash for heterogeneous lookup of std::string keys by std::string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

struct Vocab {
  TokenizerKind kind = TokenizerKind::kSpm;
  std::string model;  // tokenizer.ggml.model as written
  std::string pre;    // tokenizer.ggml.pre ("default" when absent)

  std::vector<std::string> tokens;  // [n_tokens] the token text as stored (U+2581, GPT-2 bytes...)
  std::vector<float> scores;        // [n_tokens] SPM merge priority; 0 when absent
  std::vector<uint32_t> attrs;      // [n_tokens] TokenAttr bits
  std::vector<std::string> merges;  // BPE merges "left right", rank = index
  TokenIndex index;                 // token text -> id

  TokenId bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken;
  TokenId sep = kNoToken, pad = kNoToken, mask = kNoToken, newline = kNoToken;
  std::set<TokenId> eog;  // every id that ends generation (eos, eot, <|im_end|>, ...)

  bool add_bos = false, add_eos = false, add_sep = false;
  bool add_space_prefix = false;   // SPM: a space is put before text that starts a fragment
  bool escape_whitespaces = true;  // SPM / gemma4: ' ' is written as U+2581 inside tokens
  bool clean_spaces = false;       // clean_up_tokenization_spaces (kept for reference)
  bool remove_extra_whitespaces = false;
  bool lowercase = true;      // WordPiece normalizer
  bool strip_accents = true;  // WordPiece normalizer
  size_t max_token_bytes = 0;

  static StatusOr<Vocab> FromGguf(const GgufFile& file);

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  bool Valid(TokenId id) const { return id >= 0 && id < size(); }
  TokenId Find(std::string_view text) const {
    auto it = index.find(text);
    return it == index.end() ? kNoToken : it->second;
  }
  bool Has(TokenId id, uint32_t attr) const { return Valid(id) && (attrs[id] & attr) != 0; }
  bool IsEog(TokenId id) const { return eog.count(id) != 0; }
  // The <0xNN> token for a byte (SPM and gemma4 byte fallback), else the one-byte token text.
  TokenId ByteToken(uint8_t byte) const;
};

}  // namespace forge
