// SpecialTokenSplitter: a byte trie of special-token texts and the leftmost-longest scan.
#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <cctype>

#include "tokenizer/encode_work.h"

namespace forge {
namespace {

constexpr uint32_t kSpecialAttrs = kAttrControl | kAttrUserDefined | kAttrUnknown;

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Matched even without parse_special: user-defined tokens that are not also control or unknown.
bool AttrAlwaysParsed(uint32_t attr) {
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
    if (AttrAlwaysParsed(vocab.attrs[id])) first_user_[first] = true;
  }
}

bool SpecialTokenSplitter::AlwaysParsed(TokenId id) const {
  return vocab_->Valid(id) && AttrAlwaysParsed(vocab_->attrs[id]);
}

TokenId SpecialTokenSplitter::Match(std::string_view text, size_t pos, bool parse_special,
                                    size_t limit, size_t* len) const {
  TokenId best = kNoToken;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    AddEncodeWork(1);
    auto it = edges_.find((static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]));
    if (it == edges_.end()) break;
    node = it->second;
    const TokenId id = nodes_[node].token;
    if (id == kNoToken) continue;
    const uint32_t attr = vocab_->attrs[id];
    if (AttrAlwaysParsed(attr) || (parse_special && i + 1 <= limit)) {
      best = id;
      *len = i + 1 - pos;
    }
  }
  return best;
}

template <typename OnMatch>
size_t SpecialTokenSplitter::Scan(std::string_view text, bool parse_special,
                                  std::span<const TextSpan> plain, OnMatch on_match) const {
  const std::array<bool, 256>& first = parse_special ? first_any_ : first_user_;
  size_t text_start = 0;  // start of the pending text fragment
  size_t pos = 0;
  size_t next_plain = 0;  // the first plain span that ends after pos
  while (pos < text.size()) {
    if (!first[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    while (next_plain < plain.size() && plain[next_plain].end <= pos) ++next_plain;
    // A token that needs parse_special must end by the next plain span's start (so none may
    // start inside one).
    size_t limit = text.size();
    if (next_plain < plain.size()) limit = std::max(pos, plain[next_plain].begin);
    size_t len = 0;
    const TokenId id = Match(text, pos, parse_special, limit, &len);
    if (id == kNoToken) {
      ++pos;
      continue;
    }
    size_t text_end = pos;
    if (vocab_->attrs[id] & kAttrLstrip) {
      while (text_end > text_start && IsSpace(text[text_end - 1])) --text_end;
    }
    on_match(text_start, text_end, TextSpan{pos, pos + len}, id);
    pos += len;
    if (vocab_->attrs[id] & kAttrRstrip) {
      while (pos < text.size() && IsSpace(text[pos])) ++pos;
    }
    text_start = pos;
  }
  return text_start;
}

void SpecialTokenSplitter::Split(std::string_view text, bool parse_special,
                                 std::vector<Fragment>* out,
                                 std::span<const TextSpan> plain) const {
  const size_t text_start = Scan(text, parse_special, plain,
                                 [&](size_t start, size_t end, TextSpan /*match*/, TokenId id) {
                                   if (end > start)
                                     out->push_back({kNoToken, text.substr(start, end - start)});
                                   out->push_back({id, {}});
                                 });
  if (text_start < text.size()) out->push_back({kNoToken, text.substr(text_start)});
}

void SpecialTokenSplitter::FindMatches(std::string_view text, bool parse_special,
                                       std::vector<SpecialMatch>* out) const {
  Scan(text, parse_special, {}, [&](size_t, size_t, TextSpan match, TokenId id) {
    out->push_back({match, id});
  });
}

}  // namespace forge
