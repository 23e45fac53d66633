// MergeByWindows: merges a long piece window by window (each in cache) with a result provably
// equal to one merge run over the whole piece, or reports that it cannot prove it.
//
// A run merges the valid candidate of least key (rank, position) at each step. Split a piece at
// p: runs over the two sides alone pop their own candidates in key order, and the run over the
// whole pops the same ones interleaved by key, as long as no pair spanning p merges. Such a pair
// is (x, y), x the symbol covering the byte before p and y the one covering the byte at p at some
// moment; it merges iff both are alive together and its key comes before either is merged away
// (a key below the moment they met pops at once, and is below their deaths too). The chains of
// symbols that covered those two bytes, each born and merged away at a key, decide it exactly
// (ChainsMayMerge). Keys are popped in increasing order only where every merge makes pairs ranked
// after itself; a run where they were not (rare vocabularies) is not windowed.
//
// Windows: a run over symbols [s, s + chunk + lookahead); p is where its first token at or past
// s + chunk starts; its tokens before p are final once the edge at s checks out (a run's tokens
// before one of its own token edges are those of the run over the part before that edge).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "tokenizer/encode_work.h"
#include "tokenizer/merge_queue.h"

namespace forge {

// (rank, byte position of the left symbol in the piece): the order candidates merge in.
struct MergeKey {
  int32_t rank = -1;
  uint32_t pos = 0;
  bool operator<(const MergeKey& o) const { return rank != o.rank ? rank < o.rank : pos < o.pos; }
};
inline constexpr MergeKey kBeforeAllMerges{-1, 0};
inline constexpr MergeKey kAfterAllMerges{std::numeric_limits<int32_t>::max(),
                                          std::numeric_limits<uint32_t>::max()};

// One symbol of a run: an initial one (no children) or the merge of two earlier ones.
struct MergeRecord {
  int32_t symbol;       // the model's symbol or token id (-1: one that never merges)
  uint32_t begin, end;  // its bytes in the piece
  MergeKey born;        // the merge that made it (kBeforeAllMerges: initial)
  int32_t left, right;  // the records merged into it; -1 for an initial symbol
};

// A run over a window: records 0..m-1 are its m initial symbols in order.
struct MergeLog {
  std::vector<MergeRecord> records;
  std::vector<int32_t> tokens;  // the records left at the end, in order
  bool increasing = true;       // the popped keys only increased
};

// Tracks that the keys a run pops only increase.
class MergeKeyClock {
 public:
  void Pop(const MergeKey& k) {
    if (k < last_) increasing_ = false;
    last_ = k;
  }
  bool increasing() const { return increasing_; }

 private:
  MergeKey last_ = kBeforeAllMerges;
  bool increasing_ = true;
};

// Ends a run's log: whether its keys only increased, and the record of each symbol left (the
// chain from symbol 0; n: the run's symbol count).
template <typename Symbol>
void FinishMergeLog(const MergeKeyClock& clock, const std::vector<Symbol>& symbols, int32_t n,
                    const std::vector<int32_t>& record_of, MergeLog* log) {
  log->increasing = clock.increasing();
  log->tokens.clear();
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = symbols[i].next) log->tokens.push_back(record_of[i]);
}

// One merge run over a chain of symbols (fields begin, end, prev, next), the loop the BPE and
// SentencePiece models share: the adjacent pairs are offered to push(left, right), which queues
// the pair's candidate when it can merge; then the candidate of least key merges until none is
// left, stale ones skipped (either side changed since the push), and the pairs on both sides of
// each merge are offered. merged_away(s): whether s was merged into its left neighbour (when the
// chain does not already tell); absorb(left, right, c): the model's own fields of the two after
// the chain is relinked. log_id(s): an initial symbol's id in *log, filled when not null. The
// caller resets queue for the run. Returns whether the popped keys only increased.
template <typename Symbol, typename Push, typename MergedAway, typename Absorb, typename LogId>
bool RunMerges(std::vector<Symbol>* symbols_ptr, MergeQueue* queue, Push push,
               MergedAway merged_away, Absorb absorb, LogId log_id, MergeLog* log) {
  std::vector<Symbol>& symbols = *symbols_ptr;
  const int32_t n = static_cast<int32_t>(symbols.size());
  thread_local std::vector<int32_t> record_of;  // [n] the log record of each live symbol
  for (int32_t i = 0; i + 1 < n; ++i) push(i, i + 1);
  if (log != nullptr) {
    log->records.clear();
    record_of.resize(symbols.size());
    for (int32_t i = 0; i < n; ++i) {
      const Symbol& s = symbols[i];
      log->records.push_back(MergeRecord{log_id(s), s.begin, s.end, kBeforeAllMerges, -1, -1});
      record_of[i] = i;
    }
  }
  MergeKeyClock clock;
  MergeCandidate c;
  while (queue->Pop(&c)) {
    Symbol& l = symbols[c.left];
    Symbol& r = symbols[c.right];
    const MergeKey key{c.rank, l.begin};
    clock.Pop(key);
    // Stale when either side changed since the push: the left one merged (its next moved on, or
    // it was merged away) or the right one grew.
    if (merged_away(l) || l.next != c.right || r.end != c.right_end) continue;
    l.end = r.end;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = c.left;
    absorb(l, r, c);
    if (log != nullptr) {
      log->records.push_back(
          MergeRecord{c.value, l.begin, l.end, key, record_of[c.left], record_of[c.right]});
      record_of[c.left] = static_cast<int32_t>(log->records.size() - 1);
    }
    push(l.prev, c.left);
    push(c.left, l.next);
  }
  if (log != nullptr) FinishMergeLog(clock, symbols, n, record_of, log);
  return clock.increasing();
}

// symbols[begin, end) copied into *window as a chain of their own (prev / next relinked).
template <typename Symbol>
void CopyWindow(const std::vector<Symbol>& symbols, size_t begin, size_t end,
                std::vector<Symbol>* window) {
  window->assign(symbols.begin() + static_cast<ptrdiff_t>(begin),
                 symbols.begin() + static_cast<ptrdiff_t>(end));
  const int32_t m = static_cast<int32_t>(window->size());
  for (int32_t i = 0; i < m; ++i) {
    (*window)[i].prev = i - 1;
    (*window)[i].next = i + 1 < m ? i + 1 : -1;
  }
}

// The records that covered the first (left spine) or last (right spine) byte of a token, oldest
// first.
inline void SpineOf(const MergeLog& log, int32_t token, bool left_spine,
                    std::vector<MergeRecord>* out) {
  out->clear();
  for (int32_t r = token; r >= 0; r = left_spine ? log.records[r].left : log.records[r].right) {
    out->push_back(log.records[r]);
  }
  std::reverse(out->begin(), out->end());
}

// True when, in one run over both sides of an edge, some pair (x in tail, y in head) would have
// merged. pair_rank(x, y): the rank of merging two adjacent records, or -1 when they cannot.
template <typename PairRank>
bool ChainsMayMerge(const std::vector<MergeRecord>& tail, const std::vector<MergeRecord>& head,
                    PairRank pair_rank) {
  for (size_t i = 0; i < tail.size(); ++i) {
    const MergeRecord& x = tail[i];
    const MergeKey x_dies = i + 1 < tail.size() ? tail[i + 1].born : kAfterAllMerges;
    for (size_t j = 0; j < head.size(); ++j) {
      const MergeRecord& y = head[j];
      const MergeKey y_dies = j + 1 < head.size() ? head[j + 1].born : kAfterAllMerges;
      const MergeKey met = x.born < y.born ? y.born : x.born;
      const MergeKey first_death = x_dies < y_dies ? x_dies : y_dies;
      if (!(met < first_death)) continue;  // never alive together
      const int32_t rank = pair_rank(x, y);
      if (rank >= 0 && MergeKey{rank, x.begin} < first_death) return true;
    }
  }
  return false;
}

namespace merge_chain_internal {
template <typename Run, typename PairRank, typename Emit>
bool Windows(size_t n, size_t chunk, size_t lookahead, Run& run, PairRank& pair_rank, Emit& emit) {
  thread_local MergeLog log;
  thread_local std::vector<MergeRecord> tail, head;
  tail.clear();
  for (size_t s = 0; s < n;) {
    const size_t e = std::min(n, s + chunk + lookahead);
    run(s, e, &log);
    if (!log.increasing || log.tokens.empty()) return false;
    size_t p_token = log.tokens.size(), p = e;
    if (e < n) {
      p_token = 0;
      for (; p_token < log.tokens.size(); ++p_token) {
        int32_t leaf = log.tokens[p_token];
        while (log.records[leaf].left >= 0) leaf = log.records[leaf].left;
        if (static_cast<size_t>(leaf) >= chunk) {
          p = s + static_cast<size_t>(leaf);
          break;
        }
      }
      if (p_token == log.tokens.size()) return false;  // one token spans the lookahead
    }
    SpineOf(log, log.tokens[0], /*left_spine=*/true, &head);
    if (s > 0 && ChainsMayMerge(tail, head, pair_rank)) return false;
    for (size_t t = 0; t < p_token; ++t) emit(log.records[log.tokens[t]]);
    SpineOf(log, log.tokens[p_token - 1], /*left_spine=*/false, &tail);
    ++encode_work::counts.windows;
    s = p;
  }
  return true;
}
}  // namespace merge_chain_internal

// Merges symbols [0, n) window by window; emit(record) is called for each final token in order.
// run(begin, end, log) merges symbols [begin, end) alone into *log. Returns false when an edge
// could not be proven exact (tokens may have been emitted: the caller discards them).
// Requires: chunk > 0.
template <typename Run, typename PairRank, typename Emit>
bool MergeByWindows(size_t n, size_t chunk, size_t lookahead, Run run, PairRank pair_rank,
                    Emit emit) {
  const uint64_t windows = encode_work::counts.windows;
  if (merge_chain_internal::Windows(n, chunk, lookahead, run, pair_rank, emit)) return true;
  encode_work::counts.windows = windows;
  ++encode_work::counts.window_fallbacks;
  return false;
}

}  // namespace forge
