// Splits code point ranges until each is a product of per-byte ranges of its UTF-8 encoding
// (the classic construction: a range whose low end does not start a block of 64^i values, or
// whose high end does not end one, is cut there), then merges alternatives that share their
// continuation bytes.
#include "grammar/utf8_ranges.h"

#include <algorithm>
#include <map>
#include <utility>

namespace forge {
namespace {

int EncodedLength(uint32_t cp) {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

void Encode(uint32_t cp, int len, uint8_t* out) {
  static constexpr uint8_t kLead[5] = {0, 0x00, 0xC0, 0xE0, 0xF0};
  for (int i = len - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  out[0] = static_cast<uint8_t>(kLead[len] | cp);
}

// Appends the byte-range products covering [a, b], all of one encoded length.
void SplitSameLength(uint32_t a, uint32_t b, std::vector<std::vector<ByteSet>>* out) {
  std::vector<std::pair<uint32_t, uint32_t>> stack = {{a, b}};
  while (!stack.empty()) {
    auto [lo, hi] = stack.back();
    stack.pop_back();
    const int len = EncodedLength(lo);
    bool split = false;
    for (int i = 1; i < len && !split; ++i) {
      const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
      if ((lo & ~m) == (hi & ~m)) continue;
      if ((lo & m) != 0) {
        stack.push_back({(lo | m) + 1, hi});
        stack.push_back({lo, lo | m});
        split = true;
      } else if ((hi & m) != m) {
        stack.push_back({hi & ~m, hi});
        stack.push_back({lo, (hi & ~m) - 1});
        split = true;
      }
    }
    if (split) continue;
    uint8_t el[4], eh[4];
    Encode(lo, len, el);
    Encode(hi, len, eh);
    std::vector<ByteSet> seq(static_cast<size_t>(len));
    for (int i = 0; i < len; ++i) seq[static_cast<size_t>(i)].AddRange(el[i], eh[i]);
    out->push_back(std::move(seq));
  }
}

}  // namespace

std::vector<std::vector<ByteSet>> Utf8Alternatives(const std::vector<CodepointRange>& set) {
  static constexpr uint32_t kBounds[4][2] = {
      {0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xFFFF}, {0x10000, 0x10FFFF}};
  std::vector<std::vector<ByteSet>> products;
  for (const CodepointRange& r : set) {
    for (const auto& bound : kBounds) {
      const uint32_t lo = std::max(r.lo, bound[0]);
      const uint32_t hi = std::min(r.hi, bound[1]);
      if (lo <= hi) SplitSameLength(lo, hi, &products);
    }
  }
  ByteSet single;
  std::map<std::vector<ByteSet>, ByteSet> by_tail;  // continuation bytes -> lead bytes
  std::vector<std::vector<ByteSet>> tail_order;
  for (const std::vector<ByteSet>& p : products) {
    if (p.size() == 1) {
      single.AddAll(p[0]);
      continue;
    }
    std::vector<ByteSet> tail(p.begin() + 1, p.end());
    auto [it, inserted] = by_tail.emplace(tail, ByteSet());
    if (inserted) tail_order.push_back(tail);
    it->second.AddAll(p[0]);
  }
  std::vector<std::vector<ByteSet>> out;
  if (!single.Empty()) out.push_back({single});
  for (const std::vector<ByteSet>& tail : tail_order) {
    std::vector<ByteSet> alt = {by_tail[tail]};
    alt.insert(alt.end(), tail.begin(), tail.end());
    out.push_back(std::move(alt));
  }
  return out;
}

}  // namespace forge
