// Range-list set algebra over Unicode scalar values and the GBNF spelling of classes.
#include "grammar/codepoint_set.h"

#include <algorithm>
#include <cstdio>

#include "base/escapes.h"

namespace forge::codepoints {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800;
constexpr uint32_t kSurrogateHi = 0xDFFF;

void AppendHex(uint32_t cp, std::string* out) {
  char buf[16];
  if (cp <= 0xFF) {
    std::snprintf(buf, sizeof(buf), "\\x%02X", cp);
  } else if (cp <= 0xFFFF) {
    std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
  } else {
    std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
  }
  *out += buf;
}

std::string ClassBody(const std::vector<CodepointRange>& set) {
  std::string body;
  for (const CodepointRange& r : set) {
    body += GbnfChar(r.lo, true);
    if (r.hi == r.lo) continue;
    if (r.hi > r.lo + 1) body += "-";
    body += GbnfChar(r.hi, true);
  }
  return body;
}

}  // namespace

std::vector<CodepointRange> Normalize(std::vector<CodepointRange> ranges) {
  std::vector<CodepointRange> split;
  for (CodepointRange r : ranges) {
    if (r.lo > r.hi || r.lo > kMaxCodepoint) continue;
    r.hi = std::min(r.hi, kMaxCodepoint);
    if (r.lo < kSurrogateLo && r.hi > kSurrogateHi) {
      split.push_back({r.lo, kSurrogateLo - 1});
      split.push_back({kSurrogateHi + 1, r.hi});
    } else if (r.lo >= kSurrogateLo && r.hi <= kSurrogateHi) {
      continue;
    } else if (r.lo >= kSurrogateLo && r.lo <= kSurrogateHi) {
      split.push_back({kSurrogateHi + 1, r.hi});
    } else if (r.hi >= kSurrogateLo && r.hi <= kSurrogateHi) {
      split.push_back({r.lo, kSurrogateLo - 1});
    } else {
      split.push_back(r);
    }
  }
  std::sort(split.begin(), split.end());
  std::vector<CodepointRange> out;
  for (const CodepointRange& r : split) {
    // Ranges that touch across the surrogate gap stay apart; that is harmless.
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<CodepointRange> Complement(const std::vector<CodepointRange>& set) {
  std::vector<CodepointRange> out;
  uint32_t next = 0;
  for (const CodepointRange& r : set) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return Normalize(std::move(out));
}

std::vector<CodepointRange> Union(const std::vector<CodepointRange>& a,
                                  const std::vector<CodepointRange>& b) {
  std::vector<CodepointRange> all = a;
  all.insert(all.end(), b.begin(), b.end());
  return Normalize(std::move(all));
}

std::vector<CodepointRange> Intersect(const std::vector<CodepointRange>& a,
                                      const std::vector<CodepointRange>& b) {
  std::vector<CodepointRange> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint32_t lo = std::max(a[i].lo, b[j].lo);
    const uint32_t hi = std::min(a[i].hi, b[j].hi);
    if (lo <= hi) out.push_back({lo, hi});
    if (a[i].hi < b[j].hi) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

std::vector<CodepointRange> Subtract(const std::vector<CodepointRange>& a,
                                     const std::vector<CodepointRange>& b) {
  return Intersect(a, Complement(b));
}

bool Contains(const std::vector<CodepointRange>& set, uint32_t cp) {
  auto it = std::upper_bound(set.begin(), set.end(), cp,
                             [](uint32_t v, const CodepointRange& r) { return v < r.lo; });
  return it != set.begin() && std::prev(it)->hi >= cp;
}

uint64_t Count(const std::vector<CodepointRange>& set) {
  uint64_t n = 0;
  for (const CodepointRange& r : set) n += r.hi - r.lo + 1;
  return n;
}

std::string GbnfChar(uint32_t cp, bool in_class) {
  std::string out;
  if (cp < 0x20 || cp == 0x7F || cp >= 0x80) {
    AppendHex(cp, &out);
  } else if (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^' || cp == '\\')) {
    AppendHex(cp, &out);  // \x5D rather than \]: plain hex reads the same in every GBNF parser
  } else if (cp == '\\' || cp == '"') {
    out.push_back('\\');
    out.push_back(static_cast<char>(cp));
  } else {
    out.push_back(static_cast<char>(cp));
  }
  return out;
}

std::string ToGbnfClass(const std::vector<CodepointRange>& set) {
  std::string plain = "[";
  plain += ClassBody(set);
  plain += "]";
  const std::vector<CodepointRange> rest = Complement(set);
  if (rest.empty()) return ".";
  std::string negated = "[^";  // (built by appends: GCC 12 warns falsely on "[^" + ...)
  negated += ClassBody(rest);
  negated += "]";
  return negated.size() < plain.size() ? negated : plain;
}

std::string GbnfLiteral(std::string_view utf8) {
  std::string out = "\"";
  for (unsigned char c : utf8) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (!AppendControlEscape(c, &out)) {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace forge::codepoints
