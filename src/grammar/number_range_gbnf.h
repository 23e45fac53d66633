// GBNF for JSON numbers within bounds: integers in any range [lo, hi] (either side open), and
// decimals with non-negative integer bounds, as digit-by-digit alternatives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace forge {

// JSON spellings (no leading zeros, no "-0", no fraction or exponent) of the integers in
// [lo, hi]; an open side is bounded by max_digits digits (or the digits of the other bound).
// Requires: lo <= hi when both are given; |lo|, |hi| <= 10^18.
std::string IntegerRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi, int max_digits);

// Decimals (an optional fraction of up to frac_digits digits, no exponent) with lo <= x (lo < x
// when lo_exclusive) and x <= hi (x < hi when hi_exclusive). A missing lo allows every negative
// number. Requires: lo >= 0 and hi >= 0 when given; lo <= hi; they bound a non-empty set.
std::string DecimalRangeGbnf(std::optional<int64_t> lo, bool lo_exclusive,
                             std::optional<int64_t> hi, bool hi_exclusive, int max_digits,
                             int frac_digits);

}  // namespace forge
