// Lookups into the generated code-point maps of unicode_data.cc.
#include <algorithm>

#include "tokenizer/unicode_data.h"

namespace forge::unicode_data {
namespace {

const CodepointMapping* Find(const MappingTable& table, uint32_t cp) {
  const CodepointMapping* end = table.entries + table.size;
  const CodepointMapping* it = std::lower_bound(
      table.entries, end, cp, [](const CodepointMapping& m, uint32_t v) { return m.cp < v; });
  return (it != end && it->cp == cp) ? it : nullptr;
}

void AppendMapped(const MappingTable& table, uint32_t cp, std::u32string* out) {
  const CodepointMapping* m = Find(table, cp);
  if (m == nullptr) {
    out->push_back(cp);
    return;
  }
  out->append(reinterpret_cast<const char32_t*>(table.pool + m->offset), m->length);
}

}  // namespace

void AppendLowercase(uint32_t cp, std::u32string* out) {
  if (cp < 0x80) {
    out->push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  AppendMapped(kLowerTable, cp, out);
}

void AppendStripAccents(uint32_t cp, std::u32string* out) {
  // Hangul syllables: the algorithmic decomposition of Unicode section 3.12 (jamo are not Mn).
  constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
  constexpr uint32_t kTCount = 28, kNCount = 21 * 28, kSCount = 19 * 21 * 28;
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  if (cp < 0xC0) {
    out->push_back(cp);
    return;
  }
  AppendMapped(kStripAccentsTable, cp, out);
}

}  // namespace forge::unicode_data
