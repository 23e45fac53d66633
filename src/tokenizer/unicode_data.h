// Code-point maps for the BERT normalizer that PCRE2 does not offer: lowercase and "strip
// accents" (canonical decomposition minus nonspacing marks). Data in unicode_data.cc (generated).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace forge::unicode_data {

struct CodepointMapping {
  uint32_t cp;      // the mapped code point
  uint16_t offset;  // first code point of its mapping in the table's pool
  uint8_t length;   // code points in the mapping (0: the code point disappears)
};

struct MappingTable {
  const CodepointMapping* entries;  // sorted by cp
  size_t size;
  const uint32_t* pool;
};

extern const char kUnicodeVersion[];
extern const MappingTable kLowerTable;
extern const MappingTable kStripAccentsTable;

// Appends the full lowercase mapping of cp (Python's str.lower) to out.
void AppendLowercase(uint32_t cp, std::u32string* out);
// Appends NFD(cp) with nonspacing marks (Mn) removed; Hangul syllables decompose to jamo.
void AppendStripAccents(uint32_t cp, std::u32string* out);

}  // namespace forge::unicode_data
