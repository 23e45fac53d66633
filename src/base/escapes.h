// Escape sequences in text. Reading: one hex digit's value, and the fixed-length runs of them
// that escapes such as \xHH, \uHHHH and %HH carry (the GBNF and regex parsers, the Jinja lexer,
// URL paths). Writing: control characters as C-style escapes (GBNF literals, printed pieces).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace forge {

// The value of a hexadecimal digit ('0'-'9', 'a'-'f', 'A'-'F'), or -1 for any other character or
// code point (a char above 0x7F converts to a value past every digit).
constexpr int HexDigitValue(uint32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

// Reads n hex digits of text (bytes or code points) from *pos, moving *pos past each digit read:
// their value when all n are there, else nullopt with *pos at the first that is not a digit (or at
// the end of text).
template <typename Text>
std::optional<uint64_t> ReadHexDigits(const Text& text, size_t* pos, int n) {
  uint64_t value = 0;
  for (int i = 0; i < n; ++i, ++*pos) {
    const int d = *pos < text.size() ? HexDigitValue(static_cast<uint32_t>(text[*pos])) : -1;
    if (d < 0) return std::nullopt;
    value = value * 16 + static_cast<uint64_t>(d);
  }
  return value;
}

// Appends the C-style escape of a control character: \n, \t, \r, else \xHH (upper-case hex)
// for the rest of C0 and DEL. False, appending nothing, for any other character.
inline bool AppendControlEscape(uint32_t c, std::string* out) {
  if (c == '\n') {
    *out += "\\n";
  } else if (c == '\t') {
    *out += "\\t";
  } else if (c == '\r') {
    *out += "\\r";
  } else if (c < 0x20 || c == 0x7F) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02X", static_cast<unsigned>(c));
    *out += buf;
  } else {
    return false;
  }
  return true;
}

}  // namespace forge
