// TokenVocabView: a vocabulary as the grammar matcher sees it, built once per tokenizer and
// shared: each token's bytes, the end-of-generation ids, and a byte trie of all pieces in
// depth-first order that FillMask walks with the matcher's automaton.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/byte_set.h"
#include "tokenizer/vocab.h"

namespace forge {

class Tokenizer;

class TokenVocabView {
 public:
  // One trie node per distinct prefix of a piece, in depth-first (preorder) order, 20 bytes (a
  // walk that skips subtrees touches few cache lines), and one more node at the end whose
  // tokens_begin is the number of sorted tokens.
  struct TrieNode {
    int32_t subtree_end;  // index of the first node after this node's subtree
    // sorted_tokens()[tokens_begin, trie()[i + 1].tokens_begin): the pieces that end here;
    // sorted_tokens()[tokens_begin, subtree_tokens_end): all of the subtree's.
    int32_t tokens_begin;
    int32_t subtree_tokens_end;
    // Index into below_sets(): the bytes found below this node (in its descendants); -1 for
    // leaves.
    int32_t below_set;
    uint16_t depth;  // 1 for the first byte of a piece
    uint8_t byte;
    // Where the node stands in UTF-8 text, for all pieces below it (utf8_position.h).
    uint8_t utf8;
  };

  // pieces[id]: the bytes token id stands for; an empty piece (control tokens and the like) is
  // never allowed by a grammar. end_ids: the tokens that end generation, allowed exactly when the
  // grammar can end (whatever their pieces). Pieces longer than 65535 bytes are never allowed.
  static std::shared_ptr<const TokenVocabView> Create(std::vector<std::string> pieces,
                                                      std::vector<TokenId> end_ids);
  // Pieces from tokenizer.TokenToPiece(id, /*special=*/false); end ids: the vocab's EOG set.
  static std::shared_ptr<const TokenVocabView> FromTokenizer(const Tokenizer& tokenizer);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  // uint32_t words of a FillMask bitmask: bit (id % 32) of word id / 32.
  size_t mask_words() const { return (pieces_.size() + 31) / 32; }
  std::string_view piece(TokenId id) const { return pieces_[static_cast<size_t>(id)]; }
  std::span<const TokenId> end_ids() const { return end_ids_; }
  bool IsEnd(TokenId id) const { return is_end_[static_cast<size_t>(id)]; }
  // Distinct for every view made in this process (a key for caches).
  uint64_t id() const { return id_; }

  const std::vector<TrieNode>& trie() const { return trie_; }  // (with the end node)
  size_t num_trie_nodes() const { return trie_.size() - 1; }
  const std::vector<TokenId>& sorted_tokens() const { return sorted_tokens_; }
  const std::vector<ByteSet>& below_sets() const { return below_sets_; }
  // [mask_words()] the bits of every token in the trie (all but empty pieces and end ids).
  const std::vector<uint32_t>& trie_token_mask() const { return trie_token_mask_; }
  int max_depth() const { return max_depth_; }

 private:
  TokenVocabView() = default;
  void BuildTrie();

  std::vector<std::string> pieces_;
  std::vector<TokenId> end_ids_;
  std::vector<bool> is_end_;
  std::vector<TrieNode> trie_;
  std::vector<TokenId> sorted_tokens_;
  std::vector<ByteSet> below_sets_;
  std::vector<uint32_t> trie_token_mask_;
  int max_depth_ = 0;
  uint64_t id_ = 0;
};

}  // namespace forge
