// Builds the vocabulary trie: pieces sorted as byte strings, one node per byte past each piece's
// common prefix with the one before it, subtree ends filled in when a node's last descendant is
// known.
#include "grammar/token_vocab.h"

#include <algorithm>
#include <atomic>
#include <map>

#include "grammar/utf8_position.h"
#include "tokenizer/tokenizer.h"

namespace forge {
namespace {

constexpr size_t kMaxPieceBytes = 65535;

uint64_t NextViewId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

}  // namespace

std::shared_ptr<const TokenVocabView> TokenVocabView::Create(std::vector<std::string> pieces,
                                                             std::vector<TokenId> end_ids) {
  std::shared_ptr<TokenVocabView> v(new TokenVocabView());
  v->pieces_ = std::move(pieces);
  v->is_end_.assign(v->pieces_.size(), false);
  for (TokenId id : end_ids) {
    if (id < 0 || static_cast<size_t>(id) >= v->pieces_.size() || v->is_end_[id]) continue;
    v->is_end_[id] = true;
    v->end_ids_.push_back(id);
  }
  v->id_ = NextViewId();
  v->BuildTrie();
  return v;
}

std::shared_ptr<const TokenVocabView> TokenVocabView::FromTokenizer(const Tokenizer& tokenizer) {
  const Vocab& vocab = tokenizer.vocab();
  std::vector<std::string> pieces(static_cast<size_t>(vocab.size()));
  for (TokenId id = 0; id < vocab.size(); ++id) pieces[id] = tokenizer.TokenToPiece(id, false);
  std::vector<TokenId> end_ids(vocab.eog.begin(), vocab.eog.end());
  if (vocab.eos != kNoToken) end_ids.push_back(vocab.eos);
  return Create(std::move(pieces), std::move(end_ids));
}

void TokenVocabView::BuildTrie() {
  for (TokenId id = 0; id < size(); ++id) {
    const std::string& p = pieces_[static_cast<size_t>(id)];
    if (!is_end_[id] && !p.empty() && p.size() <= kMaxPieceBytes) sorted_tokens_.push_back(id);
  }
  trie_token_mask_.assign(mask_words(), 0);
  for (TokenId id : sorted_tokens_)
    trie_token_mask_[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
  std::sort(sorted_tokens_.begin(), sorted_tokens_.end(), [&](TokenId a, TokenId b) {
    const std::string& pa = pieces_[static_cast<size_t>(a)];
    const std::string& pb = pieces_[static_cast<size_t>(b)];
    return pa != pb ? pa < pb : a < b;
  });
  // path[d]: the node index of the current piece's prefix of length d + 1.
  std::vector<int32_t> path;
  std::vector<int32_t> parent;  // [n_nodes] parent node index, -1 at depth 1
  auto finish = [&](size_t token_index) {
    TrieNode& n = trie_[static_cast<size_t>(path.back())];
    n.subtree_end = static_cast<int32_t>(trie_.size());
    n.subtree_tokens_end = static_cast<int32_t>(token_index);
    path.pop_back();
  };
  std::string_view prev;
  std::vector<uint8_t> codes;
  for (size_t i = 0; i < sorted_tokens_.size(); ++i) {
    const std::string_view p = pieces_[static_cast<size_t>(sorted_tokens_[i])];
    size_t common = 0;
    while (common < p.size() && common < prev.size() && p[common] == prev[common]) ++common;
    // Nodes deeper than the common prefix are finished.
    while (path.size() > common) finish(i);
    for (size_t d = common; d < p.size(); ++d) {
      parent.push_back(path.empty() ? -1 : path.back());
      path.push_back(static_cast<int32_t>(trie_.size()));
      TrieNode node{};
      node.tokens_begin = static_cast<int32_t>(i);
      node.below_set = -1;
      node.depth = static_cast<uint16_t>(d + 1);
      node.byte = static_cast<uint8_t>(p[d]);
      trie_.push_back(node);
    }
    // A node's UTF-8 code: what its first piece says, unless another piece disagrees.
    utf8_position::PieceCodes(p, &codes);
    for (size_t d = 1; d <= p.size(); ++d) {
      TrieNode& n = trie_[static_cast<size_t>(path[d - 1])];
      if (d > common) {
        n.utf8 = codes[d];
      } else if (n.utf8 != codes[d]) {
        n.utf8 = utf8_position::kNotClean;
      }
    }
    max_depth_ = std::max(max_depth_, static_cast<int>(p.size()));
    prev = p;
  }
  while (!path.empty()) finish(sorted_tokens_.size());

  // Bytes below each node, gathered children first (a reverse preorder visits children first).
  std::vector<ByteSet> below(trie_.size());
  for (size_t i = trie_.size(); i-- > 0;) {
    if (parent[i] < 0) continue;
    ByteSet& b = below[static_cast<size_t>(parent[i])];
    b.Add(trie_[i].byte);
    b.AddAll(below[i]);
  }
  std::map<ByteSet, int32_t> ids;
  for (size_t i = 0; i < trie_.size(); ++i) {
    if (below[i].Empty()) continue;
    auto [it, inserted] = ids.emplace(below[i], static_cast<int32_t>(below_sets_.size()));
    if (inserted) below_sets_.push_back(below[i]);
    trie_[i].below_set = it->second;
  }
  TrieNode end{};
  end.subtree_end = static_cast<int32_t>(trie_.size() + 1);
  end.tokens_begin = static_cast<int32_t>(sorted_tokens_.size());
  end.subtree_tokens_end = end.tokens_begin;
  end.below_set = -1;
  trie_.push_back(end);
}

}  // namespace forge
