// GBNF (llama.cpp's grammar format) to GrammarIr: rules `name ::= alternatives`, string literals,
// character classes, `.`, groups, `* + ? {m} {m,} {m,n}` and comments. Errors name the line and
// column; GrammarLimits bound the size of what any input can build.
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/grammar_ir.h"

namespace forge {

// Parses text into rules. The rule named "root" is where matching starts. Token references
// (<...>, <[id]>, !<...>) are refused. Errors are InvalidArgument ("line 3, column 7: ...") or
// ResourceExhausted when a limit is passed.
StatusOr<GrammarIr> ParseGbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace forge
