// Where a vocabulary trie node stands within UTF-8 text, as a one-byte code that FillMask uses to
// take a whole subtree at once: at a character boundary, or inside a character with some
// continuation bytes still to come (their allowed ranges follow RFC 3629: no overlongs,
// surrogates or values past U+10FFFF).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace forge::utf8_position {

// Some piece below the node is not clean UTF-8 from there.
inline constexpr uint8_t kNotClean = 0xFF;
// Every piece below the node goes on with whole valid characters, then at most the valid start
// of one more.
inline constexpr uint8_t kBoundary = 0;

// Inside a character with pending (1-3) continuation bytes to come; first_range: the range of
// the next one (0: 80-BF, 1: A0-BF after E0, 2: 80-9F after ED, 3: 90-BF after F0, 4: 80-8F
// after F4). Every piece below completes the character (or stops inside it), then goes on as
// after kBoundary.
inline uint8_t Inside(int first_range, int pending) {
  return static_cast<uint8_t>(first_range * 4 + pending);
}
inline int Pending(uint8_t code) { return code & 3; }
// The byte ranges of the pending continuation bytes: ranges[0 .. Pending(code)).
void ContinuationRanges(uint8_t code, uint8_t ranges[3][2]);

// codes[d] for d in [1, piece.size()]: the code of the node for piece[0, d) as this piece alone
// sees it (a node's code is the one all its pieces agree on, else kNotClean).
void PieceCodes(std::string_view piece, std::vector<uint8_t>* codes);

}  // namespace forge::utf8_position
