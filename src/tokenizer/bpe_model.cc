// BpeModel: merge table construction and the merge loop (a MergeQueue of candidate pairs ordered
// by rank, then position; stale candidates are skipped when popped).
#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdio>

#include "base/utf8.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/encode_work.h"
#include "tokenizer/merge_queue.h"

namespace forge {

StatusOr<BpeModel> BpeModel::Build(const Vocab& vocab, bool byte_encode, bool ignore_merges) {
  BpeModel m;
  m.vocab_ = &vocab;
  m.byte_encode_ = byte_encode;
  m.ignore_merges_ = ignore_merges;
  m.n_vocab_ = vocab.size();
  size_t slots = 16;
  while (slots < 2 * vocab.merges.size()) slots *= 2;
  m.table_.assign(slots, MergeSlot());
  m.table_shift_ = 64 - std::countr_zero(slots);
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const std::string& line = vocab.merges[i];
    const size_t space = line.find(' ', 1);
    if (space == std::string::npos) continue;  // not "left right": nothing to merge
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    const int32_t lid = m.InternSymbol(left), rid = m.InternSymbol(right);
    const int32_t result = m.InternSymbol(left + right);
    m.AddMerge(PairKey(lid, rid), static_cast<int32_t>(i), result);
  }
  for (int b = 0; b < 256; ++b) {
    m.byte_symbol_[b] =
        byte_encode ? m.SymbolOf(byte_unicode::ByteToText(static_cast<uint8_t>(b))) : -1;
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    m.fallback_token_[b] = vocab.Find(hex);
  }
  return m;
}

void BpeModel::AddMerge(uint64_t key, int32_t rank, int32_t result) {
  const size_t mask = table_.size() - 1;
  for (size_t i = SlotOf(key);; i = (i + 1) & mask) {
    if (table_[i].key == key) return;  // a repeated merge keeps its first (lowest) rank
    if (table_[i].key == kEmptyKey) {
      table_[i] = MergeSlot{key, rank, result};
      ++num_merges_;
      return;
    }
  }
}

const BpeModel::MergeSlot* BpeModel::FindMerge(int32_t left, int32_t right) const {
  const uint64_t key = PairKey(left, right);
  const size_t mask = table_.size() - 1;
  for (size_t i = SlotOf(key);; i = (i + 1) & mask) {
    if (table_[i].key == key) return &table_[i];
    if (table_[i].key == kEmptyKey) return nullptr;
  }
}

int32_t BpeModel::SymbolOf(std::string_view text) const {
  TokenId id = vocab_->Find(text);
  if (id != kNoToken) return id;
  auto it = extra_index_.find(text);
  return it == extra_index_.end() ? -1 : it->second;
}

int32_t BpeModel::InternSymbol(const std::string& text) {
  int32_t id = SymbolOf(text);
  if (id >= 0) return id;
  id = n_vocab_ + static_cast<int32_t>(extra_index_.size());
  extra_index_.emplace(text, id);
  return id;
}

void BpeModel::InitialSymbols(std::string_view piece, std::vector<Symbol>* symbols) const {
  symbols->clear();
  size_t pos = 0;
  while (pos < piece.size()) {
    size_t len = 1;
    int32_t id;
    if (byte_encode_) {
      id = byte_symbol_[static_cast<uint8_t>(piece[pos])];
    } else {
      len = std::min(utf8::SequenceLength(static_cast<uint8_t>(piece[pos])), piece.size() - pos);
      id = SymbolOf(piece.substr(pos, len));
    }
    const int32_t index = static_cast<int32_t>(symbols->size());
    symbols->push_back(
        Symbol{id, static_cast<uint32_t>(pos), static_cast<uint32_t>(pos + len), index - 1, -1});
    if (index > 0) (*symbols)[index - 1].next = index;
    pos += len;
  }
}

void BpeModel::MergeSmall(std::vector<Symbol>* symbols_ptr) const {
  // The same order as the queue (lowest rank, then leftmost) by scanning an array of pair ranks;
  // quicker for the short pieces most text is made of.
  std::vector<Symbol>& symbols = *symbols_ptr;
  int32_t n = static_cast<int32_t>(symbols.size());
  thread_local std::vector<int32_t> rank, result;
  rank.resize(n);
  result.resize(n);
  auto pair_rank = [&](int32_t i) {
    const MergeSlot* m = symbols[i].id >= 0 && symbols[i + 1].id >= 0
                             ? FindMerge(symbols[i].id, symbols[i + 1].id)
                             : nullptr;
    rank[i] = m ? m->rank : INT32_MAX;
    result[i] = m ? m->result : -1;
  };
  for (int32_t i = 0; i + 1 < n; ++i) pair_rank(i);
  while (n > 1) {
    int32_t best = -1;
    for (int32_t i = 0; i + 1 < n; ++i) {
      if (rank[i] != INT32_MAX && (best < 0 || rank[i] < rank[best])) best = i;
    }
    AddEncodeWork(static_cast<uint64_t>(n));
    if (best < 0) break;
    symbols[best].id = result[best];
    symbols[best].end = symbols[best + 1].end;
    for (int32_t i = best + 1; i + 1 < n; ++i) {
      symbols[i] = symbols[i + 1];
      rank[i] = rank[i + 1];
      result[i] = result[i + 1];
    }
    --n;
    if (best > 0) pair_rank(best - 1);
    if (best + 1 < n) pair_rank(best);
  }
  symbols.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    symbols[i].prev = i - 1;
    symbols[i].next = i + 1 < n ? i + 1 : -1;
  }
}

void BpeModel::Merge(std::vector<Symbol>* symbols) const {
  if (symbols->size() <= small_piece_limit_) {
    MergeSmall(symbols);
  } else {
    MergeRun(symbols, nullptr);
  }
}

bool BpeModel::MergeRun(std::vector<Symbol>* symbols_ptr, MergeLog* log) const {
  const std::vector<Symbol>& symbols = *symbols_ptr;
  thread_local MergeQueue queue;
  queue.Reset(static_cast<int32_t>(vocab_->merges.size()), symbols.size() > long_piece_limit_);
  auto push = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    if (l.id < 0 || r.id < 0) return;
    const MergeSlot* m = FindMerge(l.id, r.id);
    if (m == nullptr) return;
    queue.Push(MergeCandidate{m->rank, left, right, r.end, m->result});
  };
  // A symbol merged away leaves the chain (next = -1), so the chain tells.
  auto merged_away = [](const Symbol&) { return false; };
  auto absorb = [](Symbol& l, Symbol& r, const MergeCandidate& c) {
    l.id = c.value;
    r.id = -2;  // merged away
    r.prev = r.next = -1;
  };
  auto log_id = [](const Symbol& s) { return s.id; };
  return RunMerges(symbols_ptr, &queue, push, merged_away, absorb, log_id, log);
}

bool BpeModel::EncodeChunked(std::string_view piece, const std::vector<Symbol>& symbols,
                             std::vector<TokenId>* out) const {
  thread_local std::vector<Symbol> window;
  const size_t start = out->size();
  auto run = [&](size_t begin, size_t end, MergeLog* log) {
    CopyWindow(symbols, begin, end, &window);
    MergeRun(&window, log);
  };
  auto pair_rank = [&](const MergeRecord& x, const MergeRecord& y) -> int32_t {
    const MergeSlot* m = x.symbol >= 0 && y.symbol >= 0 ? FindMerge(x.symbol, y.symbol) : nullptr;
    return m ? m->rank : -1;
  };
  auto emit = [&](const MergeRecord& t) {
    if (t.symbol >= 0 && t.symbol < n_vocab_) {
      out->push_back(t.symbol);
    } else {
      EmitFallback(piece.substr(t.begin, t.end - t.begin), out);
    }
  };
  if (MergeByWindows(symbols.size(), chunk_symbols_, window_lookahead_, run, pair_rank, emit)) {
    return true;
  }
  out->resize(start);
  return false;
}

void BpeModel::EmitSymbols(std::string_view piece, const std::vector<Symbol>& symbols,
                           std::vector<TokenId>* out) const {
  for (int32_t i = 0; i >= 0 && i < static_cast<int32_t>(symbols.size()); i = symbols[i].next) {
    const Symbol& s = symbols[i];
    if (s.id >= 0 && s.id < n_vocab_) {
      out->push_back(s.id);
    } else {
      EmitFallback(piece.substr(s.begin, s.end - s.begin), out);
    }
  }
}

void BpeModel::EmitFallback(std::string_view bytes, std::vector<TokenId>* out) const {
  for (char ch : bytes) {
    const uint8_t b = static_cast<uint8_t>(ch);
    TokenId id;
    id = byte_encode_ ? byte_symbol_[b] : fallback_token_[b];
    if (id >= 0 && id < n_vocab_) out->push_back(id);  // a byte with no token is dropped
  }
}

void BpeModel::EncodePiece(std::string_view piece, std::vector<TokenId>* out) const {
  if (piece.empty()) return;
  if (!byte_encode_ && piece.find_first_not_of('\n') == std::string_view::npos) {
    // Gemma 4: a run of newlines that is a token stays whole (llama.cpp's fix for it).
    if (TokenId id = vocab_->Find(piece); id != kNoToken) {
      out->push_back(id);
      return;
    }
  }
  if (ignore_merges_) {
    TokenId id;
    if (byte_encode_) {
      std::string mapped;
      for (char ch : piece) mapped += byte_unicode::ByteToText(static_cast<uint8_t>(ch));
      id = vocab_->Find(mapped);
    } else {
      id = vocab_->Find(piece);
    }
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  InitialSymbols(piece, &symbols);
  if (chunk_symbols_ > 0 && symbols.size() > 2 * chunk_symbols_ &&
      symbols.size() > small_piece_limit_ && EncodeChunked(piece, symbols, out)) {
    return;
  }
  Merge(&symbols);
  EmitSymbols(piece, symbols, out);
}

}  // namespace forge
