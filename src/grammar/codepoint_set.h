// Sets of Unicode scalar values as sorted range lists: the character classes of grammars and
// patterns (union, complement, difference), and their GBNF spelling.
#pragma once

#include <string>
#include <vector>

#include "grammar/grammar_ir.h"

namespace forge::codepoints {

// Sorts and merges ranges (overlapping or adjacent) and drops the surrogates D800-DFFF and
// anything past U+10FFFF, which UTF-8 text can never hold.
std::vector<CodepointRange> Normalize(std::vector<CodepointRange> ranges);
// Every scalar value not in set. Requires: set is normalized.
std::vector<CodepointRange> Complement(const std::vector<CodepointRange>& set);
std::vector<CodepointRange> Union(const std::vector<CodepointRange>& a,
                                  const std::vector<CodepointRange>& b);
std::vector<CodepointRange> Intersect(const std::vector<CodepointRange>& a,
                                      const std::vector<CodepointRange>& b);
std::vector<CodepointRange> Subtract(const std::vector<CodepointRange>& a,
                                     const std::vector<CodepointRange>& b);
bool Contains(const std::vector<CodepointRange>& set, uint32_t cp);
// Number of scalar values in a normalized set.
uint64_t Count(const std::vector<CodepointRange>& set);

// GBNF text for a normalized, non-empty set: a bracket class such as [a-z\x5D] (escaping what
// needs it) or its negated form when that is shorter.
std::string ToGbnfClass(const std::vector<CodepointRange>& set);
// GBNF spelling of one code point inside a string literal or class ("a", "\x22", "\u2028").
std::string GbnfChar(uint32_t cp, bool in_class);
// A GBNF string literal for UTF-8 text: "..." with ", \ and control characters escaped.
std::string GbnfLiteral(std::string_view utf8);

}  // namespace forge::codepoints
