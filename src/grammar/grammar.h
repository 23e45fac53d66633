// Grammar: a compiled context-free grammar over bytes, immutable and shared by every matcher
// that uses it. Character classes are expanded to their UTF-8 byte sequences, so matching runs
// byte by byte and a token may end in the middle of a character.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "grammar/byte_set.h"
#include "grammar/dfa_limits.h"
#include "grammar/grammar_ir.h"

namespace forge {

class StackSetDfa;

struct GrammarElement {
  enum class Kind : uint8_t { kEnd, kBytes, kRule };
  Kind kind = Kind::kEnd;
  int32_t value = 0;  // kBytes: index of a terminal ByteSet; kRule: a rule index
};

class Grammar {
 public:
  // Parses GBNF and compiles it. Errors: those of ParseGbnf, and InvalidArgument for a
  // left-recursive rule (one that can reach itself before reading a byte: "expr ::= expr ...",
  // or "(x?)*") or a grammar so ambiguous that its first step passes the matcher's bounds.
  static StatusOr<std::shared_ptr<const Grammar>> FromGbnf(std::string_view text,
                                                           const GrammarLimits& limits = {});
  static StatusOr<std::shared_ptr<const Grammar>> FromIr(const GrammarIr& ir);

  // Alternatives laid end to end, each closed by a kEnd element. Element i+1 follows element i
  // within an alternative.
  const std::vector<GrammarElement>& elements() const { return elements_; }
  // Indices into elements() where each alternative of rule starts.
  std::span<const int32_t> alternatives(int32_t rule) const {
    return std::span<const int32_t>(alt_starts_)
        .subspan(rule_alts_[rule], rule_alts_[rule + 1] - rule_alts_[rule]);
  }
  const ByteSet& terminal(int32_t i) const { return terminals_[i]; }
  int32_t root() const { return root_; }
  int num_rules() const { return static_cast<int>(names_.size()); }
  const std::string& rule_name(int32_t rule) const { return names_[rule]; }

  // Bytes that no terminal tells apart share a class; automata index transitions by class.
  int num_byte_classes() const { return num_byte_classes_; }
  uint8_t byte_class(uint8_t b) const { return byte_class_[b]; }
  const uint8_t* byte_classes() const { return byte_class_; }

  // The compiled rules in a GBNF-like notation over bytes, for debugging.
  std::string ToString() const;

  // The automaton (memoized transitions and FillMask results) that matchers of this grammar
  // share, so that one request's work serves the next; made with limits on first use. A matcher
  // that finds it past its soft limits puts a fresh one in its place (ReplaceSharedAutomaton,
  // when old is still the shared one). Thread-safe.
  std::shared_ptr<StackSetDfa> SharedAutomaton(const DfaLimits& limits) const;
  void ReplaceSharedAutomaton(const StackSetDfa* old, std::shared_ptr<StackSetDfa> fresh) const;

 private:
  Grammar() = default;
  Status Compile(const GrammarIr& ir);
  Status CheckLeftRecursion() const;
  void ComputeByteClasses();

  std::vector<GrammarElement> elements_;
  std::vector<int32_t> alt_starts_;  // [n_alternatives] element index
  std::vector<int32_t> rule_alts_;   // [n_rules + 1] index into alt_starts_
  std::vector<ByteSet> terminals_;
  std::vector<std::string> names_;  // [n_rules]
  int32_t root_ = 0;
  int num_byte_classes_ = 1;
  uint8_t byte_class_[256] = {};

  mutable std::mutex shared_mu_;
  mutable std::shared_ptr<StackSetDfa> shared_;  // holds a raw pointer back: no cycle
};

}  // namespace forge
