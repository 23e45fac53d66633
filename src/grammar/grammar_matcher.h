// GrammarMatcher: where generation stands in a grammar. It accepts tokens' bytes (a token may
// end inside a UTF-8 character), says whether the text so far is complete, rolls back, forks
// cheaply, and fills the bitmask of tokens a sampler may pick next.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/stack_set_dfa.h"
#include "grammar/token_vocab.h"

namespace forge {

struct GrammarMatcherOptions {
  int max_rollback = 32;  // Accept calls that Rollback can undo
  // false: no memoized transitions and no masks cache (a slow reference for tests).
  bool memoize = true;
  // Use the grammar's shared automaton (Grammar::SharedAutomaton), so matchers of one grammar
  // (one request after another, or many at once) reuse each other's transitions and masks.
  // false: an automaton of this matcher's own (shared only with its copies).
  bool share_automaton = true;
  DfaLimits limits;
};

// What FillMask calls did (counts since the matcher was made; copies start from the source's).
struct FillMaskStats {
  int64_t calls = 0;
  int64_t cached = 0;          // answered from the masks cache
  int64_t nodes_visited = 0;   // vocabulary trie nodes stepped through
  int64_t subtrees_whole = 0;  // subtrees allowed without being visited
  int64_t rebases = 0;         // moves to a fresh automaton in the middle of a walk
};

// Copying a matcher is cheap (a few words and the rollback history): the copy shares the
// automaton and masks cache, which are locked, so copies (and matchers of one grammar) may be
// used on different threads. One matcher is not to be used by two threads at once.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar,
                          const GrammarMatcherOptions& options = {});

  // Advances by bytes if the grammar allows them all; otherwise returns false and changes
  // nothing. Accept("") is true.
  bool Accept(std::string_view bytes);
  // Accept(vocab.piece(id)) for ordinary tokens; an end id is accepted when CanEnd(), and the
  // matcher is then terminated (nothing more is accepted). Empty pieces are refused.
  bool AcceptToken(const TokenVocabView& vocab, TokenId id);
  // The text accepted so far is a complete sentence of the grammar.
  bool CanEnd() const { return !terminated_ && can_end_; }
  bool IsTerminated() const { return terminated_; }
  // Undoes the last n successful Accept/AcceptToken calls. False (and nothing undone) when
  // fewer than n are remembered (at most options.max_rollback).
  bool Rollback(int n);
  // Back to the start of the grammar.
  void Reset();

  // bitmask[vocab.mask_words()]: bit id set when token id may come next: its piece is accepted
  // from here, or it is an end id and CanEnd(). All clear once terminated.
  void FillMask(const TokenVocabView& vocab, uint32_t* bitmask);

  // Non-OK when the grammar passed the matcher's bounds (too many simultaneous parses); the
  // input that did so was refused.
  Status status() const;
  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  // Times this matcher moved to a fresh automaton (its bounds were passed).
  int rebases() const { return rebases_; }
  const FillMaskStats& fill_mask_stats() const { return stats_; }
  // The parse stacks, for debugging.
  std::string DebugState() const;

 private:
  struct Snapshot {
    StackStateId state;
    bool can_end;
    bool terminated;
  };
  void Push();
  // Moves to a fresh automaton holding only this matcher's states (and extra, updated in place)
  // when the shared one has grown past its bounds. Requires: lock of dfa_ held (passed in).
  void Rebase(std::unique_lock<std::mutex>* lock, std::vector<StackStateId>* extra);

  std::shared_ptr<const Grammar> grammar_;
  GrammarMatcherOptions options_;
  std::shared_ptr<StackSetDfa> dfa_;
  StackStateId state_ = kDeadState;
  bool can_end_ = false;
  bool terminated_ = false;
  bool overflowed_ = false;
  int rebases_ = 0;
  FillMaskStats stats_;
  std::vector<Snapshot> history_;  // oldest first, at most options_.max_rollback
};

}  // namespace forge
