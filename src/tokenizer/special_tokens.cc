// SpecialTokenSplitter: a byte trie of special-token texts and the leftmost-longest scan.
#include "tokenizer/special_tokens.h"

#include <cctype>

namespace forge {
namespace {

constexpr uint32_t kSpecialAttrs = kAttrControl | kAttrUserDefined | kAttrUnknown;

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Matched even without parse_special: user-defined tokens that are not also control or unknown.
bool AlwaysParsed(uint32_t attr) {
  return (attr & kAttrUserDefined) != 0 && (attr & (kAttrControl | kAttrUnknown)) == 0;
}

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab& vocab) : vocab_(&vocab) {
  nodes_.emplace_back();
  for (TokenId id = 0; id < vocab.size(); ++id) {
    if ((vocab.attrs[id] & kSpecialAttrs) == 0) continue;
    const std::string& text = vocab.tokens[id];
    int32_t node = 0;
    for (char ch : text) {
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(ch);
      auto it = edges_.find(key);
      if (it == edges_.end()) {
        it = edges_.emplace(key, static_cast<int32_t>(nodes_.size())).first;
        nodes_.emplace_back();
      }
      node = it->second;
    }
    if (nodes_[node].token == kNoToken) nodes_[node].token = id;
    const uint8_t first = static_cast<uint8_t>(text[0]);
    first_any_[first] = true;
    if (AlwaysParsed(vocab.attrs[id])) first_user_[first] = true;
  }
}

TokenId SpecialTokenSplitter::Match(std::string_view text, size_t pos, bool parse_special,
                                    size_t* len) const {
  TokenId best = kNoToken;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = edges_.find((static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]));
    if (it == edges_.end()) break;
    node = it->second;
    const TokenId id = nodes_[node].token;
    if (id != kNoToken && (parse_special || AlwaysParsed(vocab_->attrs[id]))) {
      best = id;
      *len = i + 1 - pos;
    }
  }
  return best;
}

void SpecialTokenSplitter::Split(std::string_view text, bool parse_special,
                                 std::vector<Fragment>* out) const {
  const std::array<bool, 256>& first = parse_special ? first_any_ : first_user_;
  size_t text_start = 0;  // start of the pending text fragment
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    size_t len = 0;
    const TokenId id = Match(text, pos, parse_special, &len);
    if (id == kNoToken) {
      ++pos;
      continue;
    }
    size_t text_end = pos;
    if (vocab_->attrs[id] & kAttrLstrip) {
      while (text_end > text_start && IsSpace(text[text_end - 1])) --text_end;
    }
    if (text_end > text_start)
      out->push_back({kNoToken, text.substr(text_start, text_end - text_start)});
    out->push_back({id, {}});
    pos += len;
    if (vocab_->attrs[id] & kAttrRstrip) {
      while (pos < text.size() && IsSpace(text[pos])) ++pos;
    }
    text_start = pos;
  }
  if (text_start < text.size()) out->push_back({kNoToken, text.substr(text_start)});
}

}  // namespace forge
