// Regular expressions (the ECMA-262 subset JSON Schema's "pattern" uses in practice) as GBNF:
// literals, escapes, classes, ., groups, alternation, quantifiers and ^/$ anchors at the ends.
// Lookaround, backreferences, word boundaries and Unicode property escapes are refused.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace forge {

struct RegexGbnfOptions {
  // Spell characters as they appear inside a JSON string ("\"" as \", a newline as \n, ...):
  // the expression then matches the JSON text between the quotes of a matching string.
  bool json_string = false;
  // GBNF for one arbitrary character (in the spelling above), put before an expression not
  // anchored with ^ and after one not anchored with $ (a pattern matches anywhere).
  std::string any_char = ".";
  int max_repetition = 10000;  // largest m or n of {m,n}
  int max_nesting = 40;        // groups inside one another
};

// A GBNF expression (one item: bracketed when it has several parts) for the strings in which
// pattern finds a match. \d, \w and \s, and their negations, stand for the characters on which
// ECMA-262 and Python agree (negations keep to ASCII), so whatever the expression accepts both
// engines accept. InvalidArgument names what is unsupported and where.
StatusOr<std::string> RegexToGbnf(std::string_view pattern, const RegexGbnfOptions& options);

}  // namespace forge
