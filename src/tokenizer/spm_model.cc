// SpmModel: the merge loop (a heap of candidate bigrams by score, stale ones skipped).
#include "tokenizer/spm_model.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace forge {
namespace {

struct Symbol {
  uint32_t begin, end;  // byte range in the text; begin == end once merged away
  int32_t prev, next;
};

struct Bigram {
  float score;
  int32_t left, right;
  uint32_t size;  // bytes of the merged text (a candidate is stale when the sizes disagree)
  TokenId id;
};

// Heap order: highest score first, then the leftmost pair.
struct Lower {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  }
};

constexpr std::string_view kMarker = "\xE2\x96\x81";  // U+2581

}  // namespace

SpmModel::SpmModel(const Vocab& vocab) : vocab_(&vocab) {
  split_at_words_ = true;
  for (const std::string& t : vocab.tokens) {
    for (size_t pos = t.find(kMarker, 1); pos != std::string::npos;
         pos = t.find(kMarker, pos + 1)) {
      if (pos < kMarker.size() || t.compare(pos - kMarker.size(), kMarker.size(), kMarker) != 0) {
        split_at_words_ = false;
        return;
      }
    }
  }
}

void SpmModel::Encode(std::string_view text, std::vector<TokenId>* out) const {
  if (!split_at_words_) {
    EncodeSegment(text, out);
    return;
  }
  // Walk the symbols as EncodeSegment will cut them (lead-byte lengths) and start a new segment
  // at each U+2581 symbol that follows another symbol.
  size_t start = 0;
  bool prev_marker = true;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len =
        std::min(utf8::SequenceLength(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const bool marker = text.substr(pos, len) == kMarker;
    if (marker && !prev_marker && pos > start) {
      EncodeSegment(text.substr(start, pos - start), out);
      start = pos;
    }
    prev_marker = marker;
    pos += len;
  }
  EncodeSegment(text.substr(start), out);
}

void SpmModel::EmitBytes(std::string_view bytes, std::vector<TokenId>* out) const {
  for (char ch : bytes) {
    TokenId id = vocab_->ByteToken(static_cast<uint8_t>(ch));
    if (id == kNoToken) id = vocab_->unk;
    if (id != kNoToken) out->push_back(id);
  }
}

void SpmModel::EncodeSegment(std::string_view text, std::vector<TokenId>* out) const {
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Bigram> heap;
  symbols.clear();
  heap.clear();
  for (size_t pos = 0; pos < text.size();) {
    const size_t len =
        std::min(utf8::SequenceLength(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back(
        Symbol{static_cast<uint32_t>(pos), static_cast<uint32_t>(pos + len), index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
    pos += len;
  }
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t begin = symbols[left].begin, end = symbols[right].end;
    const TokenId id = vocab_->Find(text.substr(begin, end - begin));
    if (id == kNoToken) return;
    heap.push_back(Bigram{vocab_->scores[id], left, right, end - begin, id});
    std::push_heap(heap.begin(), heap.end(), Lower());
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), Lower());
    const Bigram b = heap.back();
    heap.pop_back();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.begin == l.end || r.begin == r.end || l.next != b.right ||
        (l.end - l.begin) + (r.end - r.begin) != b.size) {
      continue;  // one side already merged into something else
    }
    l.end = r.end;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    r.begin = r.end;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].begin, symbols[i].end - symbols[i].begin);
    const TokenId id = vocab_->Find(piece);
    if (id != kNoToken) {
      out->push_back(id);
    } else {
      EmitBytes(piece, out);
    }
  }
}

}  // namespace forge
