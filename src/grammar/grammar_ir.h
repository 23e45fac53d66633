// GrammarIr: a context-free grammar over Unicode code points as the GBNF parser builds it, with
// groups and repetitions already turned into rules of their own, and the limits that bound it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace forge {

// Bounds that keep hostile grammars from exhausting memory or the stack.
struct GrammarLimits {
  size_t max_text_bytes = 4u << 20;  // GBNF source
  int max_rules = 1 << 17;           // after groups and repetitions become rules
  int max_symbols = 1 << 21;         // symbols in all alternatives of all rules
  int max_nesting = 100;             // parentheses inside one another
  int max_repetition = 100000;       // m and n of {m,n}
};

// An inclusive range of code points.
struct CodepointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
  friend bool operator==(const CodepointRange&, const CodepointRange&) = default;
  friend auto operator<=>(const CodepointRange&, const CodepointRange&) = default;
};
inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// One symbol of an alternative: a set of code points (one character) or another rule.
struct IrSymbol {
  enum class Kind : uint8_t { kClass, kRule };
  Kind kind = Kind::kClass;
  int32_t index = 0;  // into GrammarIr::classes or GrammarIr::rules
  friend bool operator==(const IrSymbol&, const IrSymbol&) = default;
};

using IrSequence = std::vector<IrSymbol>;

struct IrRule {
  std::string name;
  std::vector<IrSequence> alternatives;  // an empty sequence matches the empty string
  bool defined = false;
  bool generated = false;  // made for a group or repetition (name is "<parent>_<n>")
  size_t first_use = 0;    // byte offset of the first reference (for "undefined rule" errors)
};

struct GrammarIr {
  std::vector<IrRule> rules;
  // [n_classes] sorted, disjoint, non-adjacent ranges; never containing surrogates
  std::vector<std::vector<CodepointRange>> classes;
  int32_t root = -1;
};

}  // namespace forge
