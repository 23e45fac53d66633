// The UTF-8 position codes of a piece's prefixes: a right-to-left pass finds where the rest of the
// piece is clean UTF-8, a left-to-right pass where each prefix ends inside a character.
#include "grammar/utf8_position.h"

namespace forge::utf8_position {
namespace {

// Length of the character a lead byte starts (1-4), 0 for bytes that start none.
int LeadLength(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// The range kind of the first continuation byte after lead.
int FirstRange(unsigned char lead) {
  switch (lead) {
    case 0xE0:
      return 1;
    case 0xED:
      return 2;
    case 0xF0:
      return 3;
    case 0xF4:
      return 4;
    default:
      return 0;
  }
}

bool InRange(int kind, unsigned char b) {
  static constexpr uint8_t kRanges[5][2] = {
      {0x80, 0xBF}, {0xA0, 0xBF}, {0x80, 0x9F}, {0x90, 0xBF}, {0x80, 0x8F}};
  return b >= kRanges[kind][0] && b <= kRanges[kind][1];
}

}  // namespace

void ContinuationRanges(uint8_t code, uint8_t ranges[3][2]) {
  static constexpr uint8_t kRanges[5][2] = {
      {0x80, 0xBF}, {0xA0, 0xBF}, {0x80, 0x9F}, {0x90, 0xBF}, {0x80, 0x8F}};
  const int first = code / 4;
  for (int i = 0; i < 3; ++i) {
    ranges[i][0] = i == 0 ? kRanges[first][0] : 0x80;
    ranges[i][1] = i == 0 ? kRanges[first][1] : 0xBF;
  }
}

void PieceCodes(std::string_view piece, std::vector<uint8_t>* codes) {
  const size_t n = piece.size();
  // clean[d]: piece[d..] is whole valid characters, then at most the valid start of one more.
  std::vector<uint8_t> clean(n + 1, 0);
  clean[n] = 1;
  for (size_t d = n; d-- > 0;) {
    const unsigned char c = static_cast<unsigned char>(piece[d]);
    const int len = LeadLength(c);
    if (len == 0) continue;
    bool ok = true;
    size_t k = 1;
    for (; k < static_cast<size_t>(len) && d + k < n && ok; ++k) {
      ok = InRange(k == 1 ? FirstRange(c) : 0, static_cast<unsigned char>(piece[d + k]));
    }
    if (!ok) continue;
    clean[d] = d + static_cast<size_t>(len) <= n ? clean[d + static_cast<size_t>(len)] : 1;
  }
  codes->assign(n + 1, kNotClean);
  // Left to right: the character the prefix [0, d) ends inside, if any.
  size_t lead = 0;
  int lead_len = 0;  // 0: not inside a character
  for (size_t d = 1; d <= n; ++d) {
    const unsigned char c = static_cast<unsigned char>(piece[d - 1]);
    if (lead_len > 0 && d - 1 > lead && d - 1 < lead + static_cast<size_t>(lead_len) &&
        InRange(d - 1 == lead + 1 ? FirstRange(static_cast<unsigned char>(piece[lead])) : 0, c)) {
      // c continues the character at lead.
    } else {
      lead = d - 1;
      lead_len = LeadLength(c);
    }
    if (lead_len > 1 && d < lead + static_cast<size_t>(lead_len)) {
      const int pending = static_cast<int>(lead + static_cast<size_t>(lead_len) - d);
      const int first = d == lead + 1 ? FirstRange(static_cast<unsigned char>(piece[lead])) : 0;
      (*codes)[d] = clean[lead] ? Inside(first, pending) : kNotClean;
    } else {
      lead_len = 0;
      (*codes)[d] = clean[d] ? kBoundary : kNotClean;
    }
  }
}

}  // namespace forge::utf8_position
