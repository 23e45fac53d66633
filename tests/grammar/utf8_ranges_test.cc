// UTF-8 expansion of code point sets: for random sets (ranges with random ends, negations), every
// scalar value's encoding (by an encoder written here) is matched exactly when the value is in
// the set, and the alternatives match no other byte sequence (their sizes add up to the set's).
#include "grammar/utf8_ranges.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/codepoint_set.h"

namespace forge {
namespace {

std::vector<uint8_t> EncodeHere(uint32_t cp) {
  if (cp < 0x80) return {static_cast<uint8_t>(cp)};
  if (cp < 0x800)
    return {static_cast<uint8_t>(0xC0 | (cp >> 6)), static_cast<uint8_t>(0x80 | (cp & 63))};
  if (cp < 0x10000) {
    return {static_cast<uint8_t>(0xE0 | (cp >> 12)), static_cast<uint8_t>(0x80 | ((cp >> 6) & 63)),
            static_cast<uint8_t>(0x80 | (cp & 63))};
  }
  return {static_cast<uint8_t>(0xF0 | (cp >> 18)), static_cast<uint8_t>(0x80 | ((cp >> 12) & 63)),
          static_cast<uint8_t>(0x80 | ((cp >> 6) & 63)), static_cast<uint8_t>(0x80 | (cp & 63))};
}

bool Matched(const std::vector<std::vector<ByteSet>>& alts, const std::vector<uint8_t>& bytes) {
  for (const auto& alt : alts) {
    if (alt.size() != bytes.size()) continue;
    bool all = true;
    for (size_t i = 0; i < bytes.size() && all; ++i) all = alt[i].Has(bytes[i]);
    if (all) return true;
  }
  return false;
}

uint64_t Size(const ByteSet& s) {
  uint64_t n = 0;
  for (uint64_t w : s.words()) n += static_cast<uint64_t>(__builtin_popcountll(w));
  return n;
}

TEST(Utf8RangesTest, RandomSetsMatchExactlyTheirEncodings) {
  std::mt19937 rng(2718);
  // Range ends near the places where encodings change length or lead byte rules.
  const uint32_t kEdges[] = {0x0,     0x7F,    0x80,     0x7FF,    0x800,  0xFFF,   0x1000,
                             0xCFFF,  0xD000,  0xD7FF,   0xE000,   0xFFFF, 0x10000, 0x3FFFF,
                             0x40000, 0xFFFFF, 0x100000, 0x10FFFF, 0x4E2D, 0xE9};
  for (int round = 0; round < 24; ++round) {
    std::vector<CodepointRange> ranges;
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      auto pick = [&]() -> uint32_t {
        const uint32_t e = kEdges[rng() % std::size(kEdges)];
        switch (rng() % 4) {
          case 0:
            return e;
          case 1:
            return e + static_cast<uint32_t>(rng() % 200);
          case 2:
            return e > 100 ? e - static_cast<uint32_t>(rng() % 100) : e;
          default:
            return static_cast<uint32_t>(rng() % 0x110000);
        }
      };
      uint32_t a = pick(), b = pick();
      if (a > b) std::swap(a, b);
      ranges.push_back({a, b});
    }
    std::vector<CodepointRange> set = codepoints::Normalize(ranges);
    if (rng() % 3 == 0) set = codepoints::Complement(set);
    const auto alts = Utf8Alternatives(set);
    uint64_t matched_sequences = 0;
    for (const auto& alt : alts) {
      uint64_t product = 1;
      for (const ByteSet& b : alt) product *= Size(b);
      matched_sequences += product;
    }
    EXPECT_EQ(matched_sequences, codepoints::Count(set)) << "round " << round;
    for (uint32_t cp = 0; cp <= kMaxCodepoint; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const bool in = codepoints::Contains(set, cp);
      ASSERT_EQ(Matched(alts, EncodeHere(cp)), in) << "round " << round << " U+" << std::hex << cp;
    }
  }
  // Nothing else: no overlong forms, surrogates or values past U+10FFFF, whatever the set.
  const auto all = Utf8Alternatives(codepoints::Normalize({{0, kMaxCodepoint}}));
  EXPECT_FALSE(Matched(all, {0xC0, 0x80}));
  EXPECT_FALSE(Matched(all, {0xE0, 0x80, 0x80}));
  EXPECT_FALSE(Matched(all, {0xED, 0xA0, 0x80}));
  EXPECT_FALSE(Matched(all, {0xF0, 0x80, 0x80, 0x80}));
  EXPECT_FALSE(Matched(all, {0xF4, 0x90, 0x80, 0x80}));
  EXPECT_FALSE(Matched(all, {0xF5, 0x80, 0x80, 0x80}));
  EXPECT_TRUE(Matched(all, {0xF4, 0x8F, 0xBF, 0xBF}));
}

TEST(Utf8RangesTest, CodepointSetAlgebra) {
  using codepoints::Complement;
  using codepoints::Intersect;
  using codepoints::Normalize;
  using codepoints::Subtract;
  using codepoints::Union;
  const auto a = Normalize({{'a', 'z'}, {0xD000, 0xE100}, {5, 5}});
  EXPECT_EQ(a,
            (std::vector<CodepointRange>{{5, 5}, {'a', 'z'}, {0xD000, 0xD7FF}, {0xE000, 0xE100}}));
  const auto b = Normalize({{'m', 0x4E2D}});
  EXPECT_EQ(Intersect(a, b), (std::vector<CodepointRange>{{'m', 'z'}}));
  EXPECT_EQ(Subtract(b, a), (std::vector<CodepointRange>{{'z' + 1, 0x4E2D}}));
  EXPECT_EQ(Complement(Complement(a)), a);
  EXPECT_EQ(codepoints::Count(Union(a, Complement(a))), 0x110000u - 0x800u);
  EXPECT_EQ(codepoints::ToGbnfClass(Normalize({{'a', 'c'}, {'-', '-'}})), "[\\x2Da-c]");
  EXPECT_EQ(codepoints::ToGbnfClass(Complement({{'"', '"'}})), "[^\\\"]");
  EXPECT_EQ(codepoints::GbnfLiteral("a\"\\\n\x01\u00e9"), "\"a\\\"\\\\\\n\\x01\u00e9\"");
}

}  // namespace
}  // namespace forge
