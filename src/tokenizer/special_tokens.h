// SpecialTokenSplitter: cuts text at special-token texts so they become single ids, leftmost-
// longest like Hugging Face's added vocabulary. Control and unknown tokens count only with
// parse_special; user-defined ones always do (as in llama.cpp and Hugging Face).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace forge {

struct Fragment {
  TokenId token = kNoToken;  // a special token, or kNoToken for text
  std::string_view text;     // the text to encode (empty for a token)
};

class SpecialTokenSplitter {
 public:
  explicit SpecialTokenSplitter(const Vocab& vocab);
  // Appends the fragments of text in order; text fragments are never empty.
  void Split(std::string_view text, bool parse_special, std::vector<Fragment>* out) const;

 private:
  struct Node {
    TokenId token = kNoToken;  // the token whose text ends here
  };
  // The longest token starting at text[pos] that is allowed; its length via *len.
  TokenId Match(std::string_view text, size_t pos, bool parse_special, size_t* len) const;

  const Vocab* vocab_;
  std::vector<Node> nodes_;                      // node 0 is the root
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> child
  std::array<bool, 256> first_any_{};            // some special token starts with this byte
  std::array<bool, 256> first_user_{};           // some user-defined token does
};

}  // namespace forge
