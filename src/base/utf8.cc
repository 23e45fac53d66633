// UTF-8 decoding with maximal-subpart error replacement (Unicode 15, section 3.9, U+FFFD policy).
#include "base/utf8.h"

namespace forge::utf8 {
namespace {

// Scans one sequence at text[pos]. Returns its length in bytes when it is complete and valid;
// otherwise 0 with *bad set to the length of the maximal subpart (>= 1), and *truncated set when
// the subpart runs to the end of text (so more bytes could still complete it).
size_t Scan(std::string_view text, size_t pos, size_t* bad, bool* truncated) {
  const uint8_t b0 = static_cast<uint8_t>(text[pos]);
  *truncated = false;
  *bad = 1;
  if (b0 < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;  // a continuation byte, C0, C1 or F5..FF: never valid
  }
  for (size_t k = 1; k < len; ++k) {
    if (pos + k >= text.size()) {
      *bad = k;
      *truncated = true;
      return 0;
    }
    const uint8_t b = static_cast<uint8_t>(text[pos + k]);
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) {
      *bad = k;
      return 0;
    }
  }
  return len;
}

uint32_t Value(std::string_view text, size_t pos, size_t len) {
  const auto b = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(text[pos + i]));
  };
  switch (len) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

}  // namespace

uint32_t DecodeAt(std::string_view text, size_t* pos) {
  size_t bad;
  bool truncated;
  const size_t len = Scan(text, *pos, &bad, &truncated);
  if (len == 0) {
    *pos += bad;
    return kReplacement;
  }
  const uint32_t cp = Value(text, *pos, len);
  *pos += len;
  return cp;
}

void Append(uint32_t cp, std::string* out) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacement;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Encode(uint32_t cp) {
  std::string s;
  Append(cp, &s);
  return s;
}

bool IsValid(std::string_view text) {
  size_t pos = 0, bad;
  bool truncated;
  while (pos < text.size()) {
    const size_t len = Scan(text, pos, &bad, &truncated);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

size_t AppendSanitized(std::string_view text, bool final, std::string* out) {
  size_t pos = 0, bad;
  bool truncated;
  while (pos < text.size()) {
    const size_t len = Scan(text, pos, &bad, &truncated);
    if (len > 0) {
      out->append(text.data() + pos, len);
      pos += len;
      continue;
    }
    if (truncated && !final) break;  // may complete with the next bytes
    out->append(kReplacementUtf8);
    pos += bad;
  }
  return pos;
}

}  // namespace forge::utf8
