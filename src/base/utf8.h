// UTF-8 helpers (the tokenizers, the Jinja interpreter): decoding code points leniently, encoding,
// validation, and replacing invalid or incomplete sequences with U+FFFD the way Python's "replace"
// handler does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace forge::utf8 {

inline constexpr uint32_t kReplacement = 0xFFFD;
inline constexpr char kReplacementUtf8[] = "\xEF\xBF\xBD";

// Length of the sequence a lead byte announces (1-4); 1 for bytes that cannot lead one.
inline size_t SequenceLength(uint8_t lead) {
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

// Decodes the code point at text[*pos] and advances *pos past it. An invalid or truncated
// sequence yields kReplacement and advances by its maximal valid prefix (at least one byte).
uint32_t DecodeAt(std::string_view text, size_t* pos);

void Append(uint32_t cp, std::string* out);
std::string Encode(uint32_t cp);

// True when text is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool IsValid(std::string_view text);

// Appends text to out with every ill-formed subsequence replaced by U+FFFD (one per maximal
// subpart, as Python's bytes.decode("utf-8", "replace")). When final is false, a sequence that is
// incomplete at the end of text (but could still become valid) is not consumed. Returns the
// number of bytes of text consumed.
size_t AppendSanitized(std::string_view text, bool final, std::string* out);

}  // namespace forge::utf8
