// GrammarMatcher: byte steps through the shared StackSetDfa, a rollback history of states, and
// FillMask's trie walk (a subtree is skipped as soon as its prefix leaves no live stack; results
// are cached per automaton state, so a state met again costs a copy).
#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <cstring>

#include "grammar/utf8_position.h"

namespace forge {
namespace {

// True when every piece of node's subtree is allowed from state s (the state after node's
// bytes), known without visiting it: its bytes below all loop on s (inside a string, most do);
// or the pieces below go on with whole UTF-8 characters (node.utf8) that all loop on s, or on the
// one state that completing the character node is inside of leads to.
bool AllowsSubtree(StackSetDfa* dfa, StackStateId s, const TokenVocabView::TrieNode& node,
                   const std::vector<ByteSet>& below_sets) {
  const ByteSet& below = below_sets[static_cast<size_t>(node.below_set)];
  if (node.utf8 == utf8_position::kBoundary) {
    if (dfa->CharacterLoops(s).Contains(below)) return true;
  } else if (node.utf8 != utf8_position::kNotClean) {
    const StackStateId after = dfa->Completion(s, node.utf8);
    if (after != kDeadState && dfa->CharacterLoops(after).Contains(below)) return true;
  }
  return dfa->SelfLoops(s).Contains(below);
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar,
                               const GrammarMatcherOptions& options)
    : grammar_(std::move(grammar)), options_(options) {
  if (options_.memoize && options_.share_automaton) {
    dfa_ = grammar_->SharedAutomaton(options_.limits);
  } else {
    dfa_ = std::make_shared<StackSetDfa>(grammar_.get(), options_.memoize, options_.limits);
  }
  std::lock_guard<std::mutex> lock(dfa_->mutex());
  const int before = dfa_->overflow_count();
  state_ = dfa_->Initial();
  can_end_ = dfa_->CanEnd(state_);
  overflowed_ = dfa_->overflow_count() != before;
}

void GrammarMatcher::Push() {
  if (options_.max_rollback <= 0) return;
  if (static_cast<int>(history_.size()) >= options_.max_rollback) history_.erase(history_.begin());
  history_.push_back({state_, can_end_, terminated_});
}

void GrammarMatcher::Rebase(std::unique_lock<std::mutex>* lock, std::vector<StackStateId>* extra) {
  // The states this matcher still needs, as stacks, taken while the old automaton is locked.
  std::vector<StackSetDfa::ExportedState> saved;
  saved.push_back(dfa_->Export(state_));
  for (const Snapshot& h : history_) saved.push_back(dfa_->Export(h.state));
  if (extra != nullptr) {
    for (StackStateId s : *extra) saved.push_back(dfa_->Export(s));
  }
  const std::shared_ptr<StackSetDfa> old = dfa_;
  lock->unlock();  // one automaton locked at a time: no lock-order cycles
  std::shared_ptr<StackSetDfa> target;
  if (options_.memoize && options_.share_automaton) {
    target = grammar_->SharedAutomaton(options_.limits);
    if (target == old) {
      grammar_->ReplaceSharedAutomaton(
          old.get(), std::make_shared<StackSetDfa>(grammar_.get(), true, options_.limits));
      target = grammar_->SharedAutomaton(options_.limits);  // ours, or another matcher's
    }
  } else {
    target = std::make_shared<StackSetDfa>(grammar_.get(), options_.memoize, options_.limits);
  }
  *lock = std::unique_lock<std::mutex>(target->mutex());
  size_t k = 0;
  state_ = target->Import(saved[k++]);
  for (Snapshot& h : history_) h.state = target->Import(saved[k++]);
  if (extra != nullptr) {
    for (StackStateId& s : *extra) s = target->Import(saved[k++]);
  }
  dfa_ = std::move(target);
  ++rebases_;
}

bool GrammarMatcher::Accept(std::string_view bytes) {
  if (terminated_) return false;
  std::unique_lock<std::mutex> lock(dfa_->mutex());
  if (dfa_->OverSoftLimits()) Rebase(&lock, nullptr);
  const int before = dfa_->overflow_count();
  StackStateId s = state_;
  for (char c : bytes) {
    s = dfa_->Next(s, static_cast<uint8_t>(c));
    if (s == kDeadState) break;
  }
  if (dfa_->overflow_count() != before) overflowed_ = true;
  if (s == kDeadState) return false;
  Push();
  state_ = s;
  can_end_ = dfa_->CanEnd(s);
  return true;
}

bool GrammarMatcher::AcceptToken(const TokenVocabView& vocab, TokenId id) {
  if (terminated_ || id < 0 || id >= vocab.size()) return false;
  if (vocab.IsEnd(id)) {
    if (!can_end_) return false;
    Push();
    terminated_ = true;
    return true;
  }
  const std::string_view piece = vocab.piece(id);
  if (piece.empty()) return false;
  return Accept(piece);
}

bool GrammarMatcher::Rollback(int n) {
  if (n < 0 || n > static_cast<int>(history_.size())) return false;
  if (n == 0) return true;
  const Snapshot& back = history_[history_.size() - static_cast<size_t>(n)];
  state_ = back.state;
  can_end_ = back.can_end;
  terminated_ = back.terminated;
  history_.resize(history_.size() - static_cast<size_t>(n));
  return true;
}

void GrammarMatcher::Reset() {
  std::lock_guard<std::mutex> lock(dfa_->mutex());
  state_ = dfa_->Initial();
  can_end_ = dfa_->CanEnd(state_);
  terminated_ = false;
  history_.clear();
}

void GrammarMatcher::FillMask(const TokenVocabView& vocab, uint32_t* bitmask) {
  const size_t words = vocab.mask_words();
  std::fill(bitmask, bitmask + words, 0u);
  if (terminated_) return;
  std::unique_lock<std::mutex> lock(dfa_->mutex());
  if (dfa_->OverSoftLimits()) Rebase(&lock, nullptr);
  ++stats_.calls;
  if (const uint32_t* cached = dfa_->FindMask(vocab.id(), state_)) {
    std::memcpy(bitmask, cached, words * sizeof(uint32_t));
    ++stats_.cached;
    return;
  }
  int before = dfa_->overflow_count();
  const std::vector<TokenVocabView::TrieNode>& trie = vocab.trie();
  const std::vector<TokenId>& sorted = vocab.sorted_tokens();
  const std::vector<ByteSet>& below_sets = vocab.below_sets();
  // Subtrees that AllowsSubtree vouches for are allowed whole, without visiting them (not in the
  // reference mode).
  const bool bulk = options_.memoize;
  // The allowed tokens as ranges of sorted(): the walk meets them in that order.
  std::vector<std::pair<int32_t, int32_t>> spans;
  int64_t allowed = 0;
  auto allow = [&](int32_t begin, int32_t end) {
    if (begin == end) return;
    allowed += end - begin;
    if (!spans.empty() && spans.back().second == begin) {
      spans.back().second = end;
    } else {
      spans.push_back({begin, end});
    }
  };
  // states[d]: the state after the first d bytes of the current trie path.
  std::vector<StackStateId> states(static_cast<size_t>(vocab.max_depth()) + 1, kDeadState);
  states[0] = state_;
  StackSetDfa* dfa = dfa_.get();
  const size_t n = vocab.num_trie_nodes();
  for (size_t i = 0; i < n;) {
    const TokenVocabView::TrieNode& node = trie[i];
    // Where the walk goes if this subtree is skipped: fetch it while the state is looked up.
    __builtin_prefetch(&trie[static_cast<size_t>(node.subtree_end)]);
    const StackStateId s = dfa->Next(states[node.depth - 1u], node.byte);
    ++stats_.nodes_visited;
    if (s == kDeadState) {
      i = static_cast<size_t>(node.subtree_end);
      continue;
    }
    if (bulk && node.below_set >= 0 && AllowsSubtree(dfa, s, node, below_sets)) {
      ++stats_.subtrees_whole;
      allow(node.tokens_begin, node.subtree_tokens_end);
      i = static_cast<size_t>(node.subtree_end);
      continue;
    }
    states[node.depth] = s;
    allow(node.tokens_begin, trie[i + 1].tokens_begin);
    ++i;
    if ((i & 63) == 0 && dfa->OverHardLimits()) {
      // Keep memory bounded on hostile grammars: continue in a fresh automaton.
      if (dfa->overflow_count() != before) overflowed_ = true;
      Rebase(&lock, &states);
      ++stats_.rebases;
      dfa = dfa_.get();
      before = dfa->overflow_count();
    }
  }
  // Set the allowed bits, or (when most are allowed) start from all and clear the others.
  auto flip = [&](int32_t begin, int32_t end) {
    for (int32_t k = begin; k < end; ++k) {
      const TokenId id = sorted[static_cast<size_t>(k)];
      bitmask[id >> 5] ^= 1u << (id & 31);
    }
  };
  if (allowed * 2 > static_cast<int64_t>(sorted.size())) {
    std::memcpy(bitmask, vocab.trie_token_mask().data(), words * sizeof(uint32_t));
    int32_t next = 0;
    for (const auto& [begin, end] : spans) {
      flip(next, begin);
      next = end;
    }
    flip(next, static_cast<int32_t>(sorted.size()));
  } else {
    for (const auto& [begin, end] : spans) flip(begin, end);
  }
  if (dfa->overflow_count() != before) overflowed_ = true;
  if (can_end_) {
    for (TokenId id : vocab.end_ids()) bitmask[id >> 5] |= 1u << (id & 31);
  }
  dfa_->StoreMask(vocab.id(), state_, bitmask, words);
}

Status GrammarMatcher::status() const {
  if (!overflowed_) return Status::Ok();
  return ResourceExhaustedError(
      "grammar: some input had more simultaneous parses than the matcher allows (" +
      std::to_string(options_.limits.max_stacks_per_state) + " stacks, " +
      std::to_string(options_.limits.max_closure_steps) + " expansion steps); it was refused");
}

std::string GrammarMatcher::DebugState() const {
  std::lock_guard<std::mutex> lock(dfa_->mutex());
  return dfa_->Describe(state_) + (terminated_ ? " (terminated)" : "");
}

}  // namespace forge
