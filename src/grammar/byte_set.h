// ByteSet: a set of byte values (256 bits), the terminal of a compiled grammar.
#pragma once

#include <array>
#include <cstdint>

namespace forge {

class ByteSet {
 public:
  bool Has(uint8_t b) const { return (bits_[b >> 6] >> (b & 63)) & 1; }
  void Add(uint8_t b) { bits_[b >> 6] |= uint64_t{1} << (b & 63); }
  void AddRange(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b));
  }
  void AddAll(const ByteSet& other) {
    for (int i = 0; i < 4; ++i) bits_[i] |= other.bits_[i];
  }
  // True when every byte of other is in this set.
  bool Contains(const ByteSet& other) const {
    for (int i = 0; i < 4; ++i) {
      if (other.bits_[i] & ~bits_[i]) return false;
    }
    return true;
  }
  bool Empty() const { return (bits_[0] | bits_[1] | bits_[2] | bits_[3]) == 0; }
  const std::array<uint64_t, 4>& words() const { return bits_; }
  friend bool operator==(const ByteSet&, const ByteSet&) = default;
  friend auto operator<=>(const ByteSet&, const ByteSet&) = default;

 private:
  std::array<uint64_t, 4> bits_{};
};

}  // namespace forge
