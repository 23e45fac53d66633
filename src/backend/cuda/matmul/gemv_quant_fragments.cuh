// The weight side of the quantized GEMV's tensor-core fragments, for host and device: which stored
// bytes a thread reads, how they become packed F16 pairs, and which row element each fragment slot
// holds (the "virtual k" order that the activations are laid out in to match).
//
// Tiles are 256 elements of a row (one super-block, or eight 32-blocks). A tile is 16 MMA steps
// (m16n8k16): step j, thread t = lane % 4 of a row holds virtual k = 16j + 2t + 8p + hh for pair
// p (0: registers a0/a1, 1: a2/a3) and half hh (0: low 16 bits). Pi maps virtual k to the element.
// A pair is a half2 of 1024 + v (the F16 "magic" exponent 2^10 with v in the low mantissa bits), v
// a small unsigned integer, turned into the exact F16 weight integer by one half2 add or FMA.
#pragma once

#include "backend/cuda/matmul/block_decode.cuh"

namespace forge::cuda::gq {

using qd::Ld16;
using qd::Ld32;
using qd::ShiftR;

inline constexpr uint32_t kMagic2 = 0x64006400u;  // half2 {1024, 1024}

// Element orders of a tile. kLegacy: Q4_0..Q8_0 and Q6_K (step j covers elements 16j..16j+15, one
// 32-block per two steps, one Q6_K scale group per step). kQ2K: Q2_K, Q3_K (thread t owns the
// groups of 16 sharing its quant bytes). kQ4K: Q4_K, Q5_K (thread t owns groups 2t and 2t + 1).
enum class Layout { kLegacy, kQ2K, kQ4K };

inline constexpr Layout LayoutOf(GgmlType t) {
  return (t == GgmlType::kQ2_K || t == GgmlType::kQ3_K)   ? Layout::kQ2K
         : (t == GgmlType::kQ4_K || t == GgmlType::kQ5_K) ? Layout::kQ4K
                                                          : Layout::kLegacy;
}

// Virtual k (0..255) -> element of the tile.
template <Layout kL>
FORGE_HD int Pi(int v) {
  const int j = v >> 4, r = v & 15;
  const int t = (r >> 1) & 3, p = r >> 3, hh = r & 1;
  if constexpr (kL == Layout::kLegacy) {
    return 16 * j + 2 * t + p + 8 * hh;
  } else if constexpr (kL == Layout::kQ2K) {
    const int k = j >> 2, u = j & 3;  // bit pair k of the quant bytes, 4-byte word u
    return 16 * (8 * (t >> 1) + 2 * k + (t & 1)) + 4 * u + p + 2 * hh;
  } else {
    const int u = j >> 1, nib = j & 1;  // 4-byte word u of the thread's 32 bytes, nibble nib
    return 64 * t + 32 * nib + 4 * u + p + 2 * hh;
  }
}

// Q2_K/Q3_K: thread t's quant bytes start at QuantOffsetQ2K(t) in qs; bit pair k of them is group
// OwnGroupQ2K(t, k).
FORGE_HD int OwnGroupQ2K(int t, int k) { return 8 * (t >> 1) + 2 * k + (t & 1); }
FORGE_HD int QuantOffsetQ2K(int t) { return 32 * (t >> 1) + 16 * (t & 1); }

// The k-quants' min terms are one more MMA step whose k index is a scale group: slot s (0..15,
// s = 2t + 8r + hh) -> group (of 16 for kQ2K, of 32 for kQ4K), or -1 for an empty slot.
template <Layout kL>
FORGE_HD int MinGroup(int s) {
  const int t = (s >> 1) & 3, r = s >> 3, hh = s & 1;
  if constexpr (kL == Layout::kQ2K) {
    return OwnGroupQ2K(t, 2 * r + hh);
  } else {
    return r == 0 ? 2 * t + hh : -1;
  }
}

// Legacy words: bytes p[2t], p[2t + 1], p[2t + 8], p[2t + 9] (elements 2t, 2t + 1, 2t + 8, 2t + 9
// of a run of 16), the layout of every pair below.
FORGE_HD uint32_t Word(const uint8_t* p, int t) {
  return Ld16(p + 2 * t) | (Ld16(p + 2 * t + 8) << 16);
}

// Q4_0/Q4_1 (and the low 4 bits of Q5_0/Q5_1): w = Word(qs, t); 1024 + q for the elements
// 16s + 2t + p + 8hh of the block.
FORGE_HD uint32_t PairNib(uint32_t w, int s, int p) {
  return ((w >> (4 * s + 8 * p)) & 0x000F000Fu) | kMagic2;
}
// Q5_0/Q5_1: the fifth bits qh (the block's 32-bit qh) rearranged so that pair (s, p) finds its
// two bits at 8s + p and 16 + 8s + p.
FORGE_HD uint32_t Q5HighBits(uint32_t qh, int t) { return qd::BytePerm(qh >> (2 * t), 0, 0x3120); }
FORGE_HD uint32_t PairQ5(uint32_t w, uint32_t z, int s, int p) {
  return PairNib(w, s, p) | (ShiftR(z, 8 * s + p - 4) & 0x00100010u);
}
// Q8_0: w = Word(qs + 16s, t); 1024 + (q + 128) for the elements 16s + 2t + p + 8hh.
FORGE_HD uint32_t PairQ8(uint32_t w, int p) { return ((w >> (8 * p)) & 0x00FF00FFu) ^ 0x64806480u; }

// Q2_K/Q3_K: thread t reads 16 quant bytes qs[QuantOffsetQ2K(t) + 0..15] as four words u; bit
// pair k of them holds elements 4u + p + 2hh of group OwnGroupQ2K(t, k).
// 1024 + 4^k q (the 4^k is folded into the scale).
FORGE_HD uint32_t PairQ2K(uint32_t w, int k, int p) {
  return ((w >> (8 * p)) & (0x00030003u << (2 * k))) | kMagic2;
}
// Q3_K: hm = Ld32(hmask + 16(t % 2) + 4u) >> 4(t / 2) (bit k of each byte: the high bit of bit
// pair k); 1024 + 4^k (low2 + 4 high).
FORGE_HD uint32_t PairQ3K(uint32_t w, uint32_t hm, int k, int p) {
  return PairQ2K(w, k, p) | (ShiftR(hm, 8 * p - k - 2) & (0x00040004u << (2 * k)));
}

// Q4_K/Q5_K: thread t reads qs[32t + 4u .. +3] (u = 0..7): nibble nib is group 2t + nib, elements
// 4u + p + 2hh of it.
FORGE_HD uint32_t PairQ4K(uint32_t w, int nib, int p) {
  return ((w >> (4 * nib + 8 * p)) & 0x000F000Fu) | kMagic2;
}
// Q5_K: hq = Ld32(qh + 4u) >> 2t (bit nib of each byte: the fifth bit).
FORGE_HD uint32_t PairQ5K(uint32_t w, uint32_t hq, int nib, int p) {
  return PairQ4K(w, nib, p) | (ShiftR(hq, 8 * p + nib - 4) & 0x00100010u);
}

// Q6_K: step j = 8h + 2q + s is scale group j; wl = Word(ql + 64h + 32(q % 2) + 16s, t),
// wh = Word(qh + 32h + 16s, t); 1024 + q6 for the elements 16j + 2t + p + 8hh.
FORGE_HD uint32_t PairQ6K(uint32_t wl, uint32_t wh, int q, int p) {
  return ((wl >> (4 * (q >> 1) + 8 * p)) & 0x000F000Fu) |
         (ShiftR(wh, 2 * q + 8 * p - 4) & 0x00300030u) | kMagic2;
}

// F16 bit patterns of small constants (compile time): v * 2^-shift for |v| < 2048.
constexpr uint32_t HalfBits(int v, int shift = 0) {
  if (v == 0) return 0;
  const uint32_t sign = v < 0 ? 0x8000u : 0;
  const int a = v < 0 ? -v : v;
  int e = 0;
  while ((a >> (e + 1)) != 0) ++e;
  const uint32_t mant = (static_cast<uint32_t>(a) << (10 - e)) & 0x3FFu;
  return sign | (static_cast<uint32_t>(e - shift + 15) << 10) | mant;
}
constexpr uint32_t Half2Bits(int v, int shift = 0) { return HalfBits(v, shift) * 0x10001u; }
static_assert(HalfBits(1024) == 0x6400 && HalfBits(-1032) == 0xE408 && HalfBits(1, 2) == 0x3400);

}  // namespace forge::cuda::gq
