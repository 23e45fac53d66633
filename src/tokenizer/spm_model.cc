// SpmModel: score ranks and the merge loop (a MergeQueue of candidate bigrams by score rank,
// stale ones skipped).
#include "tokenizer/spm_model.h"

#include <algorithm>
#include <cmath>

#include "base/utf8.h"
#include "tokenizer/merge_chain.h"
#include "tokenizer/merge_queue.h"

namespace forge {
namespace {

struct Symbol {
  uint32_t begin, end;  // byte range in the text; begin == end once merged away
  int32_t prev, next;
};

constexpr std::string_view kMarker = "\xE2\x96\x81";  // U+2581

// What a merge run needs of the model.
struct RunContext {
  const Vocab& vocab;
  const std::vector<int32_t>& rank;  // [n_tokens] merge rank of each token
  int32_t num_ranks;
  size_t long_limit;  // runs over more symbols take the queue's bucket path
};

// The merge loop over symbols (linked in order); fills *log when not null.
void MergeRun(const RunContext& ctx, std::string_view text, std::vector<Symbol>* symbols_ptr,
              MergeLog* log) {
  const std::vector<Symbol>& symbols = *symbols_ptr;
  thread_local MergeQueue queue;
  queue.Reset(ctx.num_ranks, symbols.size() > ctx.long_limit);
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t begin = symbols[left].begin, end = symbols[right].end;
    const TokenId id = ctx.vocab.Find(text.substr(begin, end - begin));
    if (id == kNoToken) return;
    queue.Push(MergeCandidate{ctx.rank[id], left, right, end, id});
  };
  auto merged_away = [](const Symbol& s) { return s.begin == s.end; };
  auto absorb = [](Symbol&, Symbol& r, const MergeCandidate&) { r.begin = r.end; };
  auto log_id = [](const Symbol&) { return -1; };
  RunMerges(symbols_ptr, &queue, try_add, merged_away, absorb, log_id, log);
}

}  // namespace

SpmModel::SpmModel(const Vocab& vocab) : vocab_(&vocab) {
  // Scores as ranks: the distinct scores, highest first (NaN, refused when a GGUF is read,
  // would break the order: it ranks last).
  std::vector<float> distinct;
  distinct.reserve(vocab.scores.size());
  for (float f : vocab.scores) {
    if (!std::isnan(f)) distinct.push_back(f);
  }
  std::sort(distinct.begin(), distinct.end(), std::greater<float>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  num_ranks_ = static_cast<int32_t>(distinct.size()) + 1;
  rank_.resize(vocab.scores.size());
  for (size_t id = 0; id < vocab.scores.size(); ++id) {
    const float f = vocab.scores[id];
    rank_[id] = std::isnan(f)
                    ? num_ranks_ - 1
                    : static_cast<int32_t>(std::lower_bound(distinct.begin(), distinct.end(), f,
                                                            std::greater<float>()) -
                                           distinct.begin());
  }
  for (int b = 0; b < 256; ++b) {
    TokenId id = vocab.ByteToken(static_cast<uint8_t>(b));
    byte_token_[b] = id != kNoToken ? id : vocab.unk;
  }
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
    const TokenId id = byte_token_[static_cast<uint8_t>(ch)];
    if (id != kNoToken) out->push_back(id);
  }
}

void SpmModel::EncodeSegment(std::string_view text, std::vector<TokenId>* out) const {
  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  for (size_t pos = 0; pos < text.size();) {
    const size_t len =
        std::min(utf8::SequenceLength(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back(
        Symbol{static_cast<uint32_t>(pos), static_cast<uint32_t>(pos + len), index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
    pos += len;
  }
  const RunContext ctx{*vocab_, rank_, num_ranks_, long_segment_limit_};
  auto emit = [&](const std::vector<Symbol>& merged, std::vector<TokenId>* ids) {
    for (int32_t i = merged.empty() ? -1 : 0; i >= 0; i = merged[i].next) {
      const std::string_view piece = text.substr(merged[i].begin, merged[i].end - merged[i].begin);
      const TokenId id = vocab_->Find(piece);
      if (id != kNoToken) {
        ids->push_back(id);
      } else {
        EmitBytes(piece, ids);
      }
    }
  };
  // Long segments: window by window where that is provably exact (merge_chain.h).
  if (chunk_symbols_ > 0 && symbols.size() > 2 * chunk_symbols_) {
    thread_local std::vector<Symbol> window;
    const size_t start = out->size();
    auto run = [&](size_t begin, size_t end, MergeLog* log) {
      CopyWindow(symbols, begin, end, &window);
      MergeRun(ctx, text, &window, log);
    };
    auto pair_rank = [&](const MergeRecord& x, const MergeRecord& y) -> int32_t {
      const TokenId id = vocab_->Find(text.substr(x.begin, y.end - x.begin));
      return id == kNoToken ? -1 : rank_[id];
    };
    auto emit_token = [&](const MergeRecord& t) {
      const std::string_view piece = text.substr(t.begin, t.end - t.begin);
      const TokenId id = t.symbol >= 0 ? t.symbol : vocab_->Find(piece);
      if (id != kNoToken) {
        out->push_back(id);
      } else {
        EmitBytes(piece, out);
      }
    };
    if (MergeByWindows(symbols.size(), chunk_symbols_, window_lookahead_, run, pair_rank,
                       emit_token)) {
      return;
    }
    out->resize(start);
  }
  MergeRun(ctx, text, &symbols, nullptr);
  emit(symbols, out);
}

}  // namespace forge
