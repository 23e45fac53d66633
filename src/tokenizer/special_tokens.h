// SpecialTokenSplitter: cuts text at special-token texts so they become single ids, leftmost-
// longest like Hugging Face's added vocabulary. Control and unknown tokens count only with
// parse_special, and never across a "plain" span; user-defined ones always do (as in llama.cpp
// and Hugging Face).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace forge {

struct Fragment {
  TokenId token = kNoToken;  // a special token, or kNoToken for text
  std::string_view text;     // the text to encode (empty for a token)
};

// A byte range [begin, end) of a text.
struct TextSpan {
  size_t begin = 0, end = 0;
  bool operator==(const TextSpan&) const = default;
};

// One special token found in a text.
struct SpecialMatch {
  TextSpan span;
  TokenId token = kNoToken;
};

class SpecialTokenSplitter {
 public:
  explicit SpecialTokenSplitter(const Vocab& vocab);
  // Appends the fragments of text in order; text fragments are never empty. plain: sorted,
  // disjoint spans of text that no control or unknown token may overlap (their text stays text,
  // as without parse_special); user-defined tokens are matched there as everywhere.
  // Requires: plain sorted by begin, disjoint, within text.
  void Split(std::string_view text, bool parse_special, std::vector<Fragment>* out,
             std::span<const TextSpan> plain = {}) const;
  // The special tokens Split would cut text at, in order.
  void FindMatches(std::string_view text, bool parse_special, std::vector<SpecialMatch>* out) const;
  // True for the tokens matched even without parse_special (user-defined, not control/unknown).
  bool AlwaysParsed(TokenId id) const;

 private:
  struct Node {
    TokenId token = kNoToken;  // the token whose text ends here
  };
  // The longest token starting at text[pos] that is allowed; its length via *len. Tokens that
  // need parse_special must end at or before byte offset limit.
  TokenId Match(std::string_view text, size_t pos, bool parse_special, size_t limit,
                size_t* len) const;
  // Split and FindMatches: calls on_match(text_start, text_end, match, id) for each match in
  // order, where [text_start, text_end) is the text before it (after lstrip); returns where the
  // text after the last match starts.
  template <typename OnMatch>
  size_t Scan(std::string_view text, bool parse_special, std::span<const TextSpan> plain,
              OnMatch on_match) const;

  const Vocab* vocab_;
  std::vector<Node> nodes_;                      // node 0 is the root
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> child
  std::array<bool, 256> first_any_{};            // some special token starts with this byte
  std::array<bool, 256> first_user_{};           // some user-defined token does
};

}  // namespace forge
