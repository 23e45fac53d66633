// Integer ranges as digit strings: a range is split into ranges of one length, and a range of
// one length [x, y] into "x0 then [x', 99..]", "(x0+1 .. y0-1) then any digits" and "y0 then
// [00.., y']". Decimal bounds reduce to integer-part ranges with a rule for the fraction at each
// end.
#include "grammar/number_range_gbnf.h"

#include <algorithm>
#include <string>
#include <vector>

namespace forge {
namespace {

std::string Join(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
  return out + ")";
}

// "(a b)", built by appends (GCC 12 warns falsely on "(" + std::string&&).
std::string Group(const std::string& a, const std::string& b) {
  std::string out = "(";
  out += a;
  out += " ";
  out += b;
  out += ")";
  return out;
}

std::string Digit(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(n) + "}";
}

// Same-length digit strings x <= y.
std::string SameLength(const std::string& x, const std::string& y) {
  const size_t n = x.size();
  if (n == 1) return Digit(x[0], y[0]);
  const std::string xt = x.substr(1), yt = y.substr(1);
  if (x[0] == y[0]) return "(\"" + std::string(1, x[0]) + "\" " + SameLength(xt, yt) + ")";
  const bool x_min = xt.find_first_not_of('0') == std::string::npos;
  const bool y_max = yt.find_first_not_of('9') == std::string::npos;
  if (x_min && y_max) return Group(Digit(x[0], y[0]), AnyDigits(n - 1));
  std::vector<std::string> parts;
  char lo_first = x[0], hi_first = y[0];
  if (!x_min) {
    parts.push_back("(\"" + std::string(1, x[0]) + "\" " + SameLength(xt, std::string(n - 1, '9')) +
                    ")");
    ++lo_first;
  }
  if (!y_max) --hi_first;
  if (lo_first <= hi_first) {
    parts.push_back(Group(Digit(lo_first, hi_first), AnyDigits(n - 1)));
  }
  if (!y_max) {
    parts.push_back("(\"" + std::string(1, y[0]) + "\" " + SameLength(std::string(n - 1, '0'), yt) +
                    ")");
  }
  return Join(parts);
}

int64_t Pow10(size_t n) {
  int64_t p = 1;
  for (size_t i = 0; i < n; ++i) p *= 10;
  return p;
}

// Non-negative integers in [a, b]; b empty: up to max(max_digits, digits of a) digits.
std::string NonNegative(int64_t a, std::optional<int64_t> b, int max_digits) {
  const size_t da = std::to_string(a).size();
  std::vector<std::string> parts;
  if (b.has_value()) {
    const size_t db = std::to_string(*b).size();
    for (size_t len = da; len <= db; ++len) {
      const int64_t lo = std::max(a, len == 1 ? int64_t{0} : Pow10(len - 1));
      const int64_t hi = std::min(*b, Pow10(len) - 1);
      if (lo <= hi) parts.push_back(SameLength(std::to_string(lo), std::to_string(hi)));
    }
    return Join(parts);
  }
  parts.push_back(SameLength(std::to_string(a), std::string(da, '9')));
  const size_t max_len = std::max(static_cast<size_t>(std::max(max_digits, 1)), da);
  if (max_len > da) {
    // Every number with da+1 .. max_len digits.
    const size_t extra_min = da, extra_max = max_len - 1;
    parts.push_back("([1-9] [0-9]{" + std::to_string(extra_min) + "," + std::to_string(extra_max) +
                    "})");
  }
  return Join(parts);
}

}  // namespace

std::string IntegerRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi, int max_digits) {
  std::vector<std::string> parts;
  // Negative numbers -n with n in [neg_lo, neg_hi].
  if (!lo.has_value() || *lo < 0) {
    const int64_t neg_lo = (hi.has_value() && *hi < 0) ? -*hi : 1;
    std::optional<int64_t> neg_hi;
    if (lo.has_value()) neg_hi = -*lo;
    if (!neg_hi.has_value() || neg_lo <= *neg_hi) {
      parts.push_back("(\"-\" " + NonNegative(neg_lo, neg_hi, max_digits) + ")");
    }
  }
  if (!hi.has_value() || *hi >= 0) {
    const int64_t a = lo.has_value() ? std::max<int64_t>(0, *lo) : 0;
    if (!hi.has_value() || a <= *hi) parts.push_back(NonNegative(a, hi, max_digits));
  }
  if (parts.empty()) return "[]";  // (not reached for lo <= hi)
  return Join(parts);
}

std::string DecimalRangeGbnf(std::optional<int64_t> lo, bool lo_exclusive,
                             std::optional<int64_t> hi, bool hi_exclusive, int max_digits,
                             int frac_digits) {
  const std::string f = std::to_string(std::max(frac_digits, 1));
  const std::string any_fraction = "(\".\" [0-9]{1," + f + "})?";
  const std::string nonzero_fraction =
      frac_digits > 1 ? "(\".\" [0-9]{0," + std::to_string(frac_digits - 1) + "} [1-9])"
                      : "(\".\" [1-9])";
  const std::string zero_fraction = "(\".\" \"0\"{1," + f + "})?";
  std::vector<std::string> parts;
  if (!lo.has_value()) {
    // Every negative number: "-" and a positive one (so never -0, which is 0 and may be
    // excluded by hi).
    parts.push_back("(\"-\" (" +
                    Group(IntegerRangeGbnf(1, std::nullopt, max_digits), any_fraction) + " | " +
                    Group("\"0\"", nonzero_fraction) + "))");
  }
  const int64_t low = lo.value_or(0);
  const bool low_exclusive = lo.has_value() && lo_exclusive;
  // Integer parts whose every fraction is inside the bounds.
  const int64_t any_lo = low_exclusive ? low + 1 : low;
  std::optional<int64_t> any_hi;
  if (hi.has_value()) any_hi = *hi - 1;
  if (!any_hi.has_value() || any_lo <= *any_hi) {
    parts.push_back(Group(IntegerRangeGbnf(any_lo, any_hi, max_digits), any_fraction));
  }
  // x = low + a non-zero fraction, when low is excluded.
  if (low_exclusive && (!hi.has_value() || *hi > low)) {
    parts.push_back(Group(IntegerRangeGbnf(low, low, max_digits), nonzero_fraction));
  }
  // x = hi exactly (its fraction all zeros), when hi is included.
  if (hi.has_value() && !hi_exclusive && (*hi > low || (*hi == low && !low_exclusive))) {
    parts.push_back(Group(IntegerRangeGbnf(*hi, *hi, max_digits), zero_fraction));
  }
  if (parts.empty()) return "[]";
  return Join(parts);
}

}  // namespace forge
