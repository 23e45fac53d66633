// StackSetDfa: the matcher's automaton, a DFA built lazily over sets of parse stacks. A parse
// stack is a chain of grammar positions (the top one names the next terminal, the ones below it
// where to continue when a rule ends); chains are hash-consed into shared nodes, and a set of
// them (all ways the input read so far can continue) is interned as one DFA state. Transitions
// are computed on first use and memoized per (state, byte class), so walking a vocabulary trie
// or accepting a token is mostly table lookups. Its masks cache holds FillMask results by state.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/dfa_limits.h"
#include "grammar/grammar.h"

namespace forge {

using StackStateId = int32_t;
inline constexpr StackStateId kDeadState = 0;  // no stack left: the input was rejected

class StackSetDfa {
 public:
  // A state's stacks outside any automaton: per stack its element positions, top first (an
  // empty list is the empty stack).
  struct ExportedState {
    std::vector<std::vector<int32_t>> stacks;
  };

  // memoize=false computes every transition afresh (a slower, independent reference for tests).
  // Requires: grammar outlives the automaton.
  StackSetDfa(const Grammar* grammar, bool memoize, const DfaLimits& limits);

  // Callers hold mutex() around every call but the constructor (an automaton is shared by the
  // matchers of a grammar and their copies, which may live on different threads).
  std::mutex& mutex() const { return mutex_; }

  StackStateId Initial();
  // The state after reading byte from state s (kDeadState if no stack accepts it).
  StackStateId Next(StackStateId s, uint8_t byte) {
    const int32_t t = trans_[static_cast<size_t>(s) * num_classes_ + byte_class_[byte]];
    return t >= 0 ? t : Step(s, byte);
  }
  // True when some stack of s is empty: the input read so far is a complete sentence.
  bool CanEnd(StackStateId s) const {
    return state_begin_[s] < state_begin_[s + 1] && members_[state_begin_[s]] == kAcceptNode;
  }
  // The bytes b with Next(s, b) == s (computed once per state).
  ByteSet SelfLoops(StackStateId s);
  // The bytes of text made of whole UTF-8 characters that always lead from s back to s: the
  // ASCII ones of SelfLoops(s), the lead bytes whose every character does, and all continuation
  // bytes 80-BF (which such text holds only after a lead byte). Computed once per state.
  ByteSet CharacterLoops(StackStateId s);
  // The state every completion of a UTF-8 character leads to from s, when all do to the same
  // one (else kDeadState); code: utf8_position's Inside(...) code of what is still to come.
  StackStateId Completion(StackStateId s, uint8_t code);
  // A state as stacks of positions, and the same stacks as a state of this automaton.
  ExportedState Export(StackStateId s) const;
  StackStateId Import(const ExportedState& state);

  bool OverSoftLimits() const;
  bool OverHardLimits() const;
  // Steps so far that passed max_stacks_per_state or max_closure_steps (and were made dead).
  int overflow_count() const { return overflow_count_; }
  int num_states() const { return static_cast<int>(state_begin_.size()) - 1; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const DfaLimits& limits() const { return limits_; }
  const Grammar& grammar() const { return *grammar_; }

  // FillMask results by state, for one vocabulary at a time ([words] bits, bit set = allowed).
  const uint32_t* FindMask(uint64_t vocab_id, StackStateId s) const;
  void StoreMask(uint64_t vocab_id, StackStateId s, const uint32_t* mask, size_t words);

  // The stacks of s as rule positions, top first, for debugging.
  std::string Describe(StackStateId s) const;

 private:
  struct Node {
    int32_t pos;     // element index; the top node's element is a terminal
    int32_t parent;  // node below, or kRootParent
  };
  struct Item {
    int32_t pos;
    int32_t parent;
  };
  static constexpr int32_t kAcceptNode = 0;  // the empty stack
  static constexpr int32_t kRootParent = -1;

  StackStateId Step(StackStateId s, uint8_t byte);
  // The one state every continuation of t by the byte ranges ranges[0..n) ends in, when none
  // dies and all end in the same one; else kDeadState.
  StackStateId CommonEnd(StackStateId t, const uint8_t (*ranges)[2], int n);
  // Expands items until every stack's top is a terminal; the sorted tops go to tops_.
  void Closure();
  int32_t InternNode(int32_t pos, int32_t parent);
  StackStateId InternState(const std::vector<int32_t>& tops);
  bool Visit(uint64_t key);

  const Grammar* grammar_;
  const GrammarElement* elements_;
  const uint8_t* byte_class_;
  size_t num_classes_;
  bool memoize_;
  DfaLimits limits_;
  int overflow_count_ = 0;
  mutable std::mutex mutex_;

  std::vector<Node> nodes_;
  std::vector<int32_t> node_table_;    // open addressing, -1 = empty
  std::vector<int32_t> members_;       // the tops of every state, back to back
  std::vector<uint32_t> state_begin_;  // [n_states + 1] into members_
  std::vector<uint64_t> state_hash_;   // [n_states]
  std::vector<int32_t> state_table_;   // open addressing, -1 = empty
  std::vector<int32_t> trans_;         // [n_states * num_classes_] next state, -1 = not yet known
  std::vector<ByteSet> self_loops_;    // [n_states] SelfLoops, valid where loops_known_
  std::vector<uint8_t> loops_known_;   // [n_states] bit 0: self_loops_, bit 1: char_loops_
  std::vector<ByteSet> char_loops_;    // [n_states] CharacterLoops
  std::vector<uint8_t> class_first_;   // [num_classes_] the smallest byte of each class
  std::vector<ByteSet> class_bytes_;   // [num_classes_] the bytes of each class
  std::unordered_map<uint64_t, StackStateId> completions_;  // (state, code) -> Completion
  StackStateId initial_ = -1;

  // Scratch for Step/Closure.
  std::vector<Item> work_;
  std::vector<int32_t> tops_;
  std::vector<uint64_t> visit_keys_;
  std::vector<uint32_t> visit_stamp_;
  uint32_t stamp_ = 0;
  size_t visit_count_ = 0;

  // The masks cache (first in, first out).
  uint64_t mask_vocab_ = 0;
  std::unordered_map<StackStateId, size_t> mask_slot_;
  std::vector<std::vector<uint32_t>> masks_;
  std::vector<StackStateId> mask_owner_;
  size_t mask_next_ = 0;
};

}  // namespace forge
