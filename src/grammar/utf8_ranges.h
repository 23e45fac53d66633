// The UTF-8 encodings of a set of code points as alternatives of byte-set sequences, so that a
// grammar over code points can run as an automaton over bytes (tokens may split characters).
#pragma once

#include <vector>

#include "grammar/byte_set.h"
#include "grammar/grammar_ir.h"

namespace forge {

// Alternatives whose union is exactly the UTF-8 encodings of set (a normalized range list). The
// one-byte encodings form one alternative of length 1; longer ones are grouped so alternatives
// with the same continuation bytes share one lead-byte set. Empty for an empty set.
std::vector<std::vector<ByteSet>> Utf8Alternatives(const std::vector<CodepointRange>& set);

}  // namespace forge
