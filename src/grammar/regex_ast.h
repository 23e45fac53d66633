// Regular expressions (the ECMA-262 subset JSON Schema's "pattern" uses in practice) parsed into
// a small tree: character sets, sequences, alternations and repetitions; ^ and $ only at the
// ends of top-level alternatives. Lookaround, backreferences, word boundaries and Unicode
// property escapes are refused.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"
#include "grammar/grammar_ir.h"

namespace forge {

struct RegexNode {
  enum class Kind { kEmpty, kChars, kSeq, kAlt, kRepeat };
  Kind kind = Kind::kEmpty;
  // kChars: the characters both ECMA-262 and Python match here (for \d, \w, \s and their
  // negations the ASCII ones; see regex_to_gbnf.h).
  std::vector<CodepointRange> chars;
  std::vector<RegexNode> children;
  int min = 0;
  int max = -1;  // kRepeat; -1: unbounded
};

struct RegexAlternative {
  RegexNode node;
  bool anchored_start = false;  // ^
  bool anchored_end = false;    // $
};

// The top-level alternatives of pattern. InvalidArgument names what is unsupported and where.
StatusOr<std::vector<RegexAlternative>> ParseRegex(std::string_view pattern, int max_repetition,
                                                   int max_nesting);

// True when node can match the empty string.
bool RegexNullable(const RegexNode& node);

}  // namespace forge
